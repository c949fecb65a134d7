//! 2-D max and average pooling over a padded copy of each plane, row by row, so the
//! inner loop over output columns vectorizes. Semantics are those of `ops::pool`'s
//! general path: max starts from the type's lowest value and skips padding (padding is
//! filled with that value; a window with no tap inside the input gives f32::MIN for
//! floats and 0 for integers), average sums the taps inside the input in window order and divides by the taps
//! inside the input or, with `count_include_pad`, inside the padded input.

use super::interleave::split_pairs;
use super::threads;
use rayon::prelude::*;

/// Geometry of a 2-D pooling window (over every plane of the input).
pub(crate) struct Pool2d {
    pub input: [usize; 2],
    pub out: [usize; 2],
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub pad_begin: [usize; 2],
    pub pad_end: [usize; 2],
}

impl Pool2d {
    /// Rows and columns of the padded plane that the windows reach (columns: also
    /// whole stride groups, so rows are read in chunks of the stride).
    fn extent(&self, i: usize) -> usize {
        let k = (self.kernel[i] - 1) * self.dilations[i];
        let need = (self.out[i] - 1) * self.strides[i] + k + 1;
        if i == 1 {
            need.max(self.out[i] * self.strides[i] + k)
        } else {
            need
        }
    }

    /// Per output position along axis i: (taps inside the input, taps inside the
    /// padded input).
    fn counts(&self, i: usize) -> Vec<(usize, usize)> {
        (0..self.out[i])
            .map(|o| {
                let mut inside = 0;
                let mut padded = 0;
                for k in 0..self.kernel[i] {
                    let c = (o * self.strides[i] + k * self.dilations[i]) as isize
                        - self.pad_begin[i] as isize;
                    inside += (c >= 0 && (c as usize) < self.input[i]) as usize;
                    padded += (c < (self.input[i] + self.pad_end[i]) as isize) as usize;
                }
                (inside, padded)
            })
            .collect()
    }
}

/// Copy plane `x` into `buf` (extent rows x cols), `pad` outside the input.
fn padded<T: Copy>(g: &Pool2d, x: &[T], pad: T, buf: &mut Vec<T>) -> (usize, usize) {
    let (rows, cols) = (g.extent(0), g.extent(1));
    let [ih, iw] = g.input;
    let [ph, pw] = g.pad_begin;
    buf.clear();
    buf.resize(rows * cols, pad);
    if pw < cols {
        let len = iw.min(cols - pw);
        for y in 0..rows {
            if let Some(iy) = y.checked_sub(ph).filter(|&v| v < ih) {
                buf[y * cols + pw..][..len].copy_from_slice(&x[iy * iw..][..len]);
            }
        }
    }
    (rows, cols)
}

/// Run `f(plane, output plane)` over all planes, in parallel when worthwhile.
fn planes<T: Send>(g: &Pool2d, out: &mut [T], f: impl Fn(usize, &mut [T]) + Sync) {
    let ov = g.out[0] * g.out[1];
    if threads() > 1 && out.len() >= 1 << 14 {
        out.par_chunks_mut(ov)
            .enumerate()
            .for_each(|(p, o)| f(p, o));
    } else {
        out.chunks_mut(ov).enumerate().for_each(|(p, o)| f(p, o));
    }
}

/// `o[i] = f(o[i], x[i * s])` with iterators, so strides 1 and 2 vectorize.
#[inline(always)]
fn strided<T: Copy>(o: &mut [T], x: &[T], s: usize, f: &impl Fn(T, T) -> T) {
    let n = o.len();
    match s {
        1 => o.iter_mut().zip(&x[..n]).for_each(|(o, &x)| *o = f(*o, x)),
        2 => o
            .iter_mut()
            .zip(x[..2 * n].chunks_exact(2))
            .for_each(|(o, x)| *o = f(*o, x[0])),
        _ => o
            .iter_mut()
            .zip(x.iter().step_by(s))
            .for_each(|(o, &x)| *o = f(*o, x)),
    }
}

