//! 2-D depthwise convolution (one input channel per group, any channel multiplier,
//! strides, dilations, pads), f32; the integer kernel (`depthwise_int.rs`) shares the
//! phase planes, their [`fill`] and [`plane`].
//!
//! Each input plane is copied, zero padded, into `sh x sw` stride-phase planes
//! (`phase (py, px)`, element `(r, c)` = padded input `(r * sh + py, c * sw + px)`),
//! so that every kernel tap is a stride-1 shift of one phase plane. With output rows
//! laid out at the phase planes' width `C`, one tap over the whole output is then a
//! single contiguous run `out[j] += w * phase[off + j]`, `j < oh * C`, which
//! vectorizes fully; the `C - ow` extra columns per row are dropped at the end.
//!
//! Padding reads 0: the integer path stores `x - x_zp`, so padded taps contribute
//! nothing, exactly as a zero-point pad would. Every output sums its taps in (ky, kx)
//! order with separate multiplies and adds, like the direct kernel this replaces (the
//! integer path runs on exact f32 integers and may fuse them); the f32 bias is added
//! once, after the last tap. The vector lanes are different outputs, so no output's
//! order depends on the block, the ISA or the thread count.

use super::act::Act;
use super::interleave::split_pairs_map;
use super::{Isa, SendPtr, isa};
use rayon::prelude::*;
use std::cell::RefCell;

/// Geometry of a 2-D depthwise convolution (one input channel per group).
pub(crate) struct Geom {
    pub n: usize,
    pub cin: usize,
    /// Output channels, and output channels per input channel.
    pub m: usize,
    pub mg: usize,
    pub in_sp: [usize; 2],
    pub out_sp: [usize; 2],
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub pad_begin: [usize; 2],
    pub in_vol: usize,
    pub out_vol: usize,
    pub k_vol: usize,
}

/// Element of the phase planes (also its accumulator type) and its multiply-add;
/// `FMA` fuses it (only where the instruction exists: in software it would be slow).
pub(crate) trait DwElem: Copy + Default + Send + Sync + 'static {
    fn mac<const FMA: bool>(acc: Self, w: Self, x: Self) -> Self;
    fn add(a: Self, b: Self) -> Self;
}

impl DwElem for f32 {
    #[inline(always)]
    fn mac<const FMA: bool>(acc: f32, w: f32, x: f32) -> f32 {
        if FMA { w.mul_add(x, acc) } else { acc + w * x }
    }
    #[inline(always)]
    fn add(a: f32, b: f32) -> f32 {
        a + b
    }
}

