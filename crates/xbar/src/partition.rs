//! Layer partition: a layer's matrices become crossbar-sized pieces ("layer boxes").

use crate::arch::{Arch, DepthwiseMapping, Mode};
use crate::layer::Layer;
use serde::{Deserialize, Serialize};

/// One crossbar-sized piece of a layer: `rows x cols` cells busy for `cycles` reads per
/// inference (with one copy of the layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    pub rows: u32,
    pub cols: u32,
    pub cycles: u64,
}

impl Piece {
    pub fn area(&self) -> u64 {
        self.rows as u64 * self.cols as u64
    }
}

/// Settings that change the partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionCfg {
    pub rows: usize,
    pub cols: usize,
    /// Rows and columns one weight occupies (bit slicing / polarity).
    pub row_mult: usize,
    pub col_mult: usize,
    pub sdw: usize,
    pub depthwise: DepthwiseMapping,
    pub mode: Mode,
}

impl PartitionCfg {
    pub fn new(arch: &Arch, mode: Mode, depthwise: DepthwiseMapping, sdw: usize) -> Self {
        let (row_mult, col_mult) = arch.weight_footprint(mode);
        PartitionCfg {
            rows: arch.crossbar.rows,
            cols: arch.crossbar.cols,
            row_mult,
            col_mult,
            sdw: sdw.max(1),
            depthwise,
            mode,
        }
    }
}

impl PartitionCfg {
    /// Physical rows of a piece: whole weights only (a weight's row slices never straddle
    /// two crossbars), at least one weight.
    pub fn array_rows(&self) -> usize {
        (self.rows / self.row_mult).max(1) * self.row_mult
    }

    /// Weight rows (matrix rows) per crossbar.
    pub fn weight_rows(&self) -> usize {
        (self.rows / self.row_mult).max(1)
    }

    /// Weight columns (matrix outputs) per crossbar.
    pub fn weight_cols(&self) -> usize {
        (self.cols / self.col_mult).max(1)
    }
}

/// Group counts of the S_DW parts of a layer with `g` groups.
///
/// pimkit: exactly min(S, g) parts whose sizes differ by at most one (the paper's
/// "C/S_DW" cycles). RNC-compat: parts of floor(g/S) groups (at least 1) plus a remainder
/// part, so C = 16, S = 5 gives 6 parts (reference rnc.md §0 item 4).
pub fn split_groups(g: usize, s: usize, mode: Mode) -> Vec<usize> {
    let s = s.max(1);
    if g == 0 {
        return vec![];
    }
    match mode {
        Mode::Pimkit => {
            let parts = s.min(g);
            (0..parts)
                .map(|i| g / parts + usize::from(i < g % parts))
                .collect()
        }
        Mode::RncCompat => {
            let w = (g / s).max(1);
            let mut v = vec![w; g / w];
            if !g.is_multiple_of(w) {
                v.push(g % w);
            }
            v
        }
    }
}

/// Tile a `rows x cols` matrix into pieces of at most `r x c`; `cycles(c0, c1)` gives the
/// cycles of a piece spanning columns [c0, c1).
fn tile(
    rows: usize,
    cols: usize,
    r: usize,
    c: usize,
    cycles: impl Fn(usize, usize) -> u64,
    out: &mut Vec<Piece>,
) {
    let mut r0 = 0;
    while r0 < rows {
        let h = (rows - r0).min(r);
        let mut c0 = 0;
        while c0 < cols {
            let w = (cols - c0).min(c);
            out.push(Piece {
                rows: h as u32,
                cols: w as u32,
                cycles: cycles(c0, c0 + w),
            });
            c0 += w;
        }
        r0 += h;
    }
}

/// The pieces of one copy of `layer`.
pub fn partition(layer: &Layer, cfg: &PartitionCfg) -> Vec<Piece> {
    let mut out = Vec::new();
    let (rm, cm) = (cfg.row_mult, cfg.col_mult);
    let pos = layer.positions;
    if layer.groups <= 1 {
        for &(r, c) in &layer.mats {
            tile(
                r * rm,
                c * cm,
                cfg.array_rows(),
                cfg.cols,
                |_, _| pos,
                &mut out,
            );
        }
        return out;
    }
    let (gr, gc) = layer.mats[0];
    let (gr, gc) = (gr * rm, gc * cm);
    if gr == 0 || gc == 0 {
        return out;
    }
    match cfg.depthwise {
        DepthwiseMapping::Compact => {
            for n in split_groups(layer.groups, cfg.sdw, cfg.mode) {
                // One group per read: a piece needs one read per group it touches.
                let touched = |c0: usize, c1: usize| ((c1.div_ceil(gc) - c0 / gc) as u64) * pos;
                tile(gr, n * gc, cfg.array_rows(), cfg.cols, touched, &mut out);
            }
        }
        DepthwiseMapping::Blockdiag => {
            let per = (cfg.rows / gr).min(cfg.cols / gc);
            if per == 0 {
                for _ in 0..layer.groups {
                    tile(gr, gc, cfg.array_rows(), cfg.cols, |_, _| pos, &mut out);
                }
            } else {
                let mut left = layer.groups;
                while left > 0 {
                    let n = left.min(per);
                    out.push(Piece {
                        rows: (n * gr) as u32,
                        cols: (n * gc) as u32,
                        cycles: pos,
                    });
                    left -= n;
                }
            }
        }
    }
    out
}