/// The f32 max-pooling step: the larger of the running maximum `acc` and the tap `x`;
/// a NaN tap is skipped and of equal values (-0 and +0) the earlier stays. `acc` starts
/// at f32::MIN and so is never NaN, which makes this `f32::max(acc, x)` as x86 computes
/// it (`maxps(x, acc)` after a NaN check of acc), in one instruction per vector.
#[inline(always)]
pub(crate) fn max_f32(acc: f32, x: f32) -> f32 {
    if x > acc { x } else { acc }
}

/// Max pooling; `lowest` is the starting value (f32::MIN, or the integer type's MIN),
/// `max` the combination ([`max_f32`] skips NaN), `empty` the result of a window without
/// a tap inside the input (f32::MIN for floats, 0 for integers, as the general path).
pub(crate) fn max2d<T: Copy + Send + Sync>(
    x: &[T],
    g: &Pool2d,
    (lowest, empty): (T, T),
    max: impl Fn(T, T) -> T + Sync,
    out: &mut [T],
) {
    let (cy, cx) = (g.counts(0), g.counts(1));
    let [ow, iv] = [g.out[1], g.input[0] * g.input[1]];
    planes(g, out, |p, o| {
        let mut buf = Vec::new();
        let (_, cols) = padded(g, &x[p * iv..(p + 1) * iv], lowest, &mut buf);
        // The window loop compiled for the host's vector instructions (byte maxima
        // with stride 2 de-interleave far faster with AVX2 / AVX-512 than SSE2).
        super::ewise::simd(
            #[inline(always)]
            || {
                for (oy, orow) in o.chunks_mut(ow).enumerate() {
                    orow.fill(lowest);
                    for ky in 0..g.kernel[0] {
                        let y = oy * g.strides[0] + ky * g.dilations[0];
                        for kx in 0..g.kernel[1] {
                            let row = &buf[y * cols + kx * g.dilations[1]..][..ow * g.strides[1]];
                            strided(orow, row, g.strides[1], &max);
                        }
                    }
                    if cy[oy].0 == 0 {
                        orow.fill(empty);
                    } else {
                        for (v, c) in orow.iter_mut().zip(&cx) {
                            if c.0 == 0 {
                                *v = empty;
                            }
                        }
                    }
                }
            },
        )
    });
}

/// Output columns per register block of [`max2d_f32`] (two AVX-512 / four AVX2 vectors:
/// independent max chains).
const MAXW: usize = 32;

/// Copy plane `x` into `buf` for [`max2d_f32`]: `extent(0)` rows, each split into the
/// column stride's `s` phases (phase p holds padded columns p, p + s, p + 2s, ...) of
/// `pc` columns, the last MAXW of them padding, so every tap of a block of MAXW outputs
/// is one contiguous, in-bounds run. `pad` outside the input; returns (row length, pc).
#[inline(always)]
fn phased(g: &Pool2d, x: &[f32], pad: f32, buf: &mut Vec<f32>) -> (usize, usize) {
    let (rows, cols) = (g.extent(0), g.extent(1));
    let s = g.strides[1];
    let pc = cols.div_ceil(s) + MAXW;
    let [ih, iw] = g.input;
    let [ph, pw] = g.pad_begin;
    buf.clear();
    buf.resize(rows * s * pc + cols, pad);
    let len = if pw < cols { iw.min(cols - pw) } else { 0 };
    // The padded row, then its phases (scratch row at the end of buf).
    let (planes, row) = buf.split_at_mut(rows * s * pc);
    for y in 0..rows {
        let Some(iy) = y.checked_sub(ph).filter(|&v| v < ih) else {
            continue;
        };
        let (src, dst) = (&x[iy * iw..][..len], &mut planes[y * s * pc..][..s * pc]);
        if s == 1 {
            dst[pw..pw + len].copy_from_slice(src);
            continue;
        }
        row[pw..pw + len].copy_from_slice(src);
        if s == 2 {
            // A de-interleave (the zip of three iterators was a scalar loop: a
            // quarter of the pool).
            let (ev, od) = dst.split_at_mut(pc);
            split_pairs(row.as_chunks::<2>().0, ev, od);
        } else {
            for (p, phase) in dst.chunks_exact_mut(pc).enumerate() {
                for (d, &v) in phase.iter_mut().zip(row[p..].iter().step_by(s)) {
                    *d = v;
                }
            }
        }
    }
    (s * pc, pc)
}

