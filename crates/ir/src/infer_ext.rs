//! Shape and dtype inference for the ops added for the ONNX node suite (issue #16 item 4).

use crate::infer_shapes::{Ctx, pool_shape, rnn_types};
use crate::{DType, Op, Result, TensorType, conv_output_hw};

fn want_index<'a>(c: &Ctx<'a>, i: usize) -> Result<&'a TensorType> {
    let t = c.get(i)?;
    if !matches!(t.dtype, DType::I64 | DType::I32) {
        return Err(c.dtype_err(i, "i64 or i32 indices"));
    }
    Ok(t)
}

fn check_axis(c: &Ctx, axis: usize, rank: usize) -> Result<()> {
    if axis >= rank {
        return Err(c.err(format!("axis {axis} out of range for rank {rank}")));
    }
    Ok(())
}

pub(crate) fn infer(c: &Ctx, op: &Op) -> Result<Vec<TensorType>> {
    let one = |t: TensorType| Ok(vec![t]);
    match op {
        Op::GatherElements { axis } => {
            let x = c.get(0)?;
            let idx = want_index(c, 1)?;
            check_axis(c, *axis, x.rank())?;
            if idx.rank() != x.rank() {
                return Err(c.shape_err(1, format!("rank {}", x.rank())));
            }
            one(TensorType::new(x.dtype, idx.shape.clone()))
        }
        Op::GatherNd { batch_dims } => {
            let x = c.get(0)?;
            let idx = want_index(c, 1)?;
            let b = *batch_dims;
            let k = *idx
                .shape
                .last()
                .ok_or_else(|| c.shape_err(1, "rank >= 1"))?;
            if b >= idx.rank() || b + k > x.rank() || x.shape[..b] != idx.shape[..b] {
                return Err(c.shape_err(
                    1,
                    format!(
                        "[{:?}..., k <= {}] with batch_dims {b}",
                        &x.shape[..b.min(x.rank())],
                        x.rank() - b.min(x.rank())
                    ),
                ));
            }
            let mut s = idx.shape[..idx.rank() - 1].to_vec();
            s.extend(&x.shape[b + k..]);
            one(TensorType::new(x.dtype, s))
        }
        Op::ScatterElements { axis, .. } => {
            let x = c.get(0)?;
            let idx = want_index(c, 1)?;
            let u = c.get(2)?;
            check_axis(c, *axis, x.rank())?;
            if u.dtype != x.dtype {
                return Err(c.dtype_err(2, format!("{}", x.dtype)));
            }
            if idx.shape != u.shape || idx.rank() != x.rank() {
                return Err(c.shape_err(2, format!("the indices' shape {:?}", idx.shape)));
            }
            one(x.clone())
        }
        Op::ScatterNd { .. } => {
            let x = c.get(0)?;
            let idx = want_index(c, 1)?;
            let u = c.get(2)?;
            let k = *idx
                .shape
                .last()
                .ok_or_else(|| c.shape_err(1, "rank >= 1"))?;
            if k > x.rank() {
                return Err(c.shape_err(1, format!("last dim <= {}", x.rank())));
            }
            let mut want = idx.shape[..idx.rank() - 1].to_vec();
            want.extend(&x.shape[k..]);
            if u.dtype != x.dtype {
                return Err(c.dtype_err(2, format!("{}", x.dtype)));
            }
            if u.shape != want {
                return Err(c.shape_err(2, format!("{want:?}")));
            }
            one(x.clone())
        }
        Op::TensorScatter { axis, .. } => {
            let (x, u) = (c.get(0)?, c.get(1)?);
            check_axis(c, *axis, x.rank())?;
            let fits = u.rank() == x.rank()
                && (0..x.rank()).all(|i| {
                    if i == *axis {
                        u.shape[i] <= x.shape[i]
                    } else {
                        u.shape[i] == x.shape[i]
                    }
                });
            if !fits || u.dtype != x.dtype {
                return Err(c.shape_err(
                    1,
                    format!("{} fitting in {:?} along axis {axis}", x.dtype, x.shape),
                ));
            }
            if c.opt(2).is_some() {
                let w = want_index(c, 2)?;
                if x.rank() == 0 || w.shape != [x.shape[0]] {
                    return Err(
                        c.shape_err(2, format!("[{}]", x.shape.first().copied().unwrap_or(0)))
                    );
                }
            }
            one(x.clone())
        }
        Op::Cumulative { axis, .. } => {
            let x = c.get(0)?;
            check_axis(c, *axis, x.rank())?;
            if x.dtype == DType::Bool || x.dtype.is_minifloat() || x.dtype.is_subbyte_int() {
                return Err(c.dtype_err(0, "a number"));
            }
            one(x.clone())
        }
        Op::TopK { axis, k, .. } => {
            let x = c.get(0)?;
            check_axis(c, *axis, x.rank())?;
            if *k > x.shape[*axis] {
                return Err(c.err(format!("k = {k} exceeds dim {axis} ({})", x.shape[*axis])));
            }
            let mut s = x.shape.clone();
            s[*axis] = *k;
            Ok(vec![
                TensorType::new(x.dtype, s.clone()),
                TensorType::new(DType::I64, s),
            ])
        }
        Op::ArgMin { axis, keepdims, .. } => {
            let x = c.get(0)?;
            check_axis(c, *axis, x.rank())?;
            let mut s = x.shape.clone();
            if *keepdims {
                s[*axis] = 1;
            } else {
                s.remove(*axis);
            }
            one(TensorType::new(DType::I64, s))
        }
        Op::BitCast { to } => {
            let x = c.get(0)?;
            if x.dtype.bits() != to.bits() || x.dtype.is_minifloat() || x.dtype.is_subbyte_int() {
                return Err(c.dtype_err(0, format!("a type of {to}'s {} bits", to.bits())));
            }
            one(TensorType::new(*to, x.shape.clone()))
        }
        Op::Einsum { equation } => {
            let ins: Vec<&TensorType> = (0..c.inputs.len())
                .map(|i| c.get(i))
                .collect::<Result<_>>()?;
            let first = ins
                .first()
                .ok_or_else(|| c.err("needs at least one input"))?;
            for (i, t) in ins.iter().enumerate() {
                if t.dtype != first.dtype {
                    return Err(c.dtype_err(i, format!("{}", first.dtype)));
                }
            }
            let shapes: Vec<&[usize]> = ins.iter().map(|t| &t.shape[..]).collect();
            let spec = crate::einsum_spec(equation, &shapes)
                .map_err(|m| c.err(format!("equation '{equation}': {m}")))?;
            let s: Vec<usize> = spec.output.iter().map(|&l| spec.dims[l]).collect();
            one(TensorType::new(first.dtype, s))
        }
        Op::MaxUnpool {
            kernel,
            strides,
            pads,
            output_shape,
        } => {
            let x = c.get(0)?;
            let idx = c.get(1)?;
            let r = kernel.len();
            if x.rank() != r + 2 || strides.len() != r || pads.len() != 2 * r {
                return Err(c.shape_err(0, format!("[N, C, {r} spatial dims]")));
            }
            if idx.dtype != DType::I64 || idx.shape != x.shape {
                return Err(c.shape_err(1, format!("i64 {:?}", x.shape)));
            }
            let ok = output_shape.len() == r + 2
                && output_shape[..2] == x.shape[..2]
                && (0..r).all(|i| {
                    let inferred = ((x.shape[i + 2].max(1) - 1) * strides[i] + kernel[i])
                        .saturating_sub(pads[i] + pads[i + r]);
                    output_shape[i + 2] >= inferred
                });
            if !ok {
                return Err(c.err(format!(
                    "output shape {output_shape:?} does not hold the unpooled input"
                )));
            }
            one(TensorType::new(x.dtype, output_shape.clone()))
        }
        Op::ReverseSequence {
            batch_axis,
            time_axis,
        } => {
            let x = c.get(0)?;
            let lens = want_index(c, 1)?;
            if x.rank() < 2 || batch_axis == time_axis || *batch_axis > 1 || *time_axis > 1 {
                return Err(c.err("batch_axis and time_axis must be 0 and 1 (in some order) of a tensor of rank >= 2"));
            }
            if lens.shape != [x.shape[*batch_axis]] {
                return Err(c.shape_err(1, format!("[{}]", x.shape[*batch_axis])));
            }
            one(x.clone())
        }
        Op::Det => {
            let x = c.want_float(0)?;
            let r = x.rank();
            if r < 2 || x.shape[r - 1] != x.shape[r - 2] {
                return Err(c.shape_err(0, "[..., M, M]"));
            }
            one(TensorType::new(x.dtype, x.shape[..r - 2].to_vec()))
        }
        Op::Dft {
            axis,
            length,
            inverse,
            onesided,
        } => {
            let x = c.want_float(0)?;
            let r = x.rank();
            if r < 2 || !matches!(x.shape[r - 1], 1 | 2) {
                return Err(c.shape_err(0, "[..., n, 1 or 2]"));
            }
            if !inverse && *onesided && x.shape[r - 1] != 1 {
                return Err(c.shape_err(0, "real input [..., n, 1] for a onesided forward DFT"));
            }
            if *axis >= r - 1 || *length == 0 {
                return Err(c.err(format!(
                    "axis {axis} / length {length} invalid for rank {r}"
                )));
            }
            let mut s = x.shape.clone();
            match (inverse, onesided) {
                (false, true) => {
                    s[*axis] = length / 2 + 1;
                    s[r - 1] = 2;
                }
                (true, true) => {
                    s[*axis] = *length;
                    s[r - 1] = 1;
                }
                _ => {
                    s[*axis] = *length;
                    s[r - 1] = 2;
                }
            }
            one(TensorType::new(x.dtype, s))
        }
        Op::Stft {
            frame_step,
            frame_length,
            onesided,
        } => {
            let x = c.want_float(0)?;
            if x.rank() != 3 || !matches!(x.shape[2], 1 | 2) {
                return Err(c.shape_err(0, "[batch, length, 1 or 2]"));
            }
            if let Some(w) = c.opt(1)
                && (w.shape != [*frame_length] || w.dtype != x.dtype)
            {
                return Err(c.shape_err(1, format!("{} [{frame_length}]", x.dtype)));
            }
            if *frame_step == 0 || *frame_length == 0 || *frame_length > x.shape[1] {
                return Err(c.err(format!(
                    "frame length {frame_length} and step {frame_step} do not fit a signal of {}",
                    x.shape[1]
                )));
            }
            let frames = 1 + (x.shape[1] - frame_length) / frame_step;
            let bins = if *onesided {
                frame_length / 2 + 1
            } else {
                *frame_length
            };
            one(TensorType::new(x.dtype, vec![x.shape[0], frames, bins, 2]))
        }
        Op::Col2Im(a) => {
            let x = c.get(0)?;
            let r = a.image_shape.len();
            let bl: usize = a.block_shape.iter().product();
            let ok_attrs = a.block_shape.len() == r
                && a.dilations.len() == r
                && a.strides.len() == r
                && a.pads.len() == 2 * r;
            if !ok_attrs || x.rank() != 3 || bl == 0 || x.shape[1] % bl != 0 {
                return Err(c.shape_err(0, format!("[N, C·{bl}, blocks] for {r}-D blocks")));
            }
            let mut blocks = 1usize;
            for i in 0..r {
                let eff = a.dilations[i] * (a.block_shape[i] - 1) + 1;
                let padded = a.image_shape[i] + a.pads[i] + a.pads[i + r];
                if padded < eff || a.strides[i] == 0 {
                    return Err(c.err(format!(
                        "block {:?} does not fit image {:?}",
                        a.block_shape, a.image_shape
                    )));
                }
                blocks *= (padded - eff) / a.strides[i] + 1;
            }
            if x.shape[2] != blocks {
                return Err(c.shape_err(0, format!("{blocks} blocks on axis 2")));
            }
            let mut s = vec![x.shape[0], x.shape[1] / bl];
            s.extend(&a.image_shape);
            one(TensorType::new(x.dtype, s))
        }
        Op::GridSample { .. } => {
            let x = c.want_float(0)?;
            let g = c.get(1)?;
            let r = x.rank().saturating_sub(2);
            if r == 0 || g.rank() != r + 2 || g.shape[0] != x.shape[0] || g.shape[r + 1] != r {
                return Err(c.shape_err(
                    1,
                    format!("[{}, out..., {r}]", x.shape.first().copied().unwrap_or(0)),
                ));
            }
            let mut s = vec![x.shape[0], x.shape[1]];
            s.extend(&g.shape[1..=r]);
            one(TensorType::new(x.dtype, s))
        }
        Op::RoiAlign(a) => {
            let x = c.want_rank(0, 4)?;
            let rois = c.want_rank(1, 2)?;
            let bi = want_index(c, 2)?;
            if rois.shape[1] != 4 || rois.dtype != x.dtype {
                return Err(c.shape_err(1, format!("{} [R, 4]", x.dtype)));
            }
            if bi.shape != [rois.shape[0]] {
                return Err(c.shape_err(2, format!("[{}]", rois.shape[0])));
            }
            one(TensorType::new(
                x.dtype,
                vec![rois.shape[0], x.shape[1], a.output_height, a.output_width],
            ))
        }
        Op::DeformConv { conv, offset_group } => {
            let x = c.want_float(0)?;
            let w = c.want_float(1)?;
            let r = conv.kernel.len();
            if x.rank() != r + 2 || w.rank() != r + 2 || conv.group == 0 || *offset_group == 0 {
                return Err(c.shape_err(1, "[M, C/group, kernel...]"));
            }
            if x.shape[1] != w.shape[1] * conv.group
                || w.shape[0] % conv.group != 0
                || x.shape[1] % offset_group != 0
            {
                return Err(c.shape_err(
                    1,
                    format!(
                        "channels matching the input's {} in {} groups",
                        x.shape[1], conv.group
                    ),
                ));
            }
            let out = conv_output_hw(
                &x.shape[2..],
                &conv.kernel,
                &conv.strides,
                &conv.pads,
                &conv.dilations,
                false,
            )
            .ok_or_else(|| c.err("the kernel does not fit the padded input"))?;
            let kvol: usize = conv.kernel.iter().product();
            let mut os = vec![x.shape[0], offset_group * r * kvol];
            os.extend(&out);
            if c.get(2)?.shape != os {
                return Err(c.shape_err(2, format!("{os:?}")));
            }
            if let Some(b) = c.opt(3)
                && b.shape != [w.shape[0]]
            {
                return Err(c.shape_err(3, format!("[{}]", w.shape[0])));
            }
            if let Some(m) = c.opt(4) {
                let mut ms = vec![x.shape[0], offset_group * kvol];
                ms.extend(&out);
                if m.shape != ms {
                    return Err(c.shape_err(4, format!("{ms:?}")));
                }
            }
            let mut s = vec![x.shape[0], w.shape[0]];
            s.extend(out);
            one(TensorType::new(x.dtype, s))
        }
        Op::Rnn(a) => rnn_types(c, a, 1, 2),
        Op::DynamicQuantizeLinear => {
            let x = c.get(0)?;
            if x.dtype != DType::F32 {
                return Err(c.dtype_err(0, "f32"));
            }
            Ok(vec![
                TensorType::new(DType::U8, x.shape.clone()),
                TensorType::new(DType::F32, vec![]),
                TensorType::new(DType::U8, vec![]),
            ])
        }
        Op::NonZero { count } => {
            let x = c.get(0)?;
            one(TensorType::new(DType::I64, vec![x.rank(), *count]))
        }
        Op::Unique { axis, count, .. } => {
            let x = c.get(0)?;
            let (y, n) = match axis {
                None => (vec![*count], x.numel()),
                Some(a) => {
                    check_axis(c, *a, x.rank())?;
                    let mut s = x.shape.clone();
                    s[*a] = *count;
                    (s, x.shape[*a])
                }
            };
            Ok(vec![
                TensorType::new(x.dtype, y),
                TensorType::new(DType::I64, vec![*count]),
                TensorType::new(DType::I64, vec![n]),
                TensorType::new(DType::I64, vec![*count]),
            ])
        }
        Op::Compress { axis, count } => {
            let x = c.get(0)?;
            let cond = c.get(1)?;
            if cond.dtype != DType::Bool || cond.rank() != 1 {
                return Err(c.dtype_err(1, "a 1-D bool condition"));
            }
            let s = match axis {
                None => vec![*count],
                Some(a) => {
                    check_axis(c, *a, x.rank())?;
                    let mut s = x.shape.clone();
                    s[*a] = *count;
                    s
                }
            };
            one(TensorType::new(x.dtype, s))
        }
        Op::NonMaxSuppression { count, .. } => {
            let b = c.want_rank(0, 3)?;
            let s = c.want_rank(1, 3)?;
            if b.shape[2] != 4 || s.shape[0] != b.shape[0] || s.shape[2] != b.shape[1] {
                return Err(c.shape_err(1, format!("[{}, classes, {}]", b.shape[0], b.shape[1])));
            }
            one(TensorType::new(DType::I64, vec![*count, 3]))
        }
        Op::TfIdfVectorizer(a) => {
            let x = c.get(0)?;
            if !matches!(x.dtype, DType::I64 | DType::I32) {
                return Err(c.dtype_err(0, "i64 or i32 tokens"));
            }
            let ok = a.min_gram_length >= 1
                && a.min_gram_length <= a.max_gram_length
                && a.ngram_indexes.len() == count_ngrams(a)
                && (a.weights.is_empty() || a.weights.len() == a.output_size());
            if !ok || x.rank() > 2 {
                return Err(
                    c.err("inconsistent n-gram pool, indexes or weights, or input rank > 2")
                );
            }
            let s = if x.rank() == 2 {
                vec![x.shape[0], a.output_size()]
            } else {
                vec![a.output_size()]
            };
            one(TensorType::new(DType::F32, s))
        }
        Op::MaxPoolIndices { pool, .. } => {
            let x = c.get(0)?;
            if pool.kind != crate::PoolKind::Max {
                return Err(c.err("indices exist for max pooling only"));
            }
            one(TensorType::new(DType::I64, pool_shape(c, x, pool)?))
        }
        _ => Err(c.err("internal: not an op of infer_ext")),
    }
}

/// Number of n-grams in a TfIdfVectorizer pool (group i holds (i+1)-grams).
pub(crate) fn count_ngrams(a: &crate::TfIdfAttrs) -> usize {
    let total = a.pool.len();
    (0..a.ngram_counts.len())
        .map(|i| {
            let start = a.ngram_counts[i];
            let end = a.ngram_counts.get(i + 1).copied().unwrap_or(total);
            end.saturating_sub(start) / (i + 1)
        })
        .sum()
}
