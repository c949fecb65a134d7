//! Indexing ops of the ONNX node suite: GatherElements, GatherND, ScatterElements,
//! ScatterND, TensorScatter, ReverseSequence, MaxUnpool, Compress and NonZero. Gathers
//! are index maps over any dtype; scatters copy the data and then write (or combine)
//! the updates in index order, so a repeated index keeps the last update (`none`) or
//! combines them all (add/mul/max/min), as the ONNX reference does.

use super::elementwise::{Num, ints_to, num, uints_to};
use super::shape::apply_map;
use crate::elem::{float_tensor, map_data, same_variant, strides};
use crate::error::{OpResult, invalid, unsupported};
use pimkit_ir::{ScatterReduction, Tensor, TensorData, TensorType};

/// Index values with negatives wrapped, checked against `len`.
fn norm(i: i64, len: usize, what: &str) -> OpResult<usize> {
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return invalid(format!(
            "{what} index {i} is out of range for a dim of {len}"
        ));
    }
    Ok(j as usize)
}

/// Row-major multi-index of flat position `p` in `shape`.
fn unravel(mut p: usize, shape: &[usize], out: &mut [usize]) {
    for a in (0..shape.len()).rev() {
        let d = shape[a].max(1);
        out[a] = p % d;
        p /= d;
    }
}

pub(crate) fn gather_elements(x: &Tensor, idx: &Tensor, axis: usize) -> OpResult<Tensor> {
    let xs = strides(&x.shape);
    let iv = idx.to_i64_vec();
    let mut pos = vec![0; idx.rank()];
    let mut map = Vec::with_capacity(iv.len());
    for (p, &i) in iv.iter().enumerate() {
        unravel(p, &idx.shape, &mut pos);
        let mut src = 0;
        for a in 0..pos.len() {
            let c = if a == axis {
                norm(i, x.shape[axis], "GatherElements")?
            } else if pos[a] < x.shape[a] {
                pos[a]
            } else {
                return invalid(format!(
                    "indices dim {a} ({}) exceeds the data's ({})",
                    idx.shape[a], x.shape[a]
                ));
            };
            src += c * xs[a];
        }
        map.push(src);
    }
    Ok(apply_map(x, idx.shape.clone(), &map, 0.0))
}

/// (data offset, slice length) of every index tuple of `idx` ([..., k]) with `b` batch dims.
fn nd_offsets(x: &[usize], idx: &Tensor, b: usize) -> OpResult<(Vec<usize>, usize)> {
    let q = idx.rank();
    let k = idx.shape[q - 1];
    let xs = strides(x);
    let inner: usize = x[b + k..].iter().product();
    let batch_block: usize = x[b..].iter().product();
    let tuples: usize = idx.shape[..q - 1].iter().product();
    let per_batch: usize = idx.shape[b..q - 1].iter().product();
    let iv = idx.to_i64_vec();
    let mut offs = Vec::with_capacity(tuples);
    for t in 0..tuples {
        let batch = t.checked_div(per_batch).unwrap_or(0);
        let mut off = batch * batch_block;
        for a in 0..k {
            off += norm(iv[t * k + a], x[b + a], "GatherND/ScatterND")? * xs[b + a];
        }
        offs.push(off);
    }
    Ok((offs, inner))
}

pub(crate) fn gather_nd(
    x: &Tensor,
    idx: &Tensor,
    b: usize,
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    let (offs, inner) = nd_offsets(&x.shape, idx, b)?;
    let map: Vec<usize> = offs.iter().flat_map(|&o| o..o + inner).collect();
    Ok(apply_map(x, out_ty.shape.clone(), &map, 0.0))
}

