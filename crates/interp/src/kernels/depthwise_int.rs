//! Integer 2-D depthwise convolution (u8/i8 codes, one input channel per group), on
//! the stride-phase planes of [`super::depthwise`]: per (image, output channel) plane
//! the int32 sums of `(x - x_zp) * (w - w_zp[oc])`, handed to the caller or
//! requantized in place (QLinearConv).
//!
//! Exact: for kernels of up to [`EXACT_F32_TAPS`] taps every product and partial sum
//! is an integer below 2^24, so f32 (fused or not) computes them exactly and the FMA
//! units do the work; larger kernels sum in wrapping int32.
//!
//! Everything per plane runs in one `target_feature` trampoline and in vectorizable
//! passes: the codes are widened to `x - x_zp` as they fill the phase planes (row
//! copies for stride 1, de-interleaving for stride 2), and the requantization reads the
//! f32 sums where the tap loop left them.

use super::depthwise::{BLOCK, Geom, Phases, fill_map, plane, plane_blocks, plane_wide};
use super::ewise::{has_fma, simd};
use super::requant::{requant_row, requant_row_map};
use super::{SendPtr, threads};
use rayon::prelude::*;
use std::cell::RefCell;

/// Taps up to which f32 sums of 8-bit products are exact: every product is an integer
/// of magnitude <= 383^2 and every partial sum stays below 2^24.
pub(crate) const EXACT_F32_TAPS: usize = (1 << 24) / (383 * 383);

#[derive(Default)]
struct Bufs<T> {
    phases: Vec<T>,
    wide: Vec<T>,
    w: Vec<T>,
}

#[derive(Default)]
struct Scratch {
    f: Bufs<f32>,
    i: Bufs<i32>,
    acc: Vec<i32>,
    /// Requantized output rows at the phase planes' width.
    wide_q: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

#[inline(always)]
fn val(b: u8, signed: bool) -> i32 {
    if signed { b as i8 as i32 } else { b as i32 }
}

/// Where the sums of a plane go.
pub(crate) enum Post<'a, P> {
    /// Handed to a callback (plane index, int32 sums).
    Sums(P),
    /// `requant_row(sums, bias[oc], scale[oc], zp, bounds)` into `out[plane]`.
    Requant {
        out: SendPtr<u8>,
        bias: &'a [i32],
        scale: &'a [f32],
        zp: i32,
        bounds: (f32, f32),
    },
}

struct Work<'a, P> {
    x: (&'a [u8], bool),
    x_zp: i32,
    w: (&'a [u8], bool),
    w_zp: &'a [i32],
    g: &'a Geom,
    p: Phases,
    post: Post<'a, P>,
}

impl<P: Fn(usize, &[i32]) + Sync> Work<'_, P> {
    #[inline(always)]
    fn run<const FMA: bool>(&self, i: usize, s: &mut Scratch) {
        let g = self.g;
        let (n, oc) = (i / g.m, i % g.m);
        let ic = oc / g.mg;
        let xs = &self.x.0[(n * g.cin + ic) * g.in_vol..][..g.in_vol];
        s.acc.resize(g.out_vol, 0);
        if g.k_vol > EXACT_F32_TAPS {
            let b = &mut s.i;
            self.load(oc, xs, b, |v| v);
            plane::<i32, FMA>(g, &self.p, &b.phases, &b.w, None, &mut b.wide, &mut s.acc);
            match &self.post {
                Post::Sums(f) => f(i, &s.acc),
                &Post::Requant {
                    bias,
                    scale,
                    zp,
                    bounds,
                    ..
                } => self.write_plane(i, &s.acc, g.out_sp[1], |a, o| {
                    requant_row(a, bias[oc], scale[oc], zp, bounds, o)
                }),
            }
            return;
        }
        let b = &mut s.f;
        self.load(oc, xs, b, |v| v as f32);
        // SAFETY (of the conversion): each sum is an exact integer below 2^24 in
        // magnitude (EXACT_F32_TAPS).
        let exact = |v: f32| unsafe { v.to_int_unchecked::<i32>() };
        let (ow, cols) = (g.out_sp[1], self.p.cols);
        match &self.post {
            Post::Sums(f) => {
                plane_wide::<f32, FMA>(g, &self.p, &b.phases, &b.w, &mut b.wide);
                for (a, w) in s.acc.chunks_exact_mut(ow).zip(b.wide.chunks_exact(cols)) {
                    for (a, &v) in a.iter_mut().zip(&w[..ow]) {
                        *a = exact(v);
                    }
                }
                f(i, &s.acc)
            }
            &Post::Requant {
                bias,
                scale,
                zp,
                bounds,
                ..
            } => {
                // Each block of sums is requantized while in registers, into output
                // rows `cols` wide; the first `ow` bytes of each row are then the plane.
                let n = g.out_sp[0] * cols;
                // Not cleared: plane_blocks writes every block.
                s.wide_q.resize(n.div_ceil(BLOCK) * BLOCK, 0);
                let (bias, scale) = (bias[oc], scale[oc]);
                plane_blocks::<f32, FMA, u8>(
                    g,
                    &self.p,
                    &b.phases,
                    &b.w,
                    &mut s.wide_q,
                    |acc, ob| requant_row_map(acc, exact, bias, scale, zp, bounds, ob),
                );
                self.write_plane(i, &s.wide_q, cols, |q, o| o.copy_from_slice(q));
            }
        }
    }

    /// Channel `oc`'s weights `w - w_zp` into `b.w` and its input codes `xs` into the
    /// phase planes as `x - x_zp` (converted as they are placed: no widened copy), each
    /// value converted to the plane's element type by `to`.
    #[inline(always)]
    fn load<T: Copy + Default>(
        &self,
        oc: usize,
        xs: &[u8],
        b: &mut Bufs<T>,
        to: impl Fn(i32) -> T + Copy,
    ) {
        let (g, wz, xz) = (self.g, self.w_zp[oc], self.x_zp);
        let wsig = self.w.1;
        b.w.clear();
        for &v in &self.w.0[oc * g.k_vol..(oc + 1) * g.k_vol] {
            b.w.push(to(val(v, wsig).wrapping_sub(wz)));
        }
        // The sign test stays out of the loop: one fill per code type.
        if self.x.1 {
            fill_map(g, &self.p, &mut b.phases, xs, |v| {
                to((v as i8 as i32).wrapping_sub(xz))
            });
        } else {
            fill_map(g, &self.p, &mut b.phases, xs, |v| {
                to((v as i32).wrapping_sub(xz))
            });
        }
    }

    /// Write plane `i`'s output rows: `row_out(first ow elements of a row of rows,
    /// output row)`, the rows `stride` apart; only for [`Post::Requant`].
    #[inline(always)]
    fn write_plane<T: Copy>(
        &self,
        i: usize,
        rows: &[T],
        stride: usize,
        row_out: impl Fn(&[T], &mut [u8]),
    ) {
        let Post::Requant { out, .. } = &self.post else {
            return;
        };
        let (ov, ow) = (self.g.out_vol, self.g.out_sp[1]);
        // SAFETY: plane i is out[i*ov..(i+1)*ov], written by this task only (the caller
        // sized the buffer to N * M * ov).
        let o = unsafe { std::slice::from_raw_parts_mut(out.get().add(i * ov), ov) };
        for (orow, srow) in o.chunks_exact_mut(ow).zip(rows.chunks(stride)) {
            row_out(&srow[..ow], orow);
        }
    }
}

