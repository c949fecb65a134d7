//! ReduceMean/Sum/Max/Min/Prod/SumSquare/L2 over a set of axes.
//!
//! Float sums accumulate in f64 and round once to f32 (closer to the exact value than
//! ORT's f32 accumulation; the difference is inside the float tolerance). An empty
//! axes list is the identity, matching the IR's shape inference.

use crate::elem::{float_tensor, floats, strided_map, strides};
use crate::error::{OpResult, unsupported};
use pimkit_ir::{DType, ReduceKind, Tensor, TensorType};

pub(crate) fn reduce(
    x: &Tensor,
    kind: ReduceKind,
    axes: &[usize],
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    let r = x.rank();
    // Output (keepdims) strides with 0 on reduced axes: maps input -> output element.
    let kept: Vec<usize> = (0..r)
        .map(|i| if axes.contains(&i) { 1 } else { x.shape[i] })
        .collect();
    let kstr = strides(&kept);
    let ostr: Vec<usize> = (0..r)
        .map(|i| if axes.contains(&i) { 0 } else { kstr[i] })
        .collect();
    let map = strided_map(&x.shape, &ostr, 0);
    let nout = out_ty.numel();
    // Elements per output; 0 when a reduced axis is empty (a float mean is then NaN, as
    // numpy and the ONNX reference give).
    let count: usize = axes.iter().map(|&a| x.shape[a]).product();
    let shape = out_ty.shape.clone();
    use ReduceKind as K;
    if x.dtype().is_float() {
        let xf = floats(x);
        let out: Vec<f32> = match kind {
            K::Max | K::Min => {
                let init = if kind == K::Max {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                };
                let mut acc = vec![init; nout];
                for (&v, &o) in xf.iter().zip(&map) {
                    acc[o] = if kind == K::Max {
                        acc[o].max(v)
                    } else {
                        acc[o].min(v)
                    };
                }
                acc
            }
            _ => {
                let init = if kind == K::Prod { 1.0 } else { 0.0 };
                let mut acc = vec![init; nout];
                for (&v, &o) in xf.iter().zip(&map) {
                    let v = v as f64;
                    match kind {
                        K::Prod => acc[o] *= v,
                        K::SumSquare | K::L2 => acc[o] += v * v,
                        _ => acc[o] += v,
                    }
                }
                acc.into_iter()
                    .map(|a| match kind {
                        K::Mean => (a / count as f64) as f32,
                        K::L2 => a.sqrt() as f32,
                        _ => a as f32,
                    })
                    .collect()
            }
        };
        return Ok(float_tensor(x.dtype(), shape, out));
    }
    if matches!(x.dtype(), DType::Bool) {
        // ReduceMax / ReduceMin on bool (opset 20): any / all; identities false / true.
        let init = match kind {
            K::Max => false,
            K::Min => true,
            _ => return unsupported(format!("{kind:?} reduction on bool tensors")),
        };
        let mut acc = vec![init; nout];
        for (v, &o) in x.to_i64_vec().into_iter().zip(&map) {
            acc[o] = if kind == K::Max {
                acc[o] || v != 0
            } else {
                acc[o] && v != 0
            };
        }
        return Ok(Tensor::from_bool(shape, acc));
    }
    let xv = x.to_i64_vec();
    let mut acc: Vec<i64> = vec![
        match kind {
            K::Max => i64::MIN,
            K::Min => i64::MAX,
            K::Prod => 1,
            _ => 0,
        };
        nout
    ];
    for (&v, &o) in xv.iter().zip(&map) {
        acc[o] = match kind {
            K::Max => acc[o].max(v),
            K::Min => acc[o].min(v),
            K::Prod => acc[o].wrapping_mul(v),
            K::SumSquare => acc[o].wrapping_add(v.wrapping_mul(v)),
            K::Sum | K::Mean => acc[o].wrapping_add(v),
            K::L2 => return unsupported("ReduceL2 on integer tensors"),
        };
    }
    if kind == K::Mean {
        if count == 0 {
            return unsupported("integer ReduceMean over an empty axis (mean of no values)");
        }
        acc.iter_mut().for_each(|a| *a /= count as i64);
    }
    Ok(int_tensor(x.dtype(), shape, acc))
}

/// Narrow i64 accumulators to the integer dtype (wrapping).
fn int_tensor(dtype: DType, shape: Vec<usize>, v: Vec<i64>) -> Tensor {
    match dtype {
        DType::I32 => Tensor::from_i32(shape, v.into_iter().map(|x| x as i32).collect()),
        DType::I8 => Tensor::from_i8(shape, v.into_iter().map(|x| x as i8).collect()),
        DType::U8 => Tensor::from_u8(shape, v.into_iter().map(|x| x as u8).collect()),
        _ => Tensor::from_i64(shape, v),
    }
}