/// f32 max pooling with the semantics of [`max2d`] (`max_f32` over the taps in (ky, kx)
/// order from f32::MIN, f32::MIN for a window without a tap inside the input), so the
/// same bits, but MAXW outputs at a time kept in registers over all taps, every tap a
/// contiguous load from the stride-phase copy of the plane ([`max2d`] read and wrote
/// the output row in memory once per tap: a masked store per tap and vector).
pub(crate) fn max2d_f32(x: &[f32], g: &Pool2d, out: &mut [f32]) {
    let (cy, cx) = (g.counts(0), g.counts(1));
    let [ow, iv] = [g.out[1], g.input[0] * g.input[1]];
    let (s, d) = (g.strides[1], g.dilations[1]);
    planes(g, out, |p, o| {
        let mut buf = Vec::new();
        // One output row in whole blocks: each block's maxima are stored whole (a
        // partial store of the register block made the compiler keep the 32 maxima as
        // scalars, repacked into vectors at every tap).
        let mut wide = vec![f32::MIN; ow.next_multiple_of(MAXW)];
        super::ewise::simd(
            #[inline(always)]
            || {
                let (len, pc) = phased(g, &x[p * iv..(p + 1) * iv], f32::MIN, &mut buf);
                // Where tap kx of output column 0 lies in a row.
                let offs: Vec<usize> = (0..g.kernel[1])
                    .map(|kx| kx * d % s * pc + kx * d / s)
                    .collect();
                for (oy, orow) in o.chunks_mut(ow).enumerate() {
                    for (b, ob) in wide.chunks_exact_mut(MAXW).enumerate() {
                        let j0 = b * MAXW;
                        let mut acc = [f32::MIN; MAXW];
                        for ky in 0..g.kernel[0] {
                            let y = oy * g.strides[0] + ky * g.dilations[0];
                            let row = &buf[y * len..][..len];
                            for &off in &offs {
                                // In bounds: phased() pads every row by MAXW.
                                let r = &row[off + j0..off + j0 + MAXW];
                                for l in 0..MAXW {
                                    acc[l] = max_f32(acc[l], r[l]);
                                }
                            }
                        }
                        ob.copy_from_slice(&acc);
                    }
                    orow.copy_from_slice(&wide[..ow]);
                    if cy[oy].0 == 0 {
                        orow.fill(f32::MIN);
                    } else {
                        for (v, c) in orow.iter_mut().zip(&cx) {
                            if c.0 == 0 {
                                *v = f32::MIN;
                            }
                        }
                    }
                }
            },
        )
    });
}

/// Average pooling of f32 planes.
pub(crate) fn avg2d(x: &[f32], g: &Pool2d, count_include_pad: bool, out: &mut [f32]) {
    let (cy, cx) = (g.counts(0), g.counts(1));
    let [ow, iv] = [g.out[1], g.input[0] * g.input[1]];
    let pick = |c: &(usize, usize)| if count_include_pad { c.1 } else { c.0 };
    planes(g, out, |p, o| {
        let mut buf = Vec::new();
        let (_, cols) = padded(g, &x[p * iv..(p + 1) * iv], 0.0, &mut buf);
        for (oy, orow) in o.chunks_mut(ow).enumerate() {
            orow.fill(0.0);
            for ky in 0..g.kernel[0] {
                let y = oy * g.strides[0] + ky * g.dilations[0];
                for kx in 0..g.kernel[1] {
                    let row = &buf[y * cols + kx * g.dilations[1]..][..ow * g.strides[1]];
                    strided(orow, row, g.strides[1], &|a: f32, b: f32| a + b);
                }
            }
            for (v, c) in orow.iter_mut().zip(&cx) {
                let cnt = pick(&cy[oy]) * pick(c);
                *v = if cnt == 0 { 0.0 } else { *v / cnt as f32 };
            }
        }
    });
}
