//! The B operand of a float 2-D convolution (1-D is 2-D with height 1), packed straight
//! from the NCHW input into the GEMM's column panels: row k is (input channel, ky, kx),
//! column j is output position (oy, ox). No im2col matrix is written; each k-block of
//! panels is filled right before the micro-kernels read it (while it is in cache).

use super::fgemm::PackB;
use super::im2col::Conv2d;

/// Per row k: where its taps read.
#[derive(Clone, Copy)]
struct Tap {
    /// Offset of the channel plane in x.
    plane: usize,
    /// Input row of output row 0 (`ky * dh - ph`).
    y0: isize,
    /// Input column of output column 0 (`kx * dw - pw`).
    x0: isize,
    /// Output columns whose input column is inside the row: `lo..hi`.
    lo: usize,
    hi: usize,
}

/// One (image, group) of a 2-D convolution input as a [`PackB`] source.
pub(crate) struct ConvCols<'a> {
    x: &'a [f32],
    taps: Vec<Tap>,
    ih: usize,
    iw: usize,
    ow: usize,
    sh: usize,
    sw: usize,
    n: usize,
}

impl<'a> ConvCols<'a> {
    /// `x`: the `c.channels` input planes of one (image, group).
    pub(crate) fn new(x: &'a [f32], c: &Conv2d) -> ConvCols<'a> {
        let [ih, iw] = c.input;
        let [oh, ow] = c.out;
        let [kh, kw] = c.kernel;
        let [sh, sw] = c.strides;
        let mut taps = Vec::with_capacity(c.channels * kh * kw);
        for ch in 0..c.channels {
            for ky in 0..kh {
                for kx in 0..kw {
                    let y0 = (ky * c.dilations[0]) as isize - c.pad_begin[0] as isize;
                    let x0 = (kx * c.dilations[1]) as isize - c.pad_begin[1] as isize;
                    // 0 <= ox * sw + x0 < iw
                    let lo = if x0 >= 0 {
                        0
                    } else {
                        (-x0 as usize).div_ceil(sw)
                    };
                    let hi = if iw as isize - x0 <= 0 {
                        0
                    } else {
                        ((iw as isize - x0) as usize).div_ceil(sw).min(ow)
                    };
                    taps.push(Tap {
                        plane: ch * ih * iw,
                        y0,
                        x0,
                        lo: lo.min(hi),
                        hi,
                    });
                }
            }
        }
        ConvCols {
            x,
            taps,
            ih,
            iw,
            ow,
            sh,
            sw,
            n: oh * ow,
        }
    }
}

impl PackB for ConvCols<'_> {
    fn pack(&self, k0: usize, kc: usize, j0: usize, nc: usize, nr: usize, dst: &mut [f32]) {
        // Pieces of each panel that lie on one output row: (oy, ox0, lane, len).
        let mut pieces: Vec<(usize, usize, usize, usize)> = Vec::new();
        for q in 0..nc.div_ceil(nr) {
            let jq = j0 + q * nr;
            let end = (jq + nr).min(self.n).min(j0 + nc);
            pieces.clear();
            let mut j = jq;
            while j < end {
                let (oy, ox) = (j / self.ow, j % self.ow);
                let len = (self.ow - ox).min(end - j);
                pieces.push((oy, ox, j - jq, len));
                j += len;
            }
            let panel = &mut dst[q * kc * nr..][..kc * nr];
            for (t, row) in self.taps[k0..k0 + kc]
                .iter()
                .zip(panel.chunks_exact_mut(nr))
            {
                row[end - jq..].fill(0.0);
                for &(oy, ox0, lane, len) in &pieces {
                    let d = &mut row[lane..lane + len];
                    let iy = (oy * self.sh) as isize + t.y0;
                    if iy < 0 || iy >= self.ih as isize {
                        d.fill(0.0);
                        continue;
                    }
                    // Valid output columns of this piece: ox0.max(lo)..(ox0 + len).min(hi).
                    let (a, b) = (ox0.max(t.lo), (ox0 + len).min(t.hi));
                    if a >= b {
                        d.fill(0.0);
                        continue;
                    }
                    d[..a - ox0].fill(0.0);
                    d[b - ox0..].fill(0.0);
                    let src0 = t.plane as isize
                        + iy * self.iw as isize
                        + a as isize * self.sw as isize
                        + t.x0;
                    let src = &self.x[src0 as usize..];
                    let run = &mut d[a - ox0..b - ox0];
                    if self.sw == 1 {
                        run.copy_from_slice(&src[..run.len()]);
                    } else {
                        for (v, &s) in run.iter_mut().zip(src.iter().step_by(self.sw)) {
                            *v = s;
                        }
                    }
                }
            }
        }
    }
}
