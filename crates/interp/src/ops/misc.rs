//! BitCast, Einsum, Det and DynamicQuantizeLinear.

use super::elementwise::ints_to;
use crate::elem::strides;
use crate::error::{OpResult, unsupported};
use pimkit_ir::{DType, Tensor, TensorData, TensorType, einsum_spec};

/// The elements' little-endian bytes (bool as 0/1).
fn le_bytes(t: &Tensor) -> Vec<u8> {
    macro_rules! bytes {
        ($v:expr) => {
            $v.iter().flat_map(|x| x.to_le_bytes()).collect()
        };
    }
    match &t.data {
        TensorData::F32(v) => bytes!(v),
        TensorData::F16(v) => bytes!(v),
        TensorData::Bf16(v) => bytes!(v),
        TensorData::F64(v) => bytes!(v),
        TensorData::I64(v) => bytes!(v),
        TensorData::I32(v) => bytes!(v),
        TensorData::I16(v) => bytes!(v),
        TensorData::I8(v) => bytes!(v),
        TensorData::U64(v) => bytes!(v),
        TensorData::U32(v) => bytes!(v),
        TensorData::U16(v) => bytes!(v),
        TensorData::U8(v) | TensorData::Codes(_, v) => v.clone(),
        TensorData::Bool(v) => v.iter().map(|&b| b as u8).collect(),
    }
}

/// The same bytes read as `to` (the IR checked that the widths match).
pub(crate) fn bitcast(x: &Tensor, to: DType) -> OpResult<Tensor> {
    let b = le_bytes(x);
    macro_rules! read {
        ($t:ty, $n:expr) => {
            b.chunks_exact($n)
                .map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or([0; $n])))
                .collect()
        };
    }
    let data = match to {
        DType::F32 => TensorData::F32(read!(f32, 4)),
        DType::F16 => TensorData::F16(read!(half::f16, 2)),
        DType::Bf16 => TensorData::Bf16(read!(half::bf16, 2)),
        DType::F64 => TensorData::F64(read!(f64, 8)),
        DType::I64 => TensorData::I64(read!(i64, 8)),
        DType::I32 => TensorData::I32(read!(i32, 4)),
        DType::I16 => TensorData::I16(read!(i16, 2)),
        DType::I8 => TensorData::I8(read!(i8, 1)),
        DType::U64 => TensorData::U64(read!(u64, 8)),
        DType::U32 => TensorData::U32(read!(u32, 4)),
        DType::U16 => TensorData::U16(read!(u16, 2)),
        DType::U8 => TensorData::U8(b),
        DType::Bool => TensorData::Bool(b.iter().map(|&v| v != 0).collect()),
        d => return unsupported(format!("BitCast to {d}")),
    };
    Ok(Tensor {
        shape: x.shape.clone(),
        data,
    })
}

/// numpy einsum: every output element sums, over the labels not in the output, the
/// product of the operands' elements. f64 for floats, wrapping i64 for integers.
pub(crate) fn einsum(ins: &[&Tensor], equation: &str, out_ty: &TensorType) -> OpResult<Tensor> {
    let shapes: Vec<&[usize]> = ins.iter().map(|t| &t.shape[..]).collect();
    let spec = einsum_spec(equation, &shapes).map_err(crate::error::OpError::Invalid)?;
    let nl = spec.dims.len();
    // Stride of every label in every operand (0 where the operand broadcasts it).
    let lstr: Vec<Vec<usize>> = ins
        .iter()
        .zip(&spec.inputs)
        .map(|(t, labels)| {
            let st = strides(&t.shape);
            let mut s = vec![0; nl];
            for (a, &l) in labels.iter().enumerate() {
                if t.shape[a] != 1 || spec.dims[l] == 1 {
                    s[l] += st[a];
                }
            }
            s
        })
        .collect();
    let summed: Vec<usize> = (0..nl).filter(|l| !spec.output.contains(l)).collect();
    let order: Vec<usize> = spec.output.iter().chain(&summed).copied().collect();
    let out_n: usize = spec.output.iter().map(|&l| spec.dims[l]).product();
    let sum_n: usize = summed.iter().map(|&l| spec.dims[l]).product();
    let is_float = ins[0].dtype().is_float();
    let fv: Vec<Vec<f64>> = if is_float {
        ins.iter().map(|t| t.to_f64_vec()).collect()
    } else {
        Vec::new()
    };
    let iv: Vec<Vec<i64>> = if is_float {
        Vec::new()
    } else {
        ins.iter().map(|t| t.to_i64_vec()).collect()
    };
    let mut fo = vec![0.0f64; if is_float { out_n } else { 0 }];
    let mut io = vec![0i64; if is_float { 0 } else { out_n }];
    let mut pos = vec![0usize; nl];
    let mut offs = vec![0usize; ins.len()];
    for o in 0..out_n {
        for s in 0..sum_n {
            // Coordinates of every label for (o, s), output labels first.
            let (mut ro, mut rs) = (o, s);
            for &l in spec.output.iter().rev() {
                pos[l] = ro % spec.dims[l];
                ro /= spec.dims[l];
            }
            for &l in summed.iter().rev() {
                pos[l] = rs % spec.dims[l];
                rs /= spec.dims[l];
            }
            for (k, off) in offs.iter_mut().enumerate() {
                *off = order.iter().map(|&l| pos[l] * lstr[k][l]).sum();
            }
            if is_float {
                fo[o] += offs
                    .iter()
                    .enumerate()
                    .map(|(k, &p)| fv[k][p])
                    .product::<f64>();
            } else {
                let p = offs
                    .iter()
                    .enumerate()
                    .fold(1i64, |acc, (k, &p)| acc.wrapping_mul(iv[k][p]));
                io[o] = io[o].wrapping_add(p);
            }
        }
    }
    let dt = ins[0].dtype();
    Ok(if is_float {
        Tensor::from_f64_as(dt, out_ty.shape.clone(), &fo)
    } else {
        ints_to(dt, out_ty.shape.clone(), io)
    })
}