/// Run every plane (in parallel when the pool has threads), each in the host's vector
/// trampoline.
fn for_planes<P: Fn(usize, &[i32]) + Sync>(w: &Work<P>) {
    let count = w.g.n * w.g.m;
    let fma = has_fma();
    let body = |i: usize| {
        SCRATCH.with(|s| {
            let s = &mut s.borrow_mut();
            if fma {
                simd(
                    #[inline(always)]
                    || w.run::<true>(i, s),
                )
            } else {
                simd(
                    #[inline(always)]
                    || w.run::<false>(i, s),
                )
            }
        })
    };
    if threads() == 1 || count < 2 {
        (0..count).for_each(body);
    } else {
        (0..count).into_par_iter().for_each(body);
    }
}

/// Integer depthwise convolution of u8/i8 bytes (`(data, signed)`): per (image, output
/// channel) plane the int32 sums of `(x - x_zp) * (w - w_zp[oc])`, handed to
/// `post(plane index, sums)`.
pub(crate) fn depthwise_int<P: Fn(usize, &[i32]) + Sync>(
    x: (&[u8], bool),
    x_zp: i32,
    w: (&[u8], bool),
    w_zp: &[i32],
    g: &Geom,
    post: P,
) {
    for_planes(&Work {
        x,
        x_zp,
        w,
        w_zp,
        g,
        p: Phases::new(g),
        post: Post::Sums(post),
    });
}

/// Per-channel requantization of a depthwise QLinearConv (see [`depthwise_q`]).
pub(crate) struct Requant<'a> {
    pub bias: &'a [i32],
    pub scale: &'a [f32],
    pub zp: i32,
    pub bounds: (f32, f32),
}

/// [`depthwise_int`] with the QLinearConv requantization fused: plane i of `out`
/// (`[N, M, oh, ow]` bytes) is `requant_row(sums, bias[oc], scale[oc], zp, bounds)`.
pub(crate) fn depthwise_q(
    x: (&[u8], bool),
    x_zp: i32,
    w: (&[u8], bool),
    w_zp: &[i32],
    g: &Geom,
    r: &Requant,
    out: &mut [u8],
) {
    assert!(
        out.len() >= g.n * g.m * g.out_vol && r.bias.len() >= g.m && r.scale.len() >= g.m,
        "depthwise_q: output or parameters too small"
    );
    let post: Post<fn(usize, &[i32])> = Post::Requant {
        out: SendPtr(out.as_mut_ptr()),
        bias: r.bias,
        scale: r.scale,
        zp: r.zp,
        bounds: r.bounds,
    };
    for_planes(&Work {
        x,
        x_zp,
        w,
        w_zp,
        g,
        p: Phases::new(g),
        post,
    });
}
