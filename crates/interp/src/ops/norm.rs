//! BatchNormalization (inference form), LayerNormalization, Softmax and LogSoftmax.

use crate::elem::{broadcast_map, float_tensor, floats};
use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
use crate::kernels::ewise::simd;
use crate::kernels::vmath::exp_f32;
use pimkit_ir::Tensor;

/// y = (x - mean) / sqrt(var + eps) * scale + bias, per channel (axis 1).
pub(crate) fn batch_norm(c: &Ctx, eps: f32) -> OpResult<Tensor> {
    let x = c.input(0)?;
    if !x.dtype().is_float() {
        return unsupported(format!("BatchNormalization on {} tensors", x.dtype()));
    }
    let xf = floats(x);
    let [scale, bias, mean, var] = [1, 2, 3, 4].map(|i| c.input(i).map(floats));
    let (scale, bias, mean, var) = (scale?, bias?, mean?, var?);
    let ch = x.shape[1];
    let inner: usize = x.shape[2..].iter().product();
    // Folded per-channel multiplier and offset, as ORT precomputes them.
    let mul: Vec<f32> = (0..ch).map(|i| scale[i] / (var[i] + eps).sqrt()).collect();
    let add: Vec<f32> = (0..ch).map(|i| bias[i] - mean[i] * mul[i]).collect();
    let out: Vec<f32> = xf
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let chn = (i / inner.max(1)) % ch;
            v * mul[chn] + add[chn]
        })
        .collect();
    Ok(float_tensor(x.dtype(), x.shape.clone(), out))
}

/// Normalize over axes [axis..rank) with population variance; scale/bias broadcast to
/// the normalized shape. Statistics accumulate in f64 (eight interleaved partial sums,
/// added in a fixed order, so the loops vectorize) and are rounded once.
pub(crate) fn layer_norm(
    x: &Tensor,
    scale: &Tensor,
    bias: Option<&Tensor>,
    axis: usize,
    eps: f32,
) -> OpResult<Tensor> {
    if !x.dtype().is_float() {
        return unsupported(format!("LayerNormalization on {} tensors", x.dtype()));
    }
    let norm_shape = &x.shape[axis..];
    let d: usize = norm_shape.iter().product();
    let xf = floats(x);
    // Scale and bias gathered once to the normalized shape, so the row loop is a plain
    // vector loop.
    let sf = floats(scale);
    let sv: Vec<f32> = broadcast_map(&scale.shape, norm_shape)
        .into_iter()
        .map(|i| sf[i])
        .collect();
    let bv: Option<Vec<f32>> = bias.map(|b| {
        let f = floats(b);
        broadcast_map(&b.shape, norm_shape)
            .into_iter()
            .map(|i| f[i])
            .collect()
    });
    let mut out = vec![0f32; xf.len()];
    if d > 0 {
        simd(
            #[inline(always)]
            || {
                for (row, orow) in xf.chunks(d).zip(out.chunks_mut(d)) {
                    let mean = sum_f64(row, |v| v) / d as f64;
                    let var = sum_f64(row, |v| (v - mean) * (v - mean)) / d as f64;
                    let inv = 1.0 / (var + eps as f64).sqrt();
                    let norm = |v: f32| ((v as f64 - mean) * inv) as f32;
                    match &bv {
                        Some(bv) => {
                            for (((o, &v), &s), &b) in orow.iter_mut().zip(row).zip(&sv).zip(bv) {
                                *o = norm(v) * s + b;
                            }
                        }
                        None => {
                            for ((o, &v), &s) in orow.iter_mut().zip(row).zip(&sv) {
                                *o = norm(v) * s;
                            }
                        }
                    }
                }
            },
        )
    }
    Ok(float_tensor(x.dtype(), x.shape.clone(), out))
}

/// Sum of `f(v as f64)` over `row` in eight interleaved f64 partial sums, added
/// pairwise at the end (a fixed order: the same bits on every host and thread count).
#[inline(always)]
fn sum_f64(row: &[f32], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0f64; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for l in 0..8 {
            acc[l] += f(c[l] as f64);
        }
    }
    for (l, &v) in chunks.remainder().iter().enumerate() {
        acc[l] += f(v as f64);
    }
    let mut w = 8;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] += acc[l + w];
        }
    }
    acc[0]
}

/// Softmax / LogSoftmax along one axis (opset-13 semantics), max-subtracted, with
/// `kernels::vmath`'s exp (f64, rounded once: within 1 ulp of the library's expf) in a
/// vector loop; the sum runs in f32 in index order, as before.
pub(crate) fn softmax(x: &Tensor, axis: usize, log: bool) -> OpResult<Tensor> {
    if !x.dtype().is_float() {
        return unsupported(format!("Softmax on {} tensors", x.dtype()));
    }
    let xf = floats(x);
    let len = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let mut out = vec![0f32; xf.len()];
    let mut buf = vec![0f32; len];
    let mut e = vec![0f32; len];
    simd(
        #[inline(always)]
        || {
            for o in 0..outer {
                for i in 0..inner {
                    let at = |j: usize| (o * len + j) * inner + i;
                    if inner == 1 {
                        buf.copy_from_slice(&xf[o * len..(o + 1) * len]);
                    } else {
                        for (j, b) in buf.iter_mut().enumerate() {
                            *b = xf[at(j)];
                        }
                    }
                    let mx = buf.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                    for (b, ev) in buf.iter_mut().zip(e.iter_mut()) {
                        *b -= mx;
                        *ev = exp_f32(*b);
                    }
                    let sum = e.iter().fold(0f32, |s, &v| s + v);
                    let lsum = sum.ln();
                    let res = |j: usize| if log { buf[j] - lsum } else { e[j] / sum };
                    if inner == 1 {
                        for (j, ov) in out[o * len..(o + 1) * len].iter_mut().enumerate() {
                            *ov = res(j);
                        }
                    } else {
                        for j in 0..len {
                            out[at(j)] = res(j);
                        }
                    }
                }
            }
        },
    );
    Ok(float_tensor(x.dtype(), x.shape.clone(), out))
}
