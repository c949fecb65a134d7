//! First-fit range allocator (shared memory words and general registers).

#[derive(Clone, Debug)]
pub struct RangeAlloc {
    /// Free ranges (start, len), sorted by start, non-adjacent.
    free: Vec<(u32, u32)>,
    pub capacity: u32,
    pub high_water: u32,
}

impl RangeAlloc {
    pub fn new(start: u32, capacity: u32) -> Self {
        RangeAlloc {
            free: vec![(start, capacity)],
            capacity: start + capacity,
            high_water: start,
        }
    }
    pub fn alloc(&mut self, len: u32) -> Option<u32> {
        let len = len.max(1);
        let i = self.free.iter().position(|&(_, l)| l >= len)?;
        let (s, l) = self.free[i];
        if l == len {
            self.free.remove(i);
        } else {
            self.free[i] = (s + len, l - len);
        }
        self.high_water = self.high_water.max(s + len);
        Some(s)
    }
    pub fn free(&mut self, start: u32, len: u32) {
        let len = len.max(1);
        let i = self.free.partition_point(|&(s, _)| s < start);
        self.free.insert(i, (start, len));
        // Merge with neighbours.
        if i + 1 < self.free.len() && self.free[i].0 + self.free[i].1 == self.free[i + 1].0 {
            self.free[i].1 += self.free[i + 1].1;
            self.free.remove(i + 1);
        }
        if i > 0 && self.free[i - 1].0 + self.free[i - 1].1 == self.free[i].0 {
            self.free[i - 1].1 += self.free[i].1;
            self.free.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn first_fit_and_merge() {
        let mut a = RangeAlloc::new(10, 100);
        let x = a.alloc(30).unwrap();
        let y = a.alloc(30).unwrap();
        let z = a.alloc(40).unwrap();
        assert_eq!((x, y, z), (10, 40, 70));
        assert!(a.alloc(1).is_none());
        a.free(y, 30);
        a.free(x, 30);
        assert_eq!(a.alloc(60), Some(10));
        a.free(10, 60);
        a.free(70, 40);
        assert_eq!(a.alloc(100), Some(10));
    }
}