impl DwElem for i32 {
    #[inline(always)]
    fn mac<const FMA: bool>(acc: i32, w: i32, x: i32) -> i32 {
        acc.wrapping_add(w.wrapping_mul(x))
    }
    #[inline(always)]
    fn add(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
}

/// Shape of the phase planes.
pub(crate) struct Phases {
    /// Rows and columns of each phase plane.
    pub rows: usize,
    pub cols: usize,
}

impl Phases {
    pub(crate) fn new(g: &Geom) -> Phases {
        // Largest whole-step shift of a tap along each axis.
        let shift = |i: usize| (g.kernel[i] - 1) * g.dilations[i] / g.strides[i];
        Phases {
            // One spare row: the last run reads up to `shift(1)` past the output rows.
            rows: g.out_sp[0] + shift(0) + 1,
            cols: g.out_sp[1] + shift(1),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows * self.cols
    }
}

/// Fill the phase planes from a contiguous input plane `src` (`[ih][iw]`), 0 outside
/// (both kernels').
#[inline(always)]
pub(crate) fn fill<T: Copy + Default>(g: &Geom, p: &Phases, buf: &mut Vec<T>, src: &[T]) {
    fill_map(g, p, buf, src, |v| v)
}

/// [`fill`] from a plane of another type, each element converted by `f` as it is
/// placed (the integer kernel's codes become `x - x_zp` in the same pass).
#[inline(always)]
pub(crate) fn fill_map<S: Copy, T: Copy + Default>(
    g: &Geom,
    p: &Phases,
    buf: &mut Vec<T>,
    src: &[S],
    f: impl Fn(S) -> T + Copy,
) {
    let (ih, iw) = (g.in_sp[0], g.in_sp[1]);
    let (ph, pw) = (g.pad_begin[0], g.pad_begin[1]);
    let (sh, sw) = (g.strides[0], g.strides[1]);
    buf.clear();
    buf.resize(sh * sw * p.len() + BLOCK, T::default());
    for py in 0..sh {
        for r in 0..p.rows {
            let Some(iy) = (r * sh + py).checked_sub(ph).filter(|&v| v < ih) else {
                continue;
            };
            let row = &src[iy * iw..(iy + 1) * iw];
            if sw == 2 {
                fill_row_s2(p, pw, row, &mut buf[py * 2 * p.len() + r * p.cols..], f);
                continue;
            }
            for px in 0..sw {
                // Columns c with 0 <= c * sw + px - pw < iw.
                let lo = pw.saturating_sub(px).div_ceil(sw);
                let hi = (iw + pw).saturating_sub(px).div_ceil(sw).min(p.cols);
                if lo >= hi {
                    continue;
                }
                let base = (py * sw + px) * p.len() + r * p.cols;
                let dst = &mut buf[base + lo..base + hi];
                let x0 = lo * sw + px - pw;
                let len = hi - lo;
                if sw == 1 {
                    for (d, &v) in dst.iter_mut().zip(&row[x0..x0 + len]) {
                        *d = f(v);
                    }
                } else {
                    // Elements x0, x0 + sw, ...: whole groups of sw, then the last one.
                    let (head, last) = dst.split_at_mut(len - 1);
                    let groups = &row[x0..x0 + (len - 1) * sw];
                    for (d, grp) in head.iter_mut().zip(groups.chunks_exact(sw)) {
                        *d = f(grp[0]);
                    }
                    last[0] = f(row[x0 + (len - 1) * sw]);
                }
            }
        }
    }
}

/// One input row into its two column phases (stride 2): input column x goes to phase
/// `(x + pw) % 2`, column `(x + pw) / 2` (when inside the plane). `dst` starts at the
/// row in phase 0; phase 1 is `p.len()` further. Pairs of input columns are split in
/// one pass, so the loop vectorizes as a de-interleave.
#[inline(always)]
fn fill_row_s2<S: Copy, T: Copy>(
    p: &Phases,
    pw: usize,
    row: &[S],
    dst: &mut [T],
    f: impl Fn(S) -> T + Copy,
) {
    let at = |x: usize| ((x + pw) % 2 * p.len(), (x + pw) / 2);
    let (pe, ce) = at(0);
    let (_, co) = at(1);
    // Pairs (2j, 2j + 1) whose both targets are inside the plane.
    let jmax = (row.len() / 2)
        .min(p.cols.saturating_sub(ce))
        .min(p.cols.saturating_sub(co));
    let (pairs, _) = row.as_chunks::<2>();
    {
        // The two phases' runs are disjoint (different planes).
        let (first, second) = dst.split_at_mut(p.len());
        let (even, odd) = if pe == 0 {
            (&mut first[ce..ce + jmax], &mut second[co..co + jmax])
        } else {
            (&mut second[ce..ce + jmax], &mut first[co..co + jmax])
        };
        split_pairs_map(&pairs[..jmax], even, odd, f);
    }
    for (x, &v) in row.iter().enumerate().skip(2 * jmax) {
        let (off, c) = at(x);
        if c < p.cols {
            dst[off + c] = f(v);
        }
    }
}

/// Per-thread buffers of one element type.
#[derive(Default)]
struct Bufs<T> {
    phases: Vec<T>,
    /// Output rows at the phase planes' width.
    wide: Vec<T>,
}

#[derive(Default)]
struct Scratch {
    f: Bufs<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Outputs per register block of [`plane`]: 64 lanes are four AVX-512 (eight AVX2)
/// independent accumulator chains per tap, enough to hide the add latency (32 left
/// AVX-512 with two chains, latency bound).
pub(crate) const BLOCK: usize = 64;

/// One output plane from its phase planes, with output rows laid out `p.cols` wide (in
/// `wide`): for each block of [`BLOCK`] outputs every tap is added in registers (one
/// load per tap), then the valid columns are copied to `out`, adding `bias` (when
/// given) after the last tap.
#[inline(always)]
pub(crate) fn plane<T: DwElem, const FMA: bool>(
    g: &Geom,
    p: &Phases,
    buf: &[T],
    w: &[T],
    bias: Option<T>,
    wide: &mut Vec<T>,
    out: &mut [T],
) {
    let ow = g.out_sp[1];
    plane_wide::<T, FMA>(g, p, buf, w, wide);
    for (orow, wrow) in out.chunks_exact_mut(ow).zip(wide.chunks_exact(p.cols)) {
        match bias {
            Some(bv) => orow
                .iter_mut()
                .zip(&wrow[..ow])
                .for_each(|(o, &v)| *o = T::add(v, bv)),
            None => orow.copy_from_slice(&wrow[..ow]),
        }
    }
}

/// The sums of [`plane`] with output rows `p.cols` wide (in `wide`; the first `ow` of
/// each row are the outputs), for callers that consume them in place.
#[inline(always)]
pub(crate) fn plane_wide<T: DwElem, const FMA: bool>(
    g: &Geom,
    p: &Phases,
    buf: &[T],
    w: &[T],
    wide: &mut Vec<T>,
) {
    let n = g.out_sp[0] * p.cols;
    // Not cleared: plane_blocks writes every block.
    wide.resize(n.div_ceil(BLOCK) * BLOCK, T::default());
    plane_blocks::<T, FMA, T>(g, p, buf, w, wide, |acc, ob| ob.copy_from_slice(acc));
}

/// The tap loop of [`plane`]: for each block of [`BLOCK`] outputs (output rows `p.cols`
/// wide) the sums in registers, handed to `emit(sums, block of dst)`; `dst` holds
/// `ceil(oh * p.cols / BLOCK) * BLOCK` elements.
#[inline(always)]
pub(crate) fn plane_blocks<T: DwElem, const FMA: bool, D>(
    g: &Geom,
    p: &Phases,
    buf: &[T],
    w: &[T],
    dst: &mut [D],
    emit: impl Fn(&[T; BLOCK], &mut [D]),
) {
    let (kh, kw) = (g.kernel[0], g.kernel[1]);
    let (sh, sw) = (g.strides[0], g.strides[1]);
    // (start of the tap's run in buf, weight), in (ky, kx) order.
    let mut taps = Vec::with_capacity(kh * kw);
    for ky in 0..kh {
        let (py, dy) = ((ky * g.dilations[0]) % sh, (ky * g.dilations[0]) / sh);
        for kx in 0..kw {
            let (px, dx) = ((kx * g.dilations[1]) % sw, (kx * g.dilations[1]) / sw);
            taps.push(((py * sw + px) * p.len() + dy * p.cols + dx, w[ky * kw + kx]));
        }
    }
    for (b, ob) in dst.chunks_exact_mut(BLOCK).enumerate() {
        let j0 = b * BLOCK;
        let mut acc = [T::default(); BLOCK];
        for &(start, wv) in &taps {
            let x = &buf[start + j0..start + j0 + BLOCK];
            for l in 0..BLOCK {
                acc[l] = T::mac::<FMA>(acc[l], wv, x[l]);
            }
        }
        emit(&acc, ob);
    }
}

/// The work on one (image, output channel) plane.
trait PlaneWork: Sync {
    fn run<const FMA: bool>(&self, i: usize, s: &mut Scratch);
}

/// Run `w` on every plane, in parallel, compiled with the host's vector instructions
/// (the work is inlined into a `target_feature` trampoline).
fn for_planes<W: PlaneWork>(count: usize, w: &W) {
    // The thread-local is fetched here: `LocalKey::with` is not inlined, so work inside
    // it would lose the trampolines' target features.
    let body = |i: usize| {
        SCRATCH.with(|s| {
            let s = &mut s.borrow_mut();
            match isa() {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512Vnni => {
                    // SAFETY: AVX-512 F/BW and FMA are available (the ISA was detected).
                    unsafe { call_avx512(w, i, s) }
                }
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2 | Isa::AvxVnni => {
                    // SAFETY: AVX2 and FMA are available (the ISA was detected).
                    unsafe { call_avx2(w, i, s) }
                }
                _ => w.run::<false>(i, s),
            }
        })
    };
    if super::threads() == 1 || count < 2 {
        (0..count).for_each(body);
    } else {
        (0..count).into_par_iter().for_each(body);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
unsafe fn call_avx512<W: PlaneWork>(w: &W, i: usize, s: &mut Scratch) {
    w.run::<true>(i, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn call_avx2<W: PlaneWork>(w: &W, i: usize, s: &mut Scratch) {
    w.run::<true>(i, s)
}

struct F32Work<'a> {
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    g: &'a Geom,
    p: Phases,
    out: SendPtr<f32>,
    act: Option<Act>,
}

impl PlaneWork for F32Work<'_> {
    #[inline(always)]
    fn run<const FMA: bool>(&self, i: usize, s: &mut Scratch) {
        let g = self.g;
        let (n, oc) = (i / g.m, i % g.m);
        let ic = oc / g.mg;
        let xs = &self.x[(n * g.cin + ic) * g.in_vol..][..g.in_vol];
        // SAFETY: plane i is out[i*ov..(i+1)*ov], disjoint between planes, in bounds
        // (checked by depthwise_f32).
        let o =
            unsafe { std::slice::from_raw_parts_mut(self.out.get().add(i * g.out_vol), g.out_vol) };
        let b = &mut s.f;
        fill(g, &self.p, &mut b.phases, xs);
        let w = &self.w[oc * g.k_vol..(oc + 1) * g.k_vol];
        // Unfused, taps in (ky, kx) order: the same bits as the direct kernel this
        // replaced (the zoo calibrates its quantized models on these results).
        let bias = self.bias.map(|bs| bs[oc]);
        plane::<f32, false>(g, &self.p, &b.phases, w, bias, &mut b.wide, o);
        if let Some(act) = self.act {
            // The plane was just written (tens of KB, still in cache); inside this
            // trampoline, like the in-place Clip / Relu it replaces.
            act.apply(o);
        }
    }
}

/// f32 depthwise convolution of `x` ([N, C, H, W]) with `w` ([M, 1, kh, kw]) into
/// the `out_len` floats at `out` ([N, M, oh, ow]; every one is written, so they need not
/// be initialized), plus `bias[M]` (added to each output's sum of taps), then `act`.
///
/// # Safety
/// `out` is valid for reads and writes of `out_len` floats, and nothing else accesses
/// them during the call.
pub(crate) unsafe fn depthwise_f32(
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    g: &Geom,
    (out, out_len): (*mut f32, usize),
    act: Option<Act>,
) {
    assert!(
        out_len >= g.n * g.m * g.out_vol && bias.is_none_or(|b| b.len() >= g.m),
        "depthwise: output or bias too small"
    );
    let work = F32Work {
        x,
        w,
        bias,
        g,
        p: Phases::new(g),
        out: SendPtr(out),
        act,
    };
    for_planes(g.n * g.m, &work);
}
