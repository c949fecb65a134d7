//! Data-movement ops: Reshape, Transpose, Concat, Split, Slice (negative steps), Gather
//! (negative indices), Expand, Pad (constant/reflect/edge), Tile, and ArgMax.
//!
//! Most are expressed as an index map (output element -> input element, `usize::MAX`
//! for a fill value) applied with one generic gather over every dtype.

use crate::elem::{Elem, map_data, same_variant, strided_map, strides, take};
use crate::error::{OpError, OpResult, invalid, unsupported};
use pimkit_ir::{DType, PadMode, SliceAxis, Tensor, TensorData, TensorType};

/// Per output axis, the input coordinate each output coordinate reads (None = fill),
/// combined into a row-major index map over the output.
fn table_map(tabs: &[Vec<Option<usize>>], in_shape: &[usize]) -> Vec<usize> {
    let istr = strides(in_shape);
    let mut out = vec![0usize];
    for (i, tab) in tabs.iter().enumerate() {
        let mut next = Vec::with_capacity(out.len() * tab.len());
        for &base in &out {
            for &t in tab {
                next.push(match t {
                    Some(c) if base != usize::MAX => base + c * istr[i],
                    _ => usize::MAX,
                });
            }
        }
        out = next;
    }
    out
}

/// Apply an index map to any tensor; `fill` is converted to the tensor's dtype.
pub(crate) fn apply_map(x: &Tensor, shape: Vec<usize>, idx: &[usize], fill: f32) -> Tensor {
    fn go<T: Elem>(v: &[T], idx: &[usize], fill: f32) -> Vec<T> {
        take(v, idx, T::from_f32(fill))
    }
    Tensor {
        shape,
        data: map_data!(&x.data, |v| go(v, idx, fill)),
    }
}

pub(crate) fn reshape(x: &Tensor, shape: &[usize]) -> OpResult<Tensor> {
    x.clone()
        .reshaped(shape.to_vec())
        .ok_or_else(|| OpError::Invalid(format!("cannot reshape {:?} to {shape:?}", x.shape)))
}

pub(crate) fn transpose(x: &Tensor, perm: &[usize]) -> Tensor {
    let istr = strides(&x.shape);
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    let pstr: Vec<usize> = perm.iter().map(|&p| istr[p]).collect();
    let idx = strided_map(&shape, &pstr, 0);
    apply_map(x, shape, &idx, 0.0)
}

pub(crate) fn concat(ins: &[&Tensor], axis: usize) -> OpResult<Tensor> {
    let first = ins[0];
    let outer: usize = first.shape[..axis].iter().product();
    let inner: usize = first.shape[axis + 1..].iter().product();
    let chunks: Vec<usize> = ins.iter().map(|t| t.shape[axis] * inner).collect();
    let mut shape = first.shape.clone();
    shape[axis] = ins.iter().map(|t| t.shape[axis]).sum();
    if ins.iter().any(|t| t.dtype() != first.dtype()) {
        return unsupported("Concat inputs have different dtypes");
    }
    let data = map_data!(&first.data, |v0| {
        let vs: Vec<_> = ins.iter().map(|t| same_variant(&t.data, v0)).collect();
        let mut out = Vec::with_capacity(vs.iter().map(|v| v.len()).sum());
        for o in 0..outer {
            for (v, &c) in vs.iter().zip(&chunks) {
                out.extend_from_slice(&v[o * c..(o + 1) * c]);
            }
        }
        out
    });
    Ok(Tensor { shape, data })
}

