//! BatchNormalization (inference form), LayerNormalization, Softmax and LogSoftmax.

use crate::elem::{broadcast_map, float_tensor, floats};
use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
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
/// the normalized shape. Statistics accumulate in f64.
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
    let sf = floats(scale);
    let smap = broadcast_map(&scale.shape, norm_shape);
    let bvals: Option<(Vec<f32>, Vec<usize>)> =
        bias.map(|b| (floats(b).into_owned(), broadcast_map(&b.shape, norm_shape)));
    let mut out = vec![0f32; xf.len()];
    if d > 0 {
        for (row, orow) in xf.chunks(d).zip(out.chunks_mut(d)) {
            let mean = row.iter().map(|&v| v as f64).sum::<f64>() / d as f64;
            let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / d as f64;
            let inv = 1.0 / (var + eps as f64).sqrt();
            for j in 0..d {
                let mut y = ((row[j] as f64 - mean) * inv) as f32 * sf[smap[j]];
                if let Some((bv, bm)) = &bvals {
                    y += bv[bm[j]];
                }
                orow[j] = y;
            }
        }
    }
    Ok(float_tensor(x.dtype(), x.shape.clone(), out))
}

/// Softmax / LogSoftmax along one axis (opset-13 semantics), max-subtracted.
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
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * len + j) * inner + i;
            let mx = (0..len).fold(f32::NEG_INFINITY, |m, j| m.max(xf[at(j)]));
            let mut sum = 0f32;
            for j in 0..len {
                buf[j] = xf[at(j)] - mx;
                sum += buf[j].exp();
            }
            for j in 0..len {
                out[at(j)] = if log {
                    buf[j] - sum.ln()
                } else {
                    buf[j].exp() / sum
                };
            }
        }
    }
    Ok(float_tensor(x.dtype(), x.shape.clone(), out))
}
