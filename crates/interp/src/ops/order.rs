//! Ordering ops of the ONNX node suite: TopK, ArgMin, CumSum/CumProd, Unique and
//! NonMaxSuppression (the ONNX reference's greedy algorithm, which onnxruntime shares).

use super::elementwise::{Num, ints_to, num, uints_to};
use super::shape::apply_map;
use crate::elem::float_tensor;
use crate::error::{OpResult, invalid, unsupported};
use pimkit_ir::{DType, Tensor, TensorType};
use std::cmp::Ordering;

/// Values as f64 sort keys (integers convert exactly up to 2^53).
pub(crate) fn order_keys(x: &Tensor, op: &str) -> OpResult<Vec<f64>> {
    if x.dtype() == DType::Bool {
        return unsupported(format!("{op} on bool tensors"));
    }
    Ok(x.to_f64_vec())
}

/// NaN sorts above every number (numpy and onnxruntime keep NaN as the largest).
fn cmp(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b)
        .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

pub(crate) fn argmin(x: &Tensor, axis: usize, last: bool, out_ty: &TensorType) -> OpResult<Tensor> {
    let vals = order_keys(x, "ArgMin")?;
    let len = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let mut best = 0usize;
            for j in 1..len {
                let (v, b) = (
                    vals[(o * len + j) * inner + i],
                    vals[(o * len + best) * inner + i],
                );
                if v < b || (last && v == b) {
                    best = j;
                }
            }
            out.push(best as i64);
        }
    }
    Ok(Tensor::from_i64(out_ty.shape.clone(), out))
}

/// Values and i64 indices of the k largest (smallest) elements along `axis`, sorted,
/// ties broken by the lower index.
pub(crate) fn topk(x: &Tensor, axis: usize, k: usize, largest: bool) -> OpResult<Vec<Tensor>> {
    let vals = order_keys(x, "TopK")?;
    let len = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let mut shape = x.shape.clone();
    shape[axis] = k;
    let mut map = vec![0usize; outer * k * inner];
    let mut idx = vec![0i64; outer * k * inner];
    let mut order: Vec<usize> = Vec::with_capacity(len);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * len + j) * inner + i;
            order.clear();
            order.extend(0..len);
            order.sort_by(|&a, &b| {
                let c = cmp(vals[at(a)], vals[at(b)]);
                let c = if largest { c.reverse() } else { c };
                c.then(a.cmp(&b))
            });
            for (r, &j) in order.iter().take(k).enumerate() {
                let p = (o * k + r) * inner + i;
                map[p] = at(j);
                idx[p] = j as i64;
            }
        }
    }
    Ok(vec![
        apply_map(x, shape.clone(), &map, 0.0),
        Tensor::from_i64(shape, idx),
    ])
}

/// Running sum or product along `axis` (exclusive: shifted by one, starting from the
/// identity; reverse: from the end). f32 accumulates in f32 as onnxruntime does,
/// integers wrap.
pub(crate) fn cumulative(
    x: &Tensor,
    axis: usize,
    exclusive: bool,
    reverse: bool,
    prod: bool,
) -> OpResult<Tensor> {
    let len = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    fn scan<T: Copy>(
        v: &mut [T],
        len: usize,
        inner: usize,
        outer: usize,
        ex: bool,
        rev: bool,
        id: T,
        f: impl Fn(T, T) -> T,
    ) {
        for o in 0..outer {
            for i in 0..inner {
                let mut acc = id;
                for s in 0..len {
                    let j = if rev { len - 1 - s } else { s };
                    let p = (o * len + j) * inner + i;
                    let cur = v[p];
                    if ex {
                        v[p] = acc;
                        acc = f(acc, cur);
                    } else {
                        acc = f(acc, cur);
                        v[p] = acc;
                    }
                }
            }
        }
    }
    let (dt, shape) = (x.dtype(), x.shape.clone());
    Ok(match num(x) {
        Num::F(v) => {
            let mut v = v.into_owned();
            if prod {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    1.0,
                    |a, b| a * b,
                );
            } else {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    0.0,
                    |a, b| a + b,
                );
            }
            float_tensor(dt, shape, v)
        }
        Num::D(v) => {
            let mut v = v.into_owned();
            if prod {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    1.0,
                    |a, b| a * b,
                );
            } else {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    0.0,
                    |a, b| a + b,
                );
            }
            Tensor::from_f64(shape, v)
        }
        Num::I(mut v) => {
            if prod {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    1,
                    i64::wrapping_mul,
                );
            } else {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    0,
                    i64::wrapping_add,
                );
            }
            ints_to(dt, shape, v)
        }
        Num::U(mut v) => {
            if prod {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    1,
                    u64::wrapping_mul,
                );
            } else {
                scan(
                    &mut v,
                    len,
                    inner,
                    outer,
                    exclusive,
                    reverse,
                    0,
                    u64::wrapping_add,
                );
            }
            uints_to(dt, shape, v)
        }
        Num::B(_) => return unsupported("CumSum/CumProd on bool tensors"),
    })
}

