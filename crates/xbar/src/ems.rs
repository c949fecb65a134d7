//! One crossbar as a 2-D container with Empty Maximal Spaces (EMS), the representation of
//! Gonçalves & Resende's bin packing that RNC adopts. x runs along the columns (a box's
//! width = its output columns), y along the rows (its height = its input rows).

/// Half-open rectangle [x0, x1) x [y0, y1) in cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl Rect {
    pub fn new(x0: u32, y0: u32, w: u32, h: u32) -> Rect {
        Rect {
            x0,
            y0,
            x1: x0 + w,
            y1: y0 + h,
        }
    }
    pub fn w(&self) -> u32 {
        self.x1 - self.x0
    }
    pub fn h(&self) -> u32 {
        self.y1 - self.y0
    }
    pub fn area(&self) -> u64 {
        self.w() as u64 * self.h() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.x0 >= self.x1 || self.y0 >= self.y1
    }
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    pub fn contains(&self, o: &Rect) -> bool {
        self.x0 <= o.x0 && self.y0 <= o.y0 && o.x1 <= self.x1 && o.y1 <= self.y1
    }
    pub fn fits(&self, w: u32, h: u32) -> bool {
        self.w() >= w && self.h() >= h
    }
}

/// How free space is tracked after a placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmsRule {
    /// The full 2-D difference process: up to four children (left, right, below, above)
    /// per overlapped space, keeping every maximal space.
    All,
    /// RNC's port: only the right and above children; a child is dropped when inscribed in
    /// another space, thinner than `min_dim` or smaller than `min_area` (the smallest
    /// dimension / area among boxes still to pack).
    Rnc { min_dim: u32, min_area: u64 },
}

/// Which distance the DFTRC-2 rule maximises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dftrc {
    /// (W - x - w)^2 + (H - y - h)^2 with each coordinate paired with its own axis.
    Correct,
    /// RNC's 2-D port: (H - x - h)^2 + (W - y - w)^2, the x coordinate paired with the box
    /// height (harmless only for square boxes in square crossbars).
    RncMixedAxes,
}

/// A crossbar's free-space bookkeeping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Container {
    pub cols: u32,
    pub rows: u32,
    pub ems: Vec<Rect>,
}

impl Container {
    pub fn new(rows: u32, cols: u32) -> Container {
        Container {
            cols,
            rows,
            ems: vec![Rect::new(0, 0, cols, rows)],
        }
    }

    /// DFTRC-2: among the spaces where a `w x h` box fits (anchored at the space's min
    /// corner), the one maximising the squared distance of the box's far corner from the
    /// container's far corner. Ties go to the lowest, then leftmost space.
    pub fn choose(&self, w: u32, h: u32, rule: Dftrc) -> Option<usize> {
        let (cw, ch) = (self.cols as i64, self.rows as i64);
        let mut best: Option<(i64, u32, u32, usize)> = None;
        for (i, e) in self.ems.iter().enumerate() {
            if !e.fits(w, h) {
                continue;
            }
            let (x, y, w, h) = (e.x0 as i64, e.y0 as i64, w as i64, h as i64);
            let d = match rule {
                Dftrc::Correct => (cw - x - w).pow(2) + (ch - y - h).pow(2),
                Dftrc::RncMixedAxes => (ch - x - h).pow(2) + (cw - y - w).pow(2),
            };
            let better = match best {
                None => true,
                Some((bd, by, bx, _)) => d > bd || (d == bd && (e.y0, e.x0) < (by, bx)),
            };
            if better {
                best = Some((d, e.y0, e.x0, i));
            }
        }
        best.map(|b| b.3)
    }

    /// Place a `w x h` box at the min corner of space `idx` and update the spaces.
    pub fn place(&mut self, idx: usize, w: u32, h: u32, rule: EmsRule) -> Rect {
        let e = self.ems[idx];
        let b = Rect::new(e.x0, e.y0, w, h);
        debug_assert!(e.contains(&b));
        let mut kept = Vec::with_capacity(self.ems.len() + 4);
        let mut fresh = Vec::new();
        for s in self.ems.drain(..) {
            if !s.overlaps(&b) {
                kept.push(s);
                continue;
            }
            let right = Rect { x0: b.x1, ..s };
            let above = Rect { y0: b.y1, ..s };
            match rule {
                EmsRule::All => {
                    let left = Rect { x1: b.x0, ..s };
                    let below = Rect { y1: b.y0, ..s };
                    fresh.extend(
                        [left, right, below, above]
                            .into_iter()
                            .filter(|r| !r.is_empty()),
                    );
                }
                EmsRule::Rnc { .. } => {
                    fresh.extend([right, above].into_iter().filter(|r| !r.is_empty()))
                }
            }
        }
        // Keep only maximal children: drop one inscribed in a kept space or another child
        // (of two equal children the first survives).
        let mut out = kept;
        let n_kept = out.len();
        for (i, c) in fresh.iter().enumerate() {
            let inscribed = out[..n_kept].iter().any(|k| k.contains(c))
                || fresh
                    .iter()
                    .enumerate()
                    .any(|(j, o)| j != i && o.contains(c) && (o != c || j < i));
            if inscribed {
                continue;
            }
            if let EmsRule::Rnc { min_dim, min_area } = rule
                && (c.w().min(c.h()) < min_dim || c.area() < min_area)
            {
                continue;
            }
            out.push(*c);
        }
        self.ems = out;
        b
    }
}
