//! Vectorized f32 elementwise kernels: a unary map and a broadcasting binary zip, each
//! monomorphized per operation and run in a `target_feature` trampoline, so the loops
//! compile to the host's vector instructions (with FMA where the formula has one, as
//! the MLAS logistic does). The per-element formulas are those of `ops::elementwise`.

use super::vmath::{erf_f32, exp_f32, tanh_f32};
use super::{Isa, isa};
use crate::ops::elementwise::logistic;
use pimkit_ir::{BinaryOp, UnaryOp};

/// Run `f` compiled with the host's vector instructions. Callers mark the closure
/// `#[inline(always)]` (and everything it calls must inline too: a function that is
/// not inlined keeps the baseline target features).
#[inline(always)]
pub(crate) fn simd<R>(f: impl FnOnce() -> R) -> R {
    match isa() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512Vnni => {
            // SAFETY: AVX-512 F/BW/VL, AVX2 and FMA are available (the ISA was detected).
            unsafe { with_avx512(f) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::AvxVnni => {
            // SAFETY: AVX2 and FMA are available (the ISA was detected).
            unsafe { with_avx2(f) }
        }
        _ => f(),
    }
}

/// True when [`simd`] runs with fused multiply-add instructions.
pub(crate) fn has_fma() -> bool {
    matches!(isa(), Isa::Avx512Vnni | Isa::Avx2 | Isa::AvxVnni)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
unsafe fn with_avx512<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn with_avx2<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// `f` over `x` (an explicit loop: `collect` would be a separate, non-inlined function
/// compiled without the trampoline's target features).
#[inline(always)]
fn map(x: &[f32], f: impl Fn(f32) -> f32) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    for (o, &v) in out.iter_mut().zip(x) {
        *o = f(v);
    }
    out
}

/// f32 results of the unary ops that have a vectorized form (None: use the generic
/// path). Each formula equals `ops::elementwise`'s, except that exp, tanh and erf are
/// the f64 forms of `kernels::vmath` (within 1 ulp of the library functions).
pub(crate) fn unary(u: UnaryOp, x: &[f32]) -> Option<Vec<f32>> {
    use UnaryOp as U;
    // Each arm is its own monomorphized loop.
    Some(match u {
        U::Relu => simd(
            #[inline(always)]
            || {
                map(
                    x,
                    #[inline(always)]
                    |v| v.max(0.0),
                )
            },
        ),
        U::Sigmoid if logistic_fma() => simd(
            #[inline(always)]
            || map(x, logistic::<true>),
        ),
        U::Sigmoid => simd(
            #[inline(always)]
            || map(x, logistic::<false>),
        ),
        U::Tanh => simd(
            #[inline(always)]
            || map(x, tanh_f32),
        ),
        U::Exp => simd(
            #[inline(always)]
            || map(x, exp_f32),
        ),
        U::Erf => simd(
            #[inline(always)]
            || map(x, erf_f32),
        ),
        U::Neg => simd(
            #[inline(always)]
            || {
                map(
                    x,
                    #[inline(always)]
                    |v| -v,
                )
            },
        ),
        U::Abs => simd(
            #[inline(always)]
            || map(x, f32::abs),
        ),
        U::Sqrt => simd(
            #[inline(always)]
            || map(x, f32::sqrt),
        ),
        U::Reciprocal => simd(
            #[inline(always)]
            || {
                map(
                    x,
                    #[inline(always)]
                    |v| 1.0 / v,
                )
            },
        ),
        U::HardSigmoid { alpha, beta } => simd(
            #[inline(always)]
            || {
                map(
                    x,
                    #[inline(always)]
                    |v| (alpha * v + beta).clamp(0.0, 1.0),
                )
            },
        ),
        U::HardSwish => simd(
            #[inline(always)]
            || {
                map(
                    x,
                    #[inline(always)]
                    |v| v * (v / 6.0 + 0.5).clamp(0.0, 1.0),
                )
            },
        ),
        U::LeakyRelu { alpha } => simd(
            #[inline(always)]
            || {
                map(
                    x,
                    #[inline(always)]
                    |v| if v >= 0.0 { v } else { alpha * v },
                )
            },
        ),
        U::Gelu { tanh: false } => simd(
            #[inline(always)]
            || {
                map(
                    x,
                    #[inline(always)]
                    |v| 0.5 * v * (1.0 + erf_f32(v * std::f32::consts::FRAC_1_SQRT_2)),
                )
            },
        ),
        U::Gelu { tanh: true } => simd(
            #[inline(always)]
            || {
                const C: f32 = 0.797_884_6;
                map(
                    x,
                    #[inline(always)]
                    |v| 0.5 * v * (1.0 + tanh_f32(C * (v + 0.044_715 * v * v * v))),
                )
            },
        ),
        _ => return None,
    })
}

/// Whether the MLAS logistic of the selected onnxruntime kernels fuses its
/// multiply-adds (the `FMA` argument of [`logistic`]).
pub(crate) fn logistic_fma() -> bool {
    crate::ort_kernels().logistic_fma()
}

/// [`logistic`] over `x` in place, in the vector trampoline (the RNN gates).
pub(crate) fn logistic_in_place(x: &mut [f32]) {
    fn run<const FMA: bool>(x: &mut [f32]) {
        simd(
            #[inline(always)]
            || {
                for v in x.iter_mut() {
                    *v = logistic::<FMA>(*v);
                }
            },
        )
    }
    if logistic_fma() {
        run::<true>(x)
    } else {
        run::<false>(x)
    }
}

/// `tanh_f32` over `x` in place, in the vector trampoline (the RNN gates).
pub(crate) fn tanh_in_place(x: &mut [f32]) {
    simd(
        #[inline(always)]
        || {
            for v in x.iter_mut() {
                *v = tanh_f32(*v);
            }
        },
    )
}

/// `Clip` on f32 (NaN stays NaN).
pub(crate) fn clip(x: &[f32], lo: f32, hi: f32) -> Vec<f32> {
    simd(
        #[inline(always)]
        || {
            map(
                x,
                #[inline(always)]
                |p| if p.is_nan() { p } else { p.max(lo).min(hi) },
            )
        },
    )
}

/// [`clip`] in place.
pub(crate) fn clip_in_place(x: &mut [f32], lo: f32, hi: f32) {
    simd(
        #[inline(always)]
        || super::act::clip_row(x, lo, hi),
    )
}

/// Relu in place, as `unary`'s Relu (`max(x, 0)`: NaN becomes 0, as f32::max does).
pub(crate) fn relu_in_place(x: &mut [f32]) {
    simd(
        #[inline(always)]
        || super::act::relu_row(x),
    )
}

/// Rows of a broadcast: for the output in row-major order, runs of `len` elements
/// where each operand is either contiguous (`step` 1) or one repeated element (0).
struct Rows {
    /// Outer dims (extent, stride of a, stride of b), outermost first.
    outer: Vec<(usize, usize, usize)>,
    len: usize,
    step: (usize, usize),
}

/// Coalesce the broadcast of shapes `a`, `b` to `out` into rows.
fn rows(a: &[usize], b: &[usize], out: &[usize]) -> Rows {
    let r = out.len();
    let dim = |s: &[usize], i: usize| {
        if i + s.len() >= r {
            s[i + s.len() - r]
        } else {
            1
        }
    };
    // (extent, a varies, b varies), dims of extent 1 dropped, equal kinds merged.
    let mut dims: Vec<(usize, bool, bool)> = Vec::new();
    for i in 0..r {
        if out[i] == 1 {
            continue;
        }
        let k = (out[i], dim(a, i) != 1, dim(b, i) != 1);
        match dims.last_mut() {
            Some(l) if (l.1, l.2) == (k.1, k.2) => l.0 *= k.0,
            _ => dims.push(k),
        }
    }
    let (len, step) = match dims.pop() {
        Some((n, va, vb)) => (n, (va as usize, vb as usize)),
        None => (1, (0, 0)),
    };
    // Strides of the outer dims in each operand (0 where broadcast).
    let mut outer = Vec::with_capacity(dims.len());
    let (mut sa, mut sb) = (
        if step.0 == 1 { len } else { 1 },
        if step.1 == 1 { len } else { 1 },
    );
    for &(n, va, vb) in dims.iter().rev() {
        outer.push((n, if va { sa } else { 0 }, if vb { sb } else { 0 }));
        if va {
            sa *= n;
        }
        if vb {
            sb *= n;
        }
    }
    outer.reverse();
    Rows { outer, len, step }
}

#[inline(always)]
fn zip_rows(x: &[f32], y: &[f32], r: &Rows, out: &mut [f32], f: impl Fn(f32, f32) -> f32) {
    let n = r.len;
    let mut idx = vec![0usize; r.outer.len()];
    let (mut oa, mut ob) = (0usize, 0usize);
    for orow in out.chunks_exact_mut(n) {
        match r.step {
            (1, 1) => {
                for ((o, &p), &q) in orow.iter_mut().zip(&x[oa..oa + n]).zip(&y[ob..ob + n]) {
                    *o = f(p, q);
                }
            }
            (1, 0) => {
                let q = y[ob];
                for (o, &p) in orow.iter_mut().zip(&x[oa..oa + n]) {
                    *o = f(p, q);
                }
            }
            (0, 1) => {
                let p = x[oa];
                for (o, &q) in orow.iter_mut().zip(&y[ob..ob + n]) {
                    *o = f(p, q);
                }
            }
            _ => orow.fill(f(x[oa], y[ob])),
        }
        // Advance the outer odometer.
        for d in (0..idx.len()).rev() {
            let (ext, sa, sb) = r.outer[d];
            idx[d] += 1;
            oa += sa;
            ob += sb;
            if idx[d] < ext {
                break;
            }
            idx[d] = 0;
            oa -= sa * ext;
            ob -= sb * ext;
        }
    }
}

/// f32 Add/Sub/Mul/Div/Max/Min with numpy broadcasting (None: other ops).
pub(crate) fn binary(
    op: BinaryOp,
    x: &[f32],
    xs: &[usize],
    y: &[f32],
    ys: &[usize],
    out: &[usize],
) -> Option<Vec<f32>> {
    let n: usize = out.iter().product();
    let mut o = vec![0f32; n];
    if n == 0 {
        return Some(o);
    }
    let r = rows(xs, ys, out);
    let nan_max = |p: f32, q: f32| {
        if p.is_nan() || q.is_nan() {
            f32::NAN
        } else {
            p.max(q)
        }
    };
    let nan_min = |p: f32, q: f32| {
        if p.is_nan() || q.is_nan() {
            f32::NAN
        } else {
            p.min(q)
        }
    };
    match op {
        BinaryOp::Add => simd(
            #[inline(always)]
            || {
                zip_rows(
                    x,
                    y,
                    &r,
                    &mut o,
                    #[inline(always)]
                    |p, q| p + q,
                )
            },
        ),
        BinaryOp::Sub => simd(
            #[inline(always)]
            || {
                zip_rows(
                    x,
                    y,
                    &r,
                    &mut o,
                    #[inline(always)]
                    |p, q| p - q,
                )
            },
        ),
        BinaryOp::Mul => simd(
            #[inline(always)]
            || {
                zip_rows(
                    x,
                    y,
                    &r,
                    &mut o,
                    #[inline(always)]
                    |p, q| p * q,
                )
            },
        ),
        BinaryOp::Div => simd(
            #[inline(always)]
            || {
                zip_rows(
                    x,
                    y,
                    &r,
                    &mut o,
                    #[inline(always)]
                    |p, q| p / q,
                )
            },
        ),
        BinaryOp::Max => simd(
            #[inline(always)]
            || zip_rows(x, y, &r, &mut o, nan_max),
        ),
        BinaryOp::Min => simd(
            #[inline(always)]
            || zip_rows(x, y, &r, &mut o, nan_min),
        ),
        _ => return None,
    }
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elem::broadcast_map;

    #[test]
    fn rows_cover_every_broadcast_like_numpy() {
        let shapes: [(&[usize], &[usize]); 8] = [
            (&[2, 3, 4], &[4]),
            (&[2, 3, 4], &[3, 1]),
            (&[2, 1, 4], &[1, 3, 1]),
            (&[1], &[5, 2]),
            (&[5, 2], &[5, 2]),
            (&[2, 3, 1, 5], &[1, 3, 4, 1]),
            (&[], &[3]),
            (&[4, 1, 1], &[1, 1]),
        ];
        for (a, b) in shapes {
            let out = pimkit_ir::broadcast_shapes(a, b).unwrap();
            let (na, nb): (usize, usize) = (a.iter().product(), b.iter().product());
            let x: Vec<f32> = (0..na).map(|i| i as f32).collect();
            let y: Vec<f32> = (0..nb).map(|i| 1000.0 * i as f32).collect();
            let got = binary(BinaryOp::Add, &x, a, &y, b, &out).unwrap();
            let (ia, ib) = (broadcast_map(a, &out), broadcast_map(b, &out));
            let want: Vec<f32> = ia.iter().zip(&ib).map(|(&i, &j)| x[i] + y[j]).collect();
            assert_eq!(got, want, "{a:?} + {b:?}");
        }
    }
}
