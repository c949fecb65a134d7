//! The B operand of a float 2-D convolution (1-D is 2-D with height 1), packed straight
//! from the NCHW input into the GEMM's column panels: row k is (input channel, ky, kx),
//! column j is output position (oy, ox). No im2col matrix is written; each k-block of
//! panels is filled right before the micro-kernels read it (while it is in cache).

use super::fgemm::PackB;
use super::im2col::Conv2d;
use super::interleave::split_pairs;
use std::borrow::Cow;

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
///
/// With a horizontal stride s > 1 every input row is first split into its s phases
/// (`phase p, element i` = column `i * s + p`, phases one after another in the row), so
/// the taps of a run of output columns read a contiguous run: column `ox * s + x0` is
/// element `ox + floor(x0 / s)` of phase `x0 mod s`.
pub(crate) struct ConvCols<'a> {
    x: Cow<'a, [f32]>,
    /// Start of each phase within a row (`[0]` when the stride is 1).
    phase_at: Vec<usize>,
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
        // Phases at or past the row's width hold no column (a stride beyond the input,
        // 2^31 in a hostile file, must not size a table); a valid tap's phase is < iw.
        let phases = sw.min(iw.max(2));
        let mut phase_at = vec![0usize; phases];
        for p in 1..phases {
            phase_at[p] = phase_at[p - 1] + (iw - (p - 1).min(iw)).div_ceil(sw);
        }
        let x = if sw == 1 || iw == 0 {
            Cow::Borrowed(x)
        } else {
            let mut v = vec![0f32; x.len()];
            // Compiled for the host's vector instructions: a stride-2 de-interleave is
            // far faster with AVX2 / AVX-512 shuffles than with SSE2's.
            super::ewise::simd(
                #[inline(always)]
                || split_phases(x, iw, sw, &phase_at, &mut v),
            );
            Cow::Owned(v)
        };
        ConvCols {
            x,
            phase_at,
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

/// Every `iw`-wide row of `x` split into its `sw` column phases (phase p, starting at
/// `phase_at[p]`, holds columns p, p + sw, ...), into the same place in `v`.
#[inline(always)]
fn split_phases(x: &[f32], iw: usize, sw: usize, phase_at: &[usize], v: &mut [f32]) {
    for (src, dst) in x.chunks_exact(iw).zip(v.chunks_exact_mut(iw)) {
        if sw == 2 {
            // A de-interleave (the strided iterator below is a scalar loop); an odd
            // width's last column is phase 0's last element.
            let (even, odd) = dst.split_at_mut(phase_at[1]);
            let (pairs, last) = src.as_chunks::<2>();
            split_pairs(pairs, even, odd);
            if let [l] = last {
                even[pairs.len()] = *l;
            }
            continue;
        }
        for (p, &at) in phase_at.iter().enumerate() {
            for (d, &s) in dst[at..].iter_mut().zip(src.iter().skip(p).step_by(sw)) {
                *d = s;
            }
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
                zero(&mut row[end - jq..]);
                for &(oy, ox0, lane, len) in &pieces {
                    let d = &mut row[lane..lane + len];
                    let iy = (oy * self.sh) as isize + t.y0;
                    // Valid output columns of this piece: ox0.max(lo)..(ox0 + len).min(hi).
                    let (a, b) = (ox0.max(t.lo), (ox0 + len).min(t.hi));
                    if iy < 0 || iy >= self.ih as isize || a >= b {
                        zero(d);
                        continue;
                    }
                    zero(&mut d[..a - ox0]);
                    zero(&mut d[b - ox0..]);
                    // Input column a * sw + x0: in phase x0 mod sw, element a + x0 div sw.
                    let sw = self.sw as isize;
                    let col = self.phase_at[t.x0.rem_euclid(sw) as usize] as isize
                        + a as isize
                        + t.x0.div_euclid(sw);
                    let src0 = t.plane as isize + iy * self.iw as isize + col;
                    let run = &mut d[a - ox0..b - ox0];
                    copy_short(run, &self.x[src0 as usize..][..run.len()]);
                }
            }
        }
    }
}

/// `d = s` for the short runs of one panel row (at most NR floats) in fixed-size moves:
/// `copy_from_slice` of a variable length is a `memmove` call, whose overhead on runs
/// of 8-32 floats was 6-9 % of a ResNet18 / SqueezeNet run.
#[inline(always)]
fn copy_short(d: &mut [f32], s: &[f32]) {
    let n = d.len();
    let s = &s[..n];
    if n >= 8 {
        let mut i = 0;
        while i + 8 <= n {
            d[i..i + 8].copy_from_slice(&s[i..i + 8]);
            i += 8;
        }
        if i < n {
            // The last 8, overlapping what is already copied (same values).
            d[n - 8..].copy_from_slice(&s[n - 8..]);
        }
        return;
    }
    let mut i = 0;
    for w in [4, 2, 1] {
        if n - i >= w {
            d[i..i + w].copy_from_slice(&s[i..i + w]);
            i += w;
        }
    }
}

/// `d.fill(0.0)`, without a `memset` call for the usual empty or short ranges.
#[inline(always)]
fn zero(d: &mut [f32]) {
    const Z: [f32; 8] = [0.0; 8];
    if d.len() > 32 {
        d.fill(0.0);
        return;
    }
    let n = d.len();
    copy_short(d, &[Z, Z, Z, Z].as_flattened()[..n]);
}