pub(crate) fn split(x: &Tensor, axis: usize, sizes: &[usize]) -> OpResult<Vec<Tensor>> {
    // Concat's inverse: every output is `outer` contiguous runs of `size * inner`.
    let len = x.shape[axis];
    if sizes.iter().sum::<usize>() > len {
        return invalid(format!(
            "split sizes {sizes:?} exceed the axis length {len}"
        ));
    }
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    let mut start = 0;
    let mut outs = Vec::with_capacity(sizes.len());
    for &s in sizes {
        let mut shape = x.shape.clone();
        shape[axis] = s;
        let data = map_data!(&x.data, |v| {
            let mut out = Vec::with_capacity(outer * s * inner);
            for o in 0..outer {
                out.extend_from_slice(&v[(o * len + start) * inner..(o * len + start + s) * inner]);
            }
            out
        });
        outs.push(Tensor { shape, data });
        start += s;
    }
    Ok(outs)
}

pub(crate) fn slice(x: &Tensor, axes: &[SliceAxis], out_ty: &TensorType) -> Tensor {
    let mut tabs: Vec<Vec<Option<usize>>> = x
        .shape
        .iter()
        .map(|&d| (0..d).map(Some).collect())
        .collect();
    for sa in axes {
        let n = out_ty.shape[sa.axis];
        tabs[sa.axis] = (0..n as i64)
            .map(|k| {
                let c = sa.start + k * sa.step;
                (c >= 0 && (c as usize) < x.shape[sa.axis]).then_some(c as usize)
            })
            .collect();
    }
    apply_map(x, out_ty.shape.clone(), &table_map(&tabs, &x.shape), 0.0)
}

pub(crate) fn gather(x: &Tensor, indices: &Tensor, axis: usize) -> OpResult<Tensor> {
    if !matches!(indices.dtype(), DType::I64 | DType::I32) {
        return unsupported(format!(
            "Gather indices must be i64 or i32, got {}",
            indices.dtype()
        ));
    }
    let d = x.shape[axis] as i64;
    let idx: Vec<usize> = indices
        .to_i64_vec()
        .into_iter()
        .map(|i| {
            let j = if i < 0 { i + d } else { i };
            if j < 0 || j >= d {
                invalid(format!(
                    "index {i} is out of range for axis {axis} of size {d}"
                ))
            } else {
                Ok(j as usize)
            }
        })
        .collect::<OpResult<_>>()?;
    let outer: usize = x.shape[..axis].iter().product();
    let inner: usize = x.shape[axis + 1..].iter().product();
    let mut map = Vec::with_capacity(outer * idx.len() * inner);
    for o in 0..outer {
        for &j in &idx {
            let base = (o * d as usize + j) * inner;
            map.extend(base..base + inner);
        }
    }
    let mut shape = x.shape[..axis].to_vec();
    shape.extend(&indices.shape);
    shape.extend(&x.shape[axis + 1..]);
    Ok(apply_map(x, shape, &map, 0.0))
}

pub(crate) fn expand(x: &Tensor, out_ty: &TensorType) -> Tensor {
    let idx = crate::elem::broadcast_map(&x.shape, &out_ty.shape);
    apply_map(x, out_ty.shape.clone(), &idx, 0.0)
}

pub(crate) fn pad(x: &Tensor, pads: &[usize], mode: PadMode, value: f32) -> OpResult<Tensor> {
    let r = x.rank();
    let mut tabs = Vec::with_capacity(r);
    let mut shape = Vec::with_capacity(r);
    for i in 0..r {
        let (n, b, e) = (x.shape[i] as i64, pads[i] as i64, pads[i + r] as i64);
        if n == 0 && mode != PadMode::Constant && b + e > 0 {
            return invalid(format!("{mode:?} padding of an empty axis {i}"));
        }
        let tab: Vec<Option<usize>> = (0..n + b + e)
            .map(|o| {
                let c = o - b;
                if (0..n).contains(&c) {
                    return Some(c as usize);
                }
                match mode {
                    PadMode::Constant => None,
                    PadMode::Edge => Some(c.clamp(0, n - 1) as usize),
                    PadMode::Wrap => Some(c.rem_euclid(n) as usize),
                    PadMode::Reflect => {
                        if n == 1 {
                            return Some(0);
                        }
                        // Mirror without repeating the edge, period 2(n-1).
                        let p = 2 * (n - 1);
                        let m = c.rem_euclid(p);
                        Some((if m < n { m } else { p - m }) as usize)
                    }
                }
            })
            .collect();
        shape.push(tab.len());
        tabs.push(tab);
    }
    Ok(apply_map(x, shape, &table_map(&tabs, &x.shape), value))
}