/// numpy.unique with return_index, return_inverse and return_counts: unique elements
/// (or slices along `axis`), sorted ascending, or in order of first occurrence when not
/// `sorted`. Returns [y, indices, inverse_indices, counts].
pub(crate) fn unique(x: &Tensor, axis: Option<usize>, sorted: bool) -> OpResult<Vec<Tensor>> {
    let vals = order_keys(x, "Unique")?;
    let (outer, len, inner) = match axis {
        None => (1, x.numel(), 1),
        Some(a) => (
            x.shape[..a].iter().product(),
            x.shape[a],
            x.shape[a + 1..].iter().product(),
        ),
    };
    // Slice j as a key: its elements in row-major order of the other axes.
    let key = |j: usize| -> Vec<f64> {
        let mut k = Vec::with_capacity(outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                k.push(vals[(o * len + j) * inner + i]);
            }
        }
        k
    };
    let keys: Vec<Vec<f64>> = (0..len).map(key).collect();
    let lex = |a: &Vec<f64>, b: &Vec<f64>| -> Ordering {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| cmp(x, y))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    };
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| lex(&keys[a], &keys[b]).then(a.cmp(&b)));
    // Groups of equal keys in sorted order: (first occurrence, members).
    let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
    for &j in &order {
        match groups.last_mut() {
            Some((_, m)) if lex(&keys[m[0]], &keys[j]) == Ordering::Equal => m.push(j),
            _ => groups.push((j, vec![j])),
        }
    }
    if !sorted {
        groups.sort_by_key(|g| g.0);
    }
    let count = groups.len();
    let mut inverse = vec![0i64; len];
    for (g, (_, members)) in groups.iter().enumerate() {
        for &m in members {
            inverse[m] = g as i64;
        }
    }
    let firsts: Vec<usize> = groups.iter().map(|g| g.0).collect();
    let (y_shape, map) = match axis {
        None => (vec![count], firsts.clone()),
        Some(a) => {
            let mut s = x.shape.clone();
            s[a] = count;
            let mut map = Vec::with_capacity(outer * count * inner);
            for o in 0..outer {
                for &f in &firsts {
                    map.extend((o * len + f) * inner..(o * len + f + 1) * inner);
                }
            }
            (s, map)
        }
    };
    Ok(vec![
        apply_map(x, y_shape, &map, 0.0),
        Tensor::from_i64(vec![count], firsts.iter().map(|&f| f as i64).collect()),
        Tensor::from_i64(vec![len], inverse),
        Tensor::from_i64(
            vec![count],
            groups.iter().map(|g| g.1.len() as i64).collect(),
        ),
    ])
}

fn scalar_input(t: Option<&Tensor>) -> Option<f64> {
    t.filter(|t| t.numel() > 0).map(|t| t.to_f64_vec()[0])
}