/// Determinant of every [M, M] matrix (LU with partial pivoting in f64).
pub(crate) fn det(x: &Tensor, out_ty: &TensorType) -> OpResult<Tensor> {
    let m = *x.shape.last().unwrap_or(&0);
    let v = x.to_f64_vec();
    let count = if m == 0 {
        out_ty.shape.iter().product()
    } else {
        v.len() / (m * m)
    };
    let mut out = Vec::with_capacity(count);
    for k in 0..count {
        let mut a: Vec<f64> = if m == 0 {
            Vec::new()
        } else {
            v[k * m * m..(k + 1) * m * m].to_vec()
        };
        let mut d = 1.0;
        for c in 0..m {
            let p = (c..m)
                .max_by(|&i, &j| a[i * m + c].abs().total_cmp(&a[j * m + c].abs()))
                .unwrap_or(c);
            if a[p * m + c] == 0.0 {
                d = 0.0;
                break;
            }
            if p != c {
                for j in 0..m {
                    a.swap(p * m + j, c * m + j);
                }
                d = -d;
            }
            let piv = a[c * m + c];
            d *= piv;
            for i in c + 1..m {
                let f = a[i * m + c] / piv;
                for j in c..m {
                    a[i * m + j] -= f * a[c * m + j];
                }
            }
        }
        out.push(d);
    }
    Ok(Tensor::from_f64_as(x.dtype(), out_ty.shape.clone(), &out))
}

/// u8 quantization with scale and zero point from the data's range (always including
/// 0), in f32 as onnxruntime and the ONNX reference compute it.
pub(crate) fn dynamic_quantize_linear(x: &Tensor) -> OpResult<Vec<Tensor>> {
    let Some(v) = x.as_f32() else {
        return unsupported(format!("DynamicQuantizeLinear on {}", x.dtype()));
    };
    let (minx, maxx) = crate::kernels::ewise::simd(
        #[inline(always)]
        || min_max_with_zero(v),
    );
    let scale = (if maxx == minx { 1.0 } else { maxx - minx }) / 255.0;
    let zp = (0.0 - minx / scale).clamp(0.0, 255.0).round_ties_even();
    // y is QuantizeLinear(x, scale, zp) by definition: the same vectorized kernel.
    let y = crate::kernels::requant::quantize_bytes(
        v,
        &[scale],
        &[zp as i32],
        None,
        (0, 255),
        DType::U8,
        &x.shape,
    );
    Ok(vec![
        y,
        Tensor::from_f32(vec![], vec![scale]),
        Tensor::from_u8(vec![], vec![zp as u8]),
    ])
}

/// `(min(0, x...), max(0, x...))`, NaNs ignored (as `f32::min` / `f32::max` folds from
/// 0 do), in 16 independent lanes so the loop vectorizes; the order of a min or max does
/// not change it.
#[inline(always)]
fn min_max_with_zero(v: &[f32]) -> (f32, f32) {
    let (mut lo, mut hi) = ([0f32; 16], [0f32; 16]);
    let (chunks, tail) = v.as_chunks::<16>();
    for c in chunks {
        for l in 0..16 {
            lo[l] = if c[l] < lo[l] { c[l] } else { lo[l] };
            hi[l] = if c[l] > hi[l] { c[l] } else { hi[l] };
        }
    }
    let lo = lo
        .iter()
        .chain(tail)
        .fold(0f32, |m, &e| if e < m { e } else { m });
    let hi = hi
        .iter()
        .chain(tail)
        .fold(0f32, |m, &e| if e > m { e } else { m });
    (lo, hi)
}