pub(crate) fn tile(x: &Tensor, repeats: &[usize]) -> Tensor {
    let tabs: Vec<Vec<Option<usize>>> = x
        .shape
        .iter()
        .zip(repeats)
        .map(|(&d, &rep)| (0..d * rep).map(|o| Some(o % d.max(1))).collect())
        .collect();
    let shape = tabs.iter().map(|t| t.len()).collect();
    apply_map(x, shape, &table_map(&tabs, &x.shape), 0.0)
}

/// Index of the first (or, with `last`, the last) maximum along `axis`, as i64.
pub(crate) fn argmax(x: &Tensor, axis: usize, last: bool, out_ty: &TensorType) -> OpResult<Tensor> {
    let len = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let vals = super::order::order_keys(x, "ArgMax")?;
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best = 0usize;
            for j in 1..len {
                let (v, b) = (
                    vals[(o * len + j) * inner + i],
                    vals[(o * len + best) * inner + i],
                );
                if v > b || (last && v == b) {
                    best = j;
                }
            }
            out.push(best as i64);
        }
    }
    Ok(Tensor::from_i64(out_ty.shape.clone(), out))
}

/// ONNX Range as onnxruntime computes it: the value is accumulated (`v += delta`) in the
/// element type, not recomputed as `start + i * delta`.
pub(crate) fn range(start: &Tensor, delta: &Tensor, count: usize) -> OpResult<Tensor> {
    fn acc<T: Copy + std::ops::Add<Output = T>>(s: T, d: T, n: usize) -> Vec<T> {
        let mut v = s;
        (0..n)
            .map(|_| {
                let cur = v;
                v = v + d;
                cur
            })
            .collect()
    }
    let shape = vec![count];
    Ok(match (&start.data, &delta.data) {
        (TensorData::F32(s), TensorData::F32(d)) => Tensor::from_f32(shape, acc(s[0], d[0], count)),
        // No onnxruntime kernel: accumulate in f32 and round each value (the ONNX
        // reference's numpy arange agrees on the node tests).
        (TensorData::F16(s), TensorData::F16(d)) => Tensor::from_f16(
            shape,
            acc(s[0].to_f32(), d[0].to_f32(), count)
                .into_iter()
                .map(half::f16::from_f32)
                .collect(),
        ),
        (TensorData::F64(s), TensorData::F64(d)) => Tensor::from_f64(shape, acc(s[0], d[0], count)),
        (TensorData::Bf16(s), TensorData::Bf16(d)) => Tensor::from_bf16(
            shape,
            acc(s[0].to_f32(), d[0].to_f32(), count)
                .into_iter()
                .map(half::bf16::from_f32)
                .collect(),
        ),
        (TensorData::I64(s), TensorData::I64(d)) => {
            let mut v = s[0];
            let out = (0..count)
                .map(|_| {
                    let cur = v;
                    v = v.wrapping_add(d[0]);
                    cur
                })
                .collect();
            Tensor::from_i64(shape, out)
        }
        (TensorData::I32(s), TensorData::I32(d)) => {
            let mut v = s[0];
            let out = (0..count)
                .map(|_| {
                    let cur = v;
                    v = v.wrapping_add(d[0]);
                    cur
                })
                .collect();
            Tensor::from_i32(shape, out)
        }
        _ => {
            return unsupported(format!(
                "Range on {} (supported: f32, f16, bf16, f64, i64, i32)",
                start.dtype()
            ));
        }
    })
}