/// Whether box a suppresses box b (IoU > threshold), the reference's box arithmetic.
fn suppresses(a: &[f64], b: &[f64], center: bool, iou: f64) -> bool {
    let span = |lo: f64, hi: f64| if lo <= hi { (lo, hi) } else { (hi, lo) };
    let (ax, ay, bx, by) = if center {
        (
            (a[0] - a[2] / 2.0, a[0] + a[2] / 2.0),
            (a[1] - a[3] / 2.0, a[1] + a[3] / 2.0),
            (b[0] - b[2] / 2.0, b[0] + b[2] / 2.0),
            (b[1] - b[3] / 2.0, b[1] + b[3] / 2.0),
        )
    } else {
        (
            span(a[1], a[3]),
            span(a[0], a[2]),
            span(b[1], b[3]),
            span(b[0], b[2]),
        )
    };
    let (ix0, ix1) = (ax.0.max(bx.0), ax.1.min(bx.1));
    let (iy0, iy1) = (ay.0.max(by.0), ay.1.min(by.1));
    if ix1 <= ix0 || iy1 <= iy0 {
        return false;
    }
    let inter = (ix1 - ix0) * (iy1 - iy0);
    let area_a = (ax.1 - ax.0) * (ay.1 - ay.0);
    let area_b = (bx.1 - bx.0) * (by.1 - by.0);
    let union = area_a + area_b - inter;
    if inter <= 0.0 || area_a <= 0.0 || area_b <= 0.0 || union <= 0.0 {
        return false;
    }
    inter / union > iou
}

/// Selected [batch, class, box] triples: per batch and class, boxes by descending score
/// (ties: lower index first) above score_threshold, greedily kept unless a kept box
/// overlaps them by more than iou_threshold, at most max_output_boxes_per_class.
pub(crate) fn non_max_suppression(
    boxes: &Tensor,
    scores: &Tensor,
    max_out: Option<&Tensor>,
    iou: Option<&Tensor>,
    score_th: Option<&Tensor>,
    center: bool,
) -> OpResult<Tensor> {
    // Constant folding runs this before type inference has seen the node: check shapes.
    if boxes.shape.len() != 3
        || boxes.shape[2] != 4
        || scores.shape.len() != 3
        || scores.shape[0] != boxes.shape[0]
        || scores.shape[2] != boxes.shape[1]
    {
        return invalid(format!(
            "boxes {:?} and scores {:?}: expected [batch, boxes, 4] and [batch, classes, boxes]",
            boxes.shape, scores.shape
        ));
    }
    let (nb, nboxes, ncls) = (boxes.shape[0], boxes.shape[1], scores.shape[1]);
    let bv = boxes.to_f64_vec();
    let sv = scores.to_f64_vec();
    let max_out = scalar_input(max_out).unwrap_or(0.0).max(0.0) as usize;
    let iou = scalar_input(iou).unwrap_or(0.0);
    let score_th = scalar_input(score_th);
    if !(0.0..=1.0).contains(&iou) {
        return invalid(format!("iou_threshold {iou} is not in [0, 1]"));
    }
    let mut out = Vec::new();
    for b in 0..nb {
        let bx = |i: usize| &bv[(b * nboxes + i) * 4..(b * nboxes + i) * 4 + 4];
        for c in 0..ncls {
            let sc = |i: usize| sv[(b * ncls + c) * nboxes + i];
            let mut cand: Vec<usize> = (0..nboxes)
                .filter(|&i| score_th.is_none_or(|t| sc(i) > t))
                .collect();
            cand.sort_by(|&i, &j| cmp(sc(j), sc(i)).then(i.cmp(&j)));
            let mut kept: Vec<usize> = Vec::new();
            for i in cand {
                if kept.len() >= max_out {
                    break;
                }
                if kept.iter().all(|&k| !suppresses(bx(i), bx(k), center, iou)) {
                    kept.push(i);
                    out.extend([b as i64, c as i64, i as i64]);
                }
            }
        }
    }
    let n = out.len() / 3;
    Ok(Tensor::from_i64(vec![n, 3], out))
}
