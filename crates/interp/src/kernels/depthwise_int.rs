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
//! passes: the codes are widened once into a contiguous plane, the phase planes are
//! filled by row copies (stride 1) or de-interleaving (stride 2), and the
//! requantization reads the f32 sums directly.

use super::depthwise::{Geom, Phases, fill, plane};
use super::ewise::{has_fma, simd};
use super::requant::requant_row;
use super::{SendPtr, threads};
use rayon::prelude::*;
use std::cell::RefCell;

/// Taps up to which f32 sums of 8-bit products are exact: every product is an integer
/// of magnitude <= 383^2 and every partial sum stays below 2^24.
pub(crate) const EXACT_F32_TAPS: usize = (1 << 24) / (383 * 383);

#[derive(Default)]
struct Bufs<T> {
    /// The input plane as `x - x_zp`.
    x: Vec<T>,
    phases: Vec<T>,
    wide: Vec<T>,
    out: Vec<T>,
    w: Vec<T>,
}

#[derive(Default)]
struct Scratch {
    f: Bufs<f32>,
    i: Bufs<i32>,
    acc: Vec<i32>,
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
        let (wz, xz, xsig, wsig) = (self.w_zp[oc], self.x_zp, self.x.1, self.w.1);
        let wb = &self.w.0[oc * g.k_vol..(oc + 1) * g.k_vol];
        s.acc.resize(g.out_vol, 0);
        if g.k_vol <= EXACT_F32_TAPS {
            let b = &mut s.f;
            b.w.clear();
            for &v in wb {
                b.w.push(val(v, wsig).wrapping_sub(wz) as f32);
            }
            b.x.resize(g.in_vol, 0.0);
            for (d, &v) in b.x.iter_mut().zip(xs) {
                *d = val(v, xsig).wrapping_sub(xz) as f32;
            }
            fill(g, &self.p, &mut b.phases, &b.x);
            b.out.resize(g.out_vol, 0.0);
            plane::<f32, FMA>(g, &self.p, &b.phases, &b.w, None, &mut b.wide, &mut b.out);
            for (a, &v) in s.acc.iter_mut().zip(&b.out) {
                // SAFETY: v is an exact integer below 2^24 in magnitude.
                *a = unsafe { v.to_int_unchecked::<i32>() };
            }
        } else {
            let b = &mut s.i;
            b.w.clear();
            for &v in wb {
                b.w.push(val(v, wsig).wrapping_sub(wz));
            }
            b.x.resize(g.in_vol, 0);
            for (d, &v) in b.x.iter_mut().zip(xs) {
                *d = val(v, xsig).wrapping_sub(xz);
            }
            fill(g, &self.p, &mut b.phases, &b.x);
            plane::<i32, FMA>(g, &self.p, &b.phases, &b.w, None, &mut b.wide, &mut s.acc);
        }
        match &self.post {
            Post::Sums(f) => f(i, &s.acc),
            Post::Requant {
                out,
                bias,
                scale,
                zp,
                bounds,
            } => {
                // SAFETY: plane i is out[i*ov..(i+1)*ov], written by this task only (the
                // caller sized the buffer to N * M * ov).
                let o = unsafe {
                    std::slice::from_raw_parts_mut(out.get().add(i * g.out_vol), g.out_vol)
                };
                requant_row(&s.acc, bias[oc], scale[oc], *zp, *bounds, o);
            }
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
