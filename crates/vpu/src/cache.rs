//! Set-associative write-back, write-allocate cache with true LRU (tags only; the data
//! lives in the simulated memory). Off-chip bytes follow quinn §5.4:
//! (misses + evictions) x line size, where evictions are dirty write-backs.

use crate::arch::CacheParams;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Dirty lines written back to memory.
    pub evictions: u64,
}

impl CacheStats {
    pub fn offchip_bytes(&self, line: usize) -> u64 {
        (self.misses + self.evictions) * line as u64
    }
    pub fn minus(&self, o: &CacheStats) -> CacheStats {
        CacheStats {
            hits: self.hits - o.hits,
            misses: self.misses - o.misses,
            evictions: self.evictions - o.evictions,
        }
    }
}

/// What one line access did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub hit: bool,
    pub wrote_back: bool,
}

#[derive(Clone, Debug)]
pub struct Cache {
    sets: usize,
    ways: usize,
    line_shift: u32,
    /// log2(sets) when the set count is a power of two (set and tag by mask and shift
    /// instead of a 64-bit division per access).
    set_shift: Option<u32>,
    /// Per (set, way): tag + 1 (0 = invalid).
    tags: Vec<u64>,
    stamp: Vec<u64>,
    dirty: Vec<bool>,
    clock: u64,
    /// The line the last access found or inserted, and its (set, way) slot: a repeated
    /// access to it (the next burst row often starts in the line the previous one ended
    /// in) skips the way search. Only a miss replaces a line, and a miss re-points this.
    last_line: u64,
    last_slot: usize,
    pub stats: CacheStats,
}

impl Cache {
    pub fn new(p: &CacheParams) -> Cache {
        let sets = p.size_bytes / p.ways / p.line_bytes;
        Cache {
            sets,
            ways: p.ways,
            line_shift: p.line_bytes.trailing_zeros(),
            set_shift: sets.is_power_of_two().then(|| sets.trailing_zeros()),
            tags: vec![0; sets * p.ways],
            stamp: vec![0; sets * p.ways],
            dirty: vec![false; sets * p.ways],
            clock: 0,
            last_line: u64::MAX,
            last_slot: 0,
            stats: CacheStats::default(),
        }
    }

    pub fn line_bytes(&self) -> usize {
        1 << self.line_shift
    }

    /// Access the line containing byte `addr`.
    pub fn access(&mut self, addr: u64, write: bool) -> Access {
        self.access_line(addr >> self.line_shift, write)
    }

    /// Access line number `line` (address >> log2(line size)).
    pub fn access_line(&mut self, line: u64, write: bool) -> Access {
        self.touch(line, write)
    }

    /// Access lines `first..=last` in order (a contiguous burst row): the same as one
    /// [`Cache::access_line`] per line, without a call per line.
    pub fn access_run(&mut self, first: u64, last: u64, write: bool) {
        for l in first..=last {
            self.touch(l, write);
        }
    }

    /// Access the lines of one burst row: `cols` elements of `es` bytes, `col_stride`
    /// bytes apart, from byte `base`; each line once, in order.
    #[inline(always)]
    pub fn touch_row(
        &mut self,
        base: usize,
        cols: usize,
        col_stride: usize,
        es: usize,
        write: bool,
    ) {
        let line_shift = self.line_shift;
        if col_stride <= 1 << line_shift {
            // Contiguous (every byte's line), or elements at most a line apart, which
            // leave no line between the first and the last element's out: every line
            // of that run, in order, once (what the loop below visits: each element's
            // first byte).
            let tail = if col_stride == es { es - 1 } else { 0 };
            let l0 = (base >> line_shift) as u64;
            let l1 = ((base + (cols - 1) * col_stride + tail) >> line_shift) as u64;
            if l0 == l1 {
                // Most bursts of the conv kernels: one line, without a call.
                self.touch(l0, write);
            } else {
                self.access_run(l0, l1, write);
            }
        } else {
            let mut prev = u64::MAX;
            for c in 0..cols {
                let l = ((base + c * col_stride) >> line_shift) as u64;
                if l != prev {
                    self.access_line(l, write);
                    prev = l;
                }
            }
        }
    }

