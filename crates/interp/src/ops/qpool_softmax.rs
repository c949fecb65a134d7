//! com.microsoft QLinearAveragePool, QLinearSoftmax and QLinearWhere, as onnxruntime's
//! CPU kernels compute them (shared/reference/onnxruntime-quantized.md §6-§8).

use crate::error::OpResult;
use crate::exec::Ctx;
use crate::ops::quant::{q_tensor, qrange, scalar, zp_scalar};
use crate::quant::quantize_f32;
use pimkit_ir::{PoolAttrs, Tensor, TensorType, broadcast_shapes};

/// x86 float-to-int conversion: round half to even, NaN or out of range → i32::MIN.
fn cvt(v: f32) -> i32 {
    let r = v.round_ties_even();
    if r.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&r) {
        i32::MIN
    } else {
        r as i32
    }
}

/// QLinearAveragePool (`qlinear_pool.cc`): every input code dequantized to f32
/// (`f32(x - x_zp) * x_s`), each window summed in f32 in row-major order and divided by
/// its count (the float AveragePool's windows), then `RNE(f32(y / y_s) + f32(y_zp))`
/// saturated: the zero point is added in float before rounding. A window covering the
/// whole image without padding takes the QLinearGlobalAveragePool path (integer sums).
pub(crate) fn qlinear_avg_pool(c: &Ctx, p: &PoolAttrs) -> OpResult<Tensor> {
    let x = c.input(0)?;
    let x_s = scalar(c.input(1)?, "x_scale")?;
    let x_zp = zp_scalar(c.opt(2), "x_zero_point")?;
    let y_s = scalar(c.input(3)?, "y_scale")?;
    let y_zp = zp_scalar(c.opt(4), "y_zero_point")?;
    let out_ty = c.out_ty(0);
    let (lo, hi) = qrange(out_ty.dtype)?;
    let spatial = &x.shape[2..];
    let global = p.kernel == spatial
        && p.pads.iter().all(|&v| v == 0)
        && out_ty.shape[2..].iter().all(|&d| d == 1);
    if global {
        return crate::ops::qelementwise::qlinear_global_avg_pool(c, false);
    }
    let deq: Vec<f32> = x
        .to_i32_vec()
        .into_iter()
        .map(|v| (v - x_zp) as f32 * x_s)
        .collect();
    let xf = Tensor::from_f32(x.shape.clone(), deq);
    let fty = TensorType::new(pimkit_ir::DType::F32, out_ty.shape.clone());
    let avg = crate::ops::pool::pool(&xf, p, &fty)?;
    let zf = y_zp as f32;
    let vals = avg
        .to_f32_vec()
        .into_iter()
        .map(|y| cvt(y / y_s + zf).clamp(lo, hi))
        .collect();
    Ok(q_tensor(out_ty.dtype, out_ty.shape.clone(), vals))
}

/// QLinearSoftmax (`qlinear_softmax.cc`): a 256-entry table of
/// `f32(exp((i - 255 + bs) * x_s))`, `bs = max(0, ln(FLT_MAX / D) - 5) / x_s`, read at
/// `255 + x - max` per element; the row's entries summed in f32 in order; each output
/// `RNE(f32(f32(e * Ys) / S))` plus the zero point, `Ys = floor(1 / y_s)`, saturated
/// (u8: at 255 from an int32 that wraps like the kernel's; s8: clamped).
pub(crate) fn qlinear_softmax(c: &Ctx, axis: usize, flatten: bool) -> OpResult<Tensor> {
    let x = c.input(0)?;
    let x_s = scalar(c.input(1)?, "X_scale")?;
    let y_s = scalar(c.input(3)?, "Y_scale")?;
    let y_zp = zp_scalar(c.opt(4), "Y_zero_point")?;
    let dt = c.out_ty(0).dtype;
    let r = x.rank();
    // Rows: flattened [axis, rank) (opset < 13) or the one axis (moved last, as the
    // kernel transposes it).
    let (outer, d, inner) = if flatten {
        (
            x.shape[..axis].iter().product::<usize>(),
            x.shape[axis..].iter().product::<usize>(),
            1,
        )
    } else {
        (
            x.shape[..axis].iter().product::<usize>(),
            x.shape[axis],
            x.shape[axis + 1..r].iter().product::<usize>(),
        )
    };
    let bs = (((f32::MAX / d.max(1) as f32) as f64).ln() - 5.0).max(0.0) / x_s as f64;
    let table: Vec<f32> = (0..256)
        .map(|i| ((i as f64 - 255.0 + bs) * x_s as f64).exp() as f32)
        .collect();
    let ys = (1.0 / y_s).floor();
    let xv = x.to_i32_vec();
    let mut out = vec![0i32; xv.len()];
    let signed = dt == pimkit_ir::DType::I8;
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * d + j) * inner + i;
            let m = (0..d).map(|j| xv[at(j)]).max().unwrap_or(0);
            let e: Vec<f32> = (0..d)
                .map(|j| table[(255 + xv[at(j)] - m) as usize])
                .collect();
            let s: f32 = e.iter().fold(0.0, |acc, &v| acc + v);
            for (j, &ej) in e.iter().enumerate() {
                let q = cvt(ej * ys / s).wrapping_add(y_zp);
                out[at(j)] = if signed {
                    q.clamp(-128, 127)
                } else {
                    // min(q, 255) then the byte (an overflowed INT_MIN keeps its low byte).
                    (q.min(255) as u8) as i32
                };
            }
        }
    }
    Ok(q_tensor(dt, x.shape.clone(), out))
}

/// QLinearWhere (`qlinear_where.cc`): x and y each requantized to z's scale and zero
/// point by a 256-entry table, then picked by the condition (numpy broadcasting).
pub(crate) fn qlinear_where(c: &Ctx) -> OpResult<Tensor> {
    let cond = c.input(0)?;
    let (x, y) = (c.input(1)?, c.input(4)?);
    let z_s = scalar(c.input(7)?, "z_scale")?;
    let z_zp = zp_scalar(c.opt(8), "z_zero_point")?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let table = |t: &Tensor, s_i: usize, what: &str| -> OpResult<Vec<i32>> {
        let s = scalar(c.input(s_i)?, what)?;
        let zp = zp_scalar(c.opt(s_i + 1), what)?;
        let (tlo, _) = qrange(t.dtype())?;
        let lut: Vec<i32> = (0..256)
            .map(|k| quantize_f32(s * (tlo + k - zp) as f32, z_s, z_zp, lo, hi))
            .collect();
        Ok(t.to_i32_vec()
            .into_iter()
            .map(|v| lut[(v - tlo) as usize])
            .collect())
    };
    let (xq, yq) = (table(x, 2, "x_scale")?, table(y, 5, "y_scale")?);
    let cv = cond.as_bool().ok_or_else(|| {
        crate::error::OpError::Unsupported(format!("condition is {}, not bool", cond.dtype()))
    })?;
    let shape = broadcast_shapes(&cond.shape, &x.shape)
        .and_then(|s| broadcast_shapes(&s, &y.shape))
        .ok_or_else(|| crate::error::OpError::Invalid("not broadcastable".into()))?;
    let (ic, ix, iy) = (
        crate::elem::broadcast_map(&cond.shape, &shape),
        crate::elem::broadcast_map(&x.shape, &shape),
        crate::elem::broadcast_map(&y.shape, &shape),
    );
    let vals = (0..ic.len())
        .map(|k| if cv[ic[k]] { xq[ix[k]] } else { yq[iy[k]] })
        .collect();
    Ok(q_tensor(dt, shape, vals))
}