/// Write `upd[u]` into `data[d]` for every (d, u) pair in order, combining by `red`.
fn scatter_pairs(
    data: &Tensor,
    upd: &Tensor,
    pairs: &[(usize, usize)],
    red: ScatterReduction,
) -> OpResult<Tensor> {
    if red == ScatterReduction::None {
        fn go<T: Copy + 'static>(d: &[T], u: &TensorData, pairs: &[(usize, usize)]) -> Vec<T> {
            let u = same_variant(u, d);
            let mut out = d.to_vec();
            for &(di, ui) in pairs {
                out[di] = u[ui];
            }
            out
        }
        return Ok(Tensor {
            shape: data.shape.clone(),
            data: map_data!(&data.data, |v| go(v, &upd.data, pairs)),
        });
    }
    fn comb<T: Copy + PartialOrd>(
        a: T,
        b: T,
        red: ScatterReduction,
        add: fn(T, T) -> T,
        mul: fn(T, T) -> T,
    ) -> T {
        match red {
            ScatterReduction::Add => add(a, b),
            ScatterReduction::Mul => mul(a, b),
            ScatterReduction::Max => {
                if b > a {
                    b
                } else {
                    a
                }
            }
            ScatterReduction::Min => {
                if b < a {
                    b
                } else {
                    a
                }
            }
            ScatterReduction::None => b,
        }
    }
    fn apply<T: Copy + PartialOrd>(
        d: &mut [T],
        u: &[T],
        pairs: &[(usize, usize)],
        red: ScatterReduction,
        add: fn(T, T) -> T,
        mul: fn(T, T) -> T,
    ) {
        for &(di, ui) in pairs {
            d[di] = comb(d[di], u[ui], red, add, mul);
        }
    }
    let (dt, shape) = (data.dtype(), data.shape.clone());
    Ok(match (num(data), num(upd)) {
        (Num::F(d), Num::F(u)) => {
            let mut d = d.into_owned();
            apply(&mut d, &u, pairs, red, |a, b| a + b, |a, b| a * b);
            float_tensor(dt, shape, d)
        }
        (Num::D(d), Num::D(u)) => {
            let mut d = d.into_owned();
            apply(&mut d, &u, pairs, red, |a, b| a + b, |a, b| a * b);
            Tensor::from_f64(shape, d)
        }
        (Num::I(mut d), Num::I(u)) => {
            apply(&mut d, &u, pairs, red, i64::wrapping_add, i64::wrapping_mul);
            ints_to(dt, shape, d)
        }
        (Num::U(mut d), Num::U(u)) => {
            apply(&mut d, &u, pairs, red, u64::wrapping_add, u64::wrapping_mul);
            uints_to(dt, shape, d)
        }
        _ => return unsupported(format!("scatter reduction '{}' on {dt}", red.name())),
    })
}

pub(crate) fn scatter_elements(
    data: &Tensor,
    idx: &Tensor,
    upd: &Tensor,
    axis: usize,
    red: ScatterReduction,
) -> OpResult<Tensor> {
    let ds = strides(&data.shape);
    let iv = idx.to_i64_vec();
    let mut pos = vec![0; idx.rank()];
    let mut pairs = Vec::with_capacity(iv.len());
    for (p, &i) in iv.iter().enumerate() {
        unravel(p, &idx.shape, &mut pos);
        let mut dst = 0;
        for a in 0..pos.len() {
            let c = if a == axis {
                norm(i, data.shape[a], "ScatterElements")?
            } else {
                pos[a]
            };
            if c >= data.shape[a] {
                return invalid(format!(
                    "updates dim {a} ({}) exceeds the data's ({})",
                    idx.shape[a], data.shape[a]
                ));
            }
            dst += c * ds[a];
        }
        pairs.push((dst, p));
    }
    scatter_pairs(data, upd, &pairs, red)
}

pub(crate) fn scatter_nd(
    data: &Tensor,
    idx: &Tensor,
    upd: &Tensor,
    red: ScatterReduction,
) -> OpResult<Tensor> {
    let (offs, inner) = nd_offsets(&data.shape, idx, 0)?;
    let pairs: Vec<(usize, usize)> = offs
        .iter()
        .enumerate()
        .flat_map(|(t, &o)| (0..inner).map(move |e| (o + e, t * inner + e)))
        .collect();
    scatter_pairs(data, upd, &pairs, red)
}