    #[inline(always)]
    fn touch(&mut self, line: u64, write: bool) -> Access {
        self.clock += 1;
        if line == self.last_line {
            // The hit path below, for the way it found last time.
            let w = self.last_slot;
            self.stamp[w] = self.clock;
            self.dirty[w] |= write;
            self.stats.hits += 1;
            return Access {
                hit: true,
                wrote_back: false,
            };
        }
        let (set, tag) = match self.set_shift {
            Some(k) => ((line & ((1u64 << k) - 1)) as usize, (line >> k) + 1),
            None => (
                (line % self.sets as u64) as usize,
                line / self.sets as u64 + 1,
            ),
        };
        let base = set * self.ways;
        let ways = base..base + self.ways;
        let tags = &mut self.tags[ways.clone()];
        let stamp = &mut self.stamp[ways.clone()];
        let dirty = &mut self.dirty[ways];
        // A tag is in a set at most once (only a miss inserts it) and 0 is never a
        // tag, so a scan without an early exit (which compiles to compares on all ways
        // at once) finds the same way as the first match.
        let hit = match <&[u64; 8]>::try_from(&*tags) {
            // quinn's 8 ways: a fixed-length scan the compiler unrolls.
            Ok(t8) => find_way(t8.as_slice(), tag),
            Err(_) => find_way(tags, tag),
        };
        if let Some(w) = (hit != usize::MAX).then_some(hit) {
            stamp[w] = self.clock;
            dirty[w] |= write;
            self.stats.hits += 1;
            (self.last_line, self.last_slot) = (line, base + w);
            return Access {
                hit: true,
                wrote_back: false,
            };
        }
        self.stats.misses += 1;
        // Victim: an invalid way, else the least recently used (the first of equal
        // stamps, as `min_by_key` picks).
        let w = tags.iter().position(|&t| t == 0).unwrap_or_else(|| {
            let mut w = 0;
            for (i, &s) in stamp.iter().enumerate() {
                if s < stamp[w] {
                    w = i;
                }
            }
            w
        });
        let wrote_back = tags[w] != 0 && dirty[w];
        if wrote_back {
            self.stats.evictions += 1;
        }
        tags[w] = tag;
        stamp[w] = self.clock;
        dirty[w] = write;
        (self.last_line, self.last_slot) = (line, base + w);
        Access {
            hit: false,
            wrote_back,
        }
    }

    /// Write back every dirty line (counted as evictions); lines stay valid and clean.
    pub fn flush(&mut self) -> u64 {
        let mut n = 0;
        for (t, d) in self.tags.iter().zip(self.dirty.iter_mut()) {
            if *t != 0 && *d {
                *d = false;
                n += 1;
            }
        }
        self.stats.evictions += n;
        n
    }

    /// Forget everything (cold cache), keeping the counters.
    pub fn invalidate(&mut self) {
        self.last_line = u64::MAX;
        self.tags.iter_mut().for_each(|t| *t = 0);
        self.dirty.iter_mut().for_each(|d| *d = false);
    }
}

/// The way holding `tag` (the last match; a tag is in a set at most once), or
/// `usize::MAX`.
/// Inlined, so a fixed-size array's scan has a constant length.
#[inline(always)]
fn find_way(tags: &[u64], tag: u64) -> usize {
    let mut hit = usize::MAX;
    for (i, &t) in tags.iter().enumerate() {
        if t == tag {
            hit = i;
        }
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Cache {
        // 4 sets x 8 ways x 64 B = 2 KiB.
        Cache::new(&CacheParams {
            size_bytes: 2048,
            ways: 8,
            line_bytes: 64,
        })
    }

    #[test]
    fn hit_after_miss_same_line() {
        let mut c = small();
        assert!(!c.access(100, false).hit);
        assert!(c.access(64, false).hit);
        assert!(c.access(127, false).hit);
        assert!(!c.access(128, false).hit);
        assert_eq!(
            c.stats,
            CacheStats {
                hits: 2,
                misses: 2,
                evictions: 0
            }
        );
    }

    #[test]
    fn eight_way_lru_in_one_set() {
        let mut c = small();
        // Lines 0,4,8,... map to set 0 (4 sets).
        for i in 0..8u64 {
            c.access_line(i * 4, false);
        }
        // Touch line 0 so line 4 becomes LRU.
        assert!(c.access_line(0, false).hit);
        // A 9th line in the set evicts line 4 (LRU), not line 0.
        assert!(!c.access_line(32, false).hit);
        assert!(c.access_line(0, false).hit);
        assert!(!c.access_line(4, false).hit);
        assert_eq!(c.stats.evictions, 0, "clean victims are not written back");
    }

    #[test]
    fn dirty_victims_are_written_back() {
        let mut c = small();
        for i in 0..8u64 {
            c.access_line(i * 4, true);
        }
        let a = c.access_line(100 * 4, false);
        assert!(!a.hit && a.wrote_back);
        assert_eq!(c.stats.evictions, 1);
        // Other sets are untouched.
        assert!(!c.access_line(1, false).wrote_back);
        assert_eq!(c.flush(), 7);
        assert_eq!(c.stats.offchip_bytes(64), (10 + 8) * 64);
    }

    #[test]
    fn the_last_line_shortcut_changes_nothing() {
        // A pseudo-random mix of repeated, nearby and conflicting lines, reads and
        // writes, with and without the shortcut (forgotten before every access).
        let (mut a, mut b) = (small(), small());
        let mut x = 12345u64;
        for i in 0..20000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let line = if x >> 60 < 6 {
                (x >> 32) % 4
            } else {
                (x >> 32) % 48
            };
            let write = (x >> 20) & 3 == 0;
            if i % 5000 == 4999 {
                assert_eq!(a.flush(), b.flush());
            }
            if i == 12000 {
                a.invalidate();
                b.invalidate();
            }
            b.last_line = u64::MAX;
            assert_eq!(a.access_line(line, write), b.access_line(line, write));
        }
        assert_eq!(a.stats, b.stats);
        assert_eq!((a.tags, a.stamp, a.dirty), (b.tags, b.stamp, b.dirty));
    }

    #[test]
    fn streaming_larger_than_cache_misses_every_line() {
        let mut c = small();
        for pass in 0..2 {
            for l in 0..64u64 {
                c.access_line(l, false);
            }
            assert_eq!(c.stats.misses, 64 * (pass + 1));
        }
        assert_eq!(c.stats.hits, 0);
    }
}