/// TfIdfVectorizer: counts of every pool n-gram (lengths min..=max; tokens `skip + 1`
/// apart for skip 0..=max_skip_count, unigrams counted once) per row, then TF (counts),
/// IDF (weight or 1 where counted) or TFIDF (weight·count, or the count).
pub(crate) fn tfidf(
    x: &Tensor,
    a: &pimkit_ir::TfIdfAttrs,
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    use std::collections::HashMap;
    let out = a.output_size();
    // n-gram -> output column, for the in-range lengths (ids count every n-gram).
    let mut map: HashMap<Vec<i64>, usize> = HashMap::new();
    let mut id = 0;
    for (i, &start) in a.ngram_counts.iter().enumerate() {
        let n = i + 1;
        let end = a.ngram_counts.get(i + 1).copied().unwrap_or(a.pool.len());
        for g in a.pool[start.min(end)..end].chunks_exact(n) {
            if (a.min_gram_length..=a.max_gram_length).contains(&n) {
                map.entry(g.to_vec()).or_insert(a.ngram_indexes[id]);
            }
            id += 1;
        }
    }
    let v = x.to_i64_vec();
    let (rows, cols) = if x.rank() == 2 {
        (x.shape[0], x.shape[1])
    } else {
        (1, v.len())
    };
    let mut counts = vec![0u64; rows * out];
    let mut seq = Vec::new();
    for r in 0..rows {
        let row = &v[r * cols..(r + 1) * cols];
        for skip in 0..=a.max_skip_count {
            let step = skip + 1;
            let min_n = if step == 1 {
                a.min_gram_length
            } else {
                a.min_gram_length.max(2)
            };
            for start in 0..cols {
                for n in min_n..=a.max_gram_length {
                    let last = start + (n - 1) * step;
                    if last >= cols {
                        break;
                    }
                    seq.clear();
                    seq.extend((0..n).map(|k| row[start + k * step]));
                    if let Some(&col) = map.get(&seq) {
                        counts[r * out + col] += 1;
                    }
                }
            }
        }
    }
    let y: Vec<f32> = counts
        .iter()
        .enumerate()
        .map(|(p, &cnt)| {
            let w = a.weights.get(p % out.max(1)).copied();
            match a.mode {
                pimkit_ir::TfIdfMode::Tf => cnt as f32,
                pimkit_ir::TfIdfMode::Idf => {
                    if cnt > 0 {
                        w.unwrap_or(1.0)
                    } else {
                        0.0
                    }
                }
                pimkit_ir::TfIdfMode::TfIdf => w.unwrap_or(1.0) * cnt as f32,
            }
        })
        .collect();
    Ok(Tensor::from_f32(out_ty.shape.clone(), y))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// ONNX's definition, element by element (the form this op had before it was
    /// vectorized).
    fn reference(v: &[f32]) -> (Vec<u8>, f32, u8) {
        let maxx = v.iter().copied().fold(0f32, f32::max);
        let minx = v.iter().copied().fold(0f32, f32::min);
        let scale = (if maxx == minx { 1.0 } else { maxx - minx }) / 255.0;
        let zp = (0.0 - minx / scale).clamp(0.0, 255.0).round_ties_even();
        let y = v
            .iter()
            .map(|&e| ((e / scale).round_ties_even() + zp).clamp(0.0, 255.0) as u8)
            .collect();
        (y, scale, zp as u8)
    }

    #[test]
    fn vectorized_dynamic_quantize_equals_the_definition() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let mut cases: Vec<Vec<f32>> = vec![
            vec![],
            vec![0.0; 40],
            vec![-0.0; 17],
            vec![3.5; 33],
            vec![-2.0; 16],
            vec![f32::NAN, 1.0, -1.0, f32::NAN],
            [f32::INFINITY, 1.0, -3.0].repeat(7),
            [f32::NEG_INFINITY, 0.5].repeat(12),
        ];
        for n in [1, 15, 16, 17, 31, 32, 33, 100, 1000] {
            for spread in [1e-30f32, 1e-3, 1.0, 1e6] {
                let off: f32 = rng.random_range(-2.0..2.0) * spread;
                let v: Vec<f32> = (0..n)
                    .map(|_| off + rng.random_range(-1.0f32..1.0) * spread)
                    .collect();
                cases.push(v);
            }
        }
        // Halfway points: values landing exactly on k + 0.5 steps.
        cases.push((0..64).map(|k| (k as f32 - 20.0) * 0.5).collect());
        for v in cases {
            let x = Tensor::from_f32(vec![v.len()], v.clone());
            let got = dynamic_quantize_linear(&x).unwrap();
            let (y, scale, zp) = reference(&v);
            assert_eq!(got[0].as_u8().unwrap(), &y[..], "{v:?}");
            assert_eq!(
                got[1].as_f32().unwrap()[0].to_bits(),
                scale.to_bits(),
                "{v:?}"
            );
            assert_eq!(got[2].as_u8().unwrap()[0], zp, "{v:?}");
        }
    }
}
