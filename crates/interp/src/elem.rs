//! Element-type plumbing shared by the kernels: a trait over the storage types,
//! float views (f16 widened to f32), broadcasting index maps and an f32 GEMM wrapper.

use half::{bf16, f16};
use pimkit_ir::{DType, Tensor, TensorData};
use std::borrow::Cow;

/// A storage element type. Conversions are only used off the hot paths (fill values,
/// casts of pads); kernels operate on concrete types.
pub(crate) trait Elem: Copy + Send + Sync + PartialOrd + 'static {
    fn from_f32(v: f32) -> Self;
}

macro_rules! elem_num {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            fn from_f32(v: f32) -> Self { v as $t }
        }
    )*};
}
elem_num!(f32, f64, i64, i32, i16, i8, u64, u32, u16, u8);

impl Elem for f16 {
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
}
impl Elem for bf16 {
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
}
impl Elem for bool {
    fn from_f32(v: f32) -> Self {
        v != 0.0
    }
}

pub(crate) use pimkit_ir::map_data;

/// The vector of `d` as the same element type as `like` (the caller checked the dtypes).
pub(crate) fn same_variant<'a, T: 'static>(d: &'a TensorData, like: &[T]) -> &'a [T] {
    let _ = like;
    let any: &dyn std::any::Any = match d {
        TensorData::F32(v) => v,
        TensorData::F16(v) => v,
        TensorData::I64(v) => v,
        TensorData::I32(v) => v,
        TensorData::I8(v) => v,
        TensorData::U8(v) => v,
        TensorData::Bool(v) => v,
        TensorData::F64(v) => v,
        TensorData::Bf16(v) => v,
        TensorData::I16(v) => v,
        TensorData::U16(v) => v,
        TensorData::U32(v) => v,
        TensorData::U64(v) => v,
        TensorData::Codes(_, v) => v,
    };
    any.downcast_ref::<Vec<T>>()
        .map(|v| v.as_slice())
        .unwrap_or(&[])
}

/// The tensor's elements as f32 (borrowed for f32, widened for f16, converted otherwise).
pub(crate) fn floats(t: &Tensor) -> Cow<'_, [f32]> {
    match &t.data {
        TensorData::F32(v) => Cow::Borrowed(v),
        _ => Cow::Owned(t.to_f32_vec()),
    }
}

/// Build a float tensor of `dtype` from f32 values (f16 and bf16 rounded to
/// nearest-even, f64 widened; any other dtype gets f32).
pub(crate) fn float_tensor(dtype: DType, shape: Vec<usize>, v: Vec<f32>) -> Tensor {
    let data = match dtype {
        DType::F16 => TensorData::F16(v.into_iter().map(f16::from_f32).collect()),
        DType::Bf16 => TensorData::Bf16(v.into_iter().map(bf16::from_f32).collect()),
        DType::F64 => TensorData::F64(v.into_iter().map(f64::from).collect()),
        _ => TensorData::F32(v),
    };
    Tensor { shape, data }
}

/// Row-major strides of a shape.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// For every element of `out_shape` (row-major), the index of the element of a tensor
/// of `in_shape` that numpy broadcasting reads.
pub(crate) fn broadcast_map(in_shape: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let r = out_shape.len();
    let off = r - in_shape.len();
    let in_str = strides(in_shape);
    // Stride of the input along each output axis (0 where broadcast).
    let bstr: Vec<usize> = (0..r)
        .map(|i| {
            if i < off || in_shape[i - off] == 1 {
                0
            } else {
                in_str[i - off]
            }
        })
        .collect();
    strided_map(out_shape, &bstr, 0)
}

/// Source indices `base + sum(idx[i] * str[i])` for every element of `shape`, row-major.
pub(crate) fn strided_map(shape: &[usize], str: &[usize], base: usize) -> Vec<usize> {
    let total: usize = shape.iter().product();
    let mut out = Vec::with_capacity(total);
    if total == 0 {
        return out;
    }
    let r = shape.len();
    if r == 0 {
        out.push(base);
        return out;
    }
    let mut idx = vec![0usize; r];
    let inner = shape[r - 1];
    let istr = str[r - 1];
    let mut cur = base;
    loop {
        for k in 0..inner {
            out.push(cur + k * istr);
        }
        // Advance the outer axes (odometer).
        let mut d = r - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            cur += str[d];
            if idx[d] < shape[d] {
                break;
            }
            cur -= str[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Gather `src[idx[i]]` for every i; `usize::MAX` selects `fill`.
pub(crate) fn take<T: Copy>(src: &[T], idx: &[usize], fill: T) -> Vec<T> {
    idx.iter()
        .map(|&i| if i == usize::MAX { fill } else { src[i] })
        .collect()
}

/// `c[m x n] = alpha * a[m x k] * b[k x n] + beta * c` with arbitrary element strides
/// (row stride, column stride) for a and b; c is row-major contiguous
/// (see `kernels::sgemm`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    rsa: usize,
    csa: usize,
    b: &[f32],
    rsb: usize,
    csb: usize,
    beta: f32,
    c: &mut [f32],
) {
    crate::kernels::sgemm::sgemm(m, k, n, alpha, a, (rsa, csa), b, (rsb, csb), beta, c);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_map_matches_numpy() {
        // [2,1] broadcast to [2,3] reads rows.
        assert_eq!(broadcast_map(&[2, 1], &[2, 3]), vec![0, 0, 0, 1, 1, 1]);
        // [3] broadcast to [2,3] reads columns.
        assert_eq!(broadcast_map(&[3], &[2, 3]), vec![0, 1, 2, 0, 1, 2]);
        // scalar
        assert_eq!(broadcast_map(&[], &[2, 2]), vec![0, 0, 0, 0]);
    }

    #[test]
    fn sgemm_small() {
        // [1 2; 3 4] * [5; 6] = [17; 39]
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0];
        let mut c = [0.0; 2];
        sgemm(2, 2, 1, 1.0, &a, 2, 1, &b, 1, 1, 0.0, &mut c);
        assert_eq!(c, [17.0, 39.0]);
    }
}