/// The update's slices go to positions write_indices[b] + s (modulo the axis extent when
/// circular) along `axis` of each batch b (axis 0).
pub(crate) fn tensor_scatter(
    past: &Tensor,
    upd: &Tensor,
    wi: Option<&Tensor>,
    axis: usize,
    circular: bool,
) -> OpResult<Tensor> {
    let max = past.shape[axis];
    let seq = upd.shape[axis];
    let starts = match wi {
        Some(t) => t.to_i64_vec(),
        None => vec![0; past.shape.first().copied().unwrap_or(1)],
    };
    let outer: usize = past.shape[..axis].iter().product();
    let inner: usize = past.shape[axis + 1..].iter().product();
    let per_batch: usize = past.shape[1..axis.max(1)].iter().product::<usize>().max(1);
    let mut pairs = Vec::with_capacity(outer * seq * inner);
    for o in 0..outer {
        let b = if axis == 0 { 0 } else { o / per_batch };
        for s in 0..seq {
            let mut t = starts.get(b).copied().unwrap_or(0) + s as i64;
            if circular {
                t = t.rem_euclid(max as i64);
            }
            if t < 0 || t >= max as i64 {
                return invalid(format!("write position {t} is outside the cache's {max}"));
            }
            for e in 0..inner {
                pairs.push((
                    (o * max + t as usize) * inner + e,
                    (o * seq + s) * inner + e,
                ));
            }
        }
    }
    scatter_pairs(past, upd, &pairs, ScatterReduction::None)
}

pub(crate) fn reverse_sequence(
    x: &Tensor,
    lens: &Tensor,
    batch_axis: usize,
    time_axis: usize,
) -> OpResult<Tensor> {
    let lv = lens.to_i64_vec();
    let xs = strides(&x.shape);
    let mut pos = vec![0; x.rank()];
    let mut map = Vec::with_capacity(x.numel());
    for p in 0..x.numel() {
        unravel(p, &x.shape, &mut pos);
        let len = lv[pos[batch_axis]];
        if len < 0 || len as usize > x.shape[time_axis] {
            return invalid(format!(
                "sequence length {len} exceeds the time dim {}",
                x.shape[time_axis]
            ));
        }
        let t = pos[time_axis];
        let src_t = if t < len as usize {
            len as usize - 1 - t
        } else {
            t
        };
        map.push(p - t * xs[time_axis] + src_t * xs[time_axis]);
    }
    Ok(apply_map(x, x.shape.clone(), &map, 0.0))
}

/// Indices address the unpooled shape the kernel geometry gives; that block sits in the
/// leading corner of `out_shape` (the ONNX reference's reading of output_shape).
pub(crate) fn max_unpool(
    x: &Tensor,
    idx: &Tensor,
    kernel: &[usize],
    strides_: &[usize],
    pads: &[usize],
    out_shape: &[usize],
) -> OpResult<Tensor> {
    let r = kernel.len();
    let mut inferred = x.shape[..2].to_vec();
    for i in 0..r {
        inferred.push(
            ((x.shape[i + 2].max(1) - 1) * strides_[i] + kernel[i])
                .saturating_sub(pads[i] + pads[i + r]),
        );
    }
    let total: usize = inferred.iter().product();
    let mut src = vec![usize::MAX; total];
    for (p, &i) in idx.to_i64_vec().iter().enumerate() {
        let i = usize::try_from(i).ok().filter(|&i| i < total);
        match i {
            Some(i) => src[i] = p,
            None => {
                return invalid(format!(
                    "index {} is outside the unpooled size {total}",
                    idx.to_i64_vec()[p]
                ));
            }
        }
    }
    let ist = strides(&inferred);
    let mut pos = vec![0; out_shape.len()];
    let n: usize = out_shape.iter().product();
    let map: Vec<usize> = (0..n)
        .map(|p| {
            unravel(p, out_shape, &mut pos);
            if pos.iter().zip(&inferred).all(|(&c, &d)| c < d) {
                src[pos.iter().zip(&ist).map(|(c, s)| c * s).sum::<usize>()]
            } else {
                usize::MAX
            }
        })
        .collect();
    Ok(apply_map(x, out_shape.to_vec(), &map, 0.0))
}

/// numpy.compress: the slices along `axis` (of the flattened x when None) whose
/// condition is true; a shorter condition selects nothing past its end.
pub(crate) fn compress(x: &Tensor, cond: &Tensor, axis: Option<usize>) -> OpResult<Tensor> {
    let Some(c) = cond.as_bool() else {
        return unsupported(format!("Compress condition of {}", cond.dtype()));
    };
    let (shape, outer, len, inner) = match axis {
        None => (vec![x.numel()], 1, x.numel(), 1),
        Some(a) => (
            x.shape.clone(),
            x.shape[..a].iter().product(),
            x.shape[a],
            x.shape[a + 1..].iter().product(),
        ),
    };
    if c.len() > len {
        return invalid(format!(
            "condition of {} elements for a dim of {len}",
            c.len()
        ));
    }
    let keep: Vec<usize> = (0..c.len()).filter(|&i| c[i]).collect();
    let mut map = Vec::with_capacity(outer * keep.len() * inner);
    for o in 0..outer {
        for &k in &keep {
            map.extend((o * len + k) * inner..(o * len + k + 1) * inner);
        }
    }
    let mut out_shape = shape;
    let ax = axis.unwrap_or(0);
    out_shape[ax] = keep.len();
    Ok(apply_map(x, out_shape, &map, 0.0))
}

/// [rank, count] coordinates of the non-zero elements, row-major order.
pub(crate) fn nonzero(x: &Tensor) -> OpResult<Tensor> {
    let v = x.to_f64_vec();
    let nz: Vec<usize> = (0..v.len()).filter(|&i| v[i] != 0.0).collect();
    let r = x.rank();
    let mut out = vec![0i64; r * nz.len()];
    let mut pos = vec![0; r];
    for (j, &p) in nz.iter().enumerate() {
        unravel(p, &x.shape, &mut pos);
        for a in 0..r {
            out[a * nz.len() + j] = pos[a] as i64;
        }
    }
    Ok(Tensor::from_i64(vec![r, nz.len()], out))
}

/// MaxPool's Indices output: for every window, the flat position in x of its first
/// maximum (strictly greater replaces), skipping padding; the spatial part of the
/// position is row-major, or column-major (storage_order 1).
pub(crate) fn max_pool_indices(
    x: &Tensor,
    p: &pimkit_ir::PoolAttrs,
    column_major: bool,
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    let vals = super::order::order_keys(x, "MaxPool")?;
    let r = p.kernel.len();
    let sp = &x.shape[2..];
    let plane: usize = sp.iter().product();
    let os = &out_ty.shape[2..];
    let oplane: usize = os.iter().product();
    let planes = x.shape[0] * x.shape[1];
    // Position weights of the spatial coordinates in the returned index.
    let mut w = vec![1usize; r];
    if column_major {
        for a in 1..r {
            w[a] = w[a - 1] * sp[a - 1];
        }
    } else {
        for a in (0..r.saturating_sub(1)).rev() {
            w[a] = w[a + 1] * sp[a + 1];
        }
    }
    let rm = strides(sp);
    let kvol: usize = p.kernel.iter().product();
    let mut out = vec![-1i64; planes * oplane];
    let (mut opos, mut kpos) = (vec![0; r], vec![0; r]);
    for c in 0..planes {
        for o in 0..oplane {
            unravel(o, os, &mut opos);
            let mut best: Option<(f64, usize)> = None;
            for k in 0..kvol {
                unravel(k, &p.kernel, &mut kpos);
                let mut at = Some((0usize, 0usize));
                for a in 0..r {
                    let i = (opos[a] * p.strides[a] + kpos[a] * p.dilations[a]) as i64
                        - p.pads[a] as i64;
                    at = at
                        .filter(|_| (0..sp[a] as i64).contains(&i))
                        .map(|(f, s)| (f + i as usize * rm[a], s + i as usize * w[a]));
                }
                if let Some((flat, idx)) = at {
                    let v = vals[c * plane + flat];
                    if best.is_none_or(|(b, _)| v > b) {
                        best = Some((v, idx));
                    }
                }
            }
            if let Some((_, idx)) = best {
                out[c * oplane + o] = (c * plane + idx) as i64;
            }
        }
    }
    Ok(Tensor::from_i64(out_ty.shape.clone(), out))
}
