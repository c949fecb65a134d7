//! Shape and dtype inference for every op. Given the input types it returns the output
//! types or an error naming the node and the offending input.

use crate::infer_shapes::{
    Ctx, broadcast_shapes, conv_shape, conv_transpose_shape, gemm_mn, matmul_shape, pool_shape,
    resize_shape, rnn_types,
};
use crate::{DType, Op, PadMode, Result, TensorType, UnaryOp, numel};

/// Infer the output types of `op` applied to inputs of the given types.
pub fn infer_types(node: &str, op: &Op, inputs: &[Option<&TensorType>]) -> Result<Vec<TensorType>> {
    let c = Ctx { node, op, inputs };
    let one = |t: TensorType| Ok(vec![t]);
    for (z, x) in op.zero_point_inputs(inputs.len()) {
        if let (Some(zt), Some(xt)) = (c.opt(z), c.opt(x))
            && zt.dtype != xt.dtype
        {
            return Err(c.dtype_err(
                z,
                format!(
                    "{0} (the type of input {x}); store the zero point as {0}",
                    xt.dtype
                ),
            ));
        }
    }
    match op {
        Op::Unary(u) => {
            let x = c.get(0)?;
            match u {
                UnaryOp::Not => {
                    if x.dtype != DType::Bool {
                        return Err(c.dtype_err(0, "bool"));
                    }
                    one(x.clone())
                }
                UnaryOp::IsNaN | UnaryOp::IsInf { .. } => {
                    one(TensorType::new(DType::Bool, x.shape.clone()))
                }
                UnaryOp::BitwiseNot => {
                    if !x.dtype.is_int() {
                        return Err(c.dtype_err(0, "an integer type"));
                    }
                    one(x.clone())
                }
                UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sign | UnaryOp::Relu => {
                    if x.dtype == DType::Bool {
                        return Err(c.dtype_err(0, "a numeric type"));
                    }
                    one(x.clone())
                }
                _ => {
                    c.want_float(0)?;
                    one(x.clone())
                }
            }
        }
        Op::Binary(b) => {
            let (x, y) = (c.get(0)?, c.get(1)?);
            if x.dtype != y.dtype && !matches!(b, crate::BinaryOp::Pow) {
                return Err(c.dtype_err(1, format!("{} (same as input 0)", x.dtype)));
            }
            // ONNX types: And/Or/Xor take bool only; Equal any type; the arithmetic and
            // ordering ops have no bool form.
            use crate::BinaryOp as B;
            match b {
                B::And | B::Or | B::Xor if x.dtype != DType::Bool => {
                    return Err(c.dtype_err(0, "bool"));
                }
                B::Equal | B::And | B::Or | B::Xor => {}
                B::BitwiseAnd | B::BitwiseOr | B::BitwiseXor if !x.dtype.is_int() => {
                    return Err(c.dtype_err(0, "an integer type"));
                }
                B::BitShift { .. } if !x.dtype.is_int() || x.dtype.is_signed_int() => {
                    return Err(c.dtype_err(0, "an unsigned integer type"));
                }
                _ if x.dtype == DType::Bool => {
                    return Err(c.dtype_err(0, "a numeric type (the op has no bool form)"));
                }
                _ => {}
            }
            let s = broadcast_shapes(&x.shape, &y.shape)
                .ok_or_else(|| c.shape_err(1, format!("broadcastable with {:?}", x.shape)))?;
            let dt = if b.yields_bool() {
                DType::Bool
            } else {
                x.dtype
            };
            one(TensorType::new(dt, s))
        }
        Op::Where => {
            let (cond, x, y) = (c.get(0)?, c.get(1)?, c.get(2)?);
            if cond.dtype != DType::Bool {
                return Err(c.dtype_err(0, "bool"));
            }
            if x.dtype != y.dtype {
                return Err(c.dtype_err(2, format!("{}", x.dtype)));
            }
            let s = broadcast_shapes(&cond.shape, &x.shape)
                .and_then(|s| broadcast_shapes(&s, &y.shape))
                .ok_or_else(|| c.shape_err(2, "broadcastable"))?;
            one(TensorType::new(x.dtype, s))
        }
        Op::Clip { .. } | Op::Identity => one(c.get(0)?.clone()),
        Op::Cast { to, .. } => one(TensorType::new(*to, c.get(0)?.shape.clone())),
        Op::Conv(a) => {
            let x = c.want_float(0)?;
            let w = c.want_float(1)?;
            let s = conv_shape(&c, x, w, a)?;
            if let Some(b) = c.opt(2)
                && b.shape != [s[1]]
            {
                return Err(c.shape_err(2, format!("[{}]", s[1])));
            }
            one(TensorType::new(x.dtype, s))
        }
        Op::ConvTranspose(a) => {
            let x = c.want_float(0)?;
            let w = c.want_float(1)?;
            let s = conv_transpose_shape(&c, x, w, a)?;
            if let Some(b) = c.opt(2)
                && b.shape != [s[1]]
            {
                return Err(c.shape_err(2, format!("[{}]", s[1])));
            }
            one(TensorType::new(x.dtype, s))
        }
        Op::PRelu => {
            let x = c.want_float(0)?;
            let slope = c.get(1)?;
            if slope.dtype != x.dtype {
                return Err(c.dtype_err(1, format!("{} (same as input 0)", x.dtype)));
            }
            if broadcast_shapes(&x.shape, &slope.shape).as_deref() != Some(&x.shape[..]) {
                return Err(c.shape_err(
                    1,
                    format!("unidirectionally broadcastable to {:?}", x.shape),
                ));
            }
            one(x.clone())
        }
        Op::Resize(a) => {
            // Float data, or 8-bit codes (a QOperator model resizes quantized tensors).
            let x = c.get(0)?;
            if !x.dtype.is_float() && !x.dtype.is_quant8() {
                return Err(c.dtype_err(0, "a float type, u8 or i8"));
            }
            one(TensorType::new(x.dtype, resize_shape(&c, x, a)?))
        }
        Op::Pool(p) => {
            let x = c.get(0)?;
            one(TensorType::new(x.dtype, pool_shape(&c, x, p)?))
        }
        Op::GlobalPool(_) => {
            let x = c.get(0)?;
            if x.rank() < 3 {
                return Err(c.shape_err(0, "rank >= 3 (N, C, spatial...)"));
            }
            let mut s = x.shape.clone();
            for d in s.iter_mut().skip(2) {
                *d = 1;
            }
            one(TensorType::new(x.dtype, s))
        }
        Op::Gemm {
            trans_a, trans_b, ..
        } => {
            let a = c.want_rank(0, 2)?;
            let b = c.want_rank(1, 2)?;
            let (m, n) = gemm_mn(&c, a, b, *trans_a, *trans_b, 1)?;
            if let Some(cc) = c.opt(2)
                && broadcast_shapes(&cc.shape, &[m, n]).as_deref() != Some(&[m, n][..])
            {
                return Err(c.shape_err(2, format!("unidirectionally broadcastable to [{m}, {n}]")));
            }
            one(TensorType::new(a.dtype, vec![m, n]))
        }
        Op::MatMul => {
            let (a, b) = (c.get(0)?, c.get(1)?);
            if a.dtype != b.dtype {
                return Err(c.dtype_err(1, format!("{}", a.dtype)));
            }
            one(TensorType::new(
                a.dtype,
                matmul_shape(&c, &a.shape, &b.shape, 0, 1)?,
            ))
        }
        Op::BatchNorm { .. } => {
            let x = c.get(0)?;
            if x.rank() < 2 {
                return Err(c.shape_err(0, "rank >= 2"));
            }
            for i in 1..5 {
                if c.get(i)?.shape != [x.shape[1]] {
                    return Err(c.shape_err(i, format!("[{}]", x.shape[1])));
                }
            }
            one(x.clone())
        }
        Op::LayerNorm { axis, .. } => {
            let x = c.get(0)?;
            if *axis >= x.rank() {
                return Err(c.err(format!("axis {axis} out of range for rank {}", x.rank())));
            }
            let norm = &x.shape[*axis..];
            for i in [1, 2] {
                if let Some(t) = c.opt(i)
                    && broadcast_shapes(&t.shape, norm).as_deref() != Some(norm)
                {
                    return Err(c.shape_err(i, format!("broadcastable to {norm:?}")));
                }
            }
            one(x.clone())
        }
        Op::Softmax { axis } | Op::LogSoftmax { axis } => {
            let x = c.want_float(0)?;
            if *axis >= x.rank() {
                return Err(c.err(format!("axis {axis} out of range for rank {}", x.rank())));
            }
            one(x.clone())
        }
        Op::Reduce { axes, keepdims, .. } => {
            let x = c.get(0)?;
            let mut s = Vec::new();
            for (i, &d) in x.shape.iter().enumerate() {
                if axes.contains(&i) {
                    if *keepdims {
                        s.push(1);
                    }
                } else {
                    s.push(d);
                }
            }
            if axes.iter().any(|&a| a >= x.rank()) {
                return Err(c.err(format!("axes {axes:?} out of range for rank {}", x.rank())));
            }
            one(TensorType::new(x.dtype, s))
        }
        Op::ArgMax { axis, keepdims, .. } => {
            let x = c.get(0)?;
            if *axis >= x.rank() {
                return Err(c.err(format!("axis {axis} out of range")));
            }
            let mut s = x.shape.clone();
            if *keepdims {
                s[*axis] = 1;
            } else {
                s.remove(*axis);
            }
            one(TensorType::new(DType::I64, s))
        }
        Op::Reshape { shape } => {
            let x = c.get(0)?;
            if numel(shape) != x.numel() {
                return Err(c.shape_err(
                    0,
                    format!("{} elements to reshape to {shape:?}", numel(shape)),
                ));
            }
            one(TensorType::new(x.dtype, shape.clone()))
        }
        Op::Transpose { perm } => {
            let x = c.get(0)?;
            let mut seen = vec![false; x.rank()];
            if perm.len() != x.rank()
                || perm
                    .iter()
                    .any(|&p| p >= x.rank() || std::mem::replace(&mut seen[p], true))
            {
                return Err(c.err(format!(
                    "perm {perm:?} is not a permutation of rank {}",
                    x.rank()
                )));
            }
            one(TensorType::new(
                x.dtype,
                perm.iter().map(|&p| x.shape[p]).collect::<Vec<usize>>(),
            ))
        }
        Op::Concat { axis } => {
            let first = c.get(0)?;
            if *axis >= first.rank() {
                return Err(c.err(format!(
                    "axis {axis} out of range for rank {}",
                    first.rank()
                )));
            }
            let mut s = first.shape.clone();
            s[*axis] = 0;
            for i in 0..inputs.len() {
                let t = c.get(i)?;
                if t.dtype != first.dtype {
                    return Err(c.dtype_err(i, format!("{}", first.dtype)));
                }
                if t.rank() != first.rank()
                    || t.shape
                        .iter()
                        .enumerate()
                        .any(|(d, &v)| d != *axis && v != first.shape[d])
                {
                    return Err(c.shape_err(i, format!("{:?} except on axis {axis}", first.shape)));
                }
                s[*axis] += t.shape[*axis];
            }
            one(TensorType::new(first.dtype, s))
        }
        Op::Split { axis, sizes } => {
            let x = c.get(0)?;
            if *axis >= x.rank() || sizes.iter().sum::<usize>() != x.shape[*axis] {
                return Err(c.err(format!(
                    "split sizes {sizes:?} do not sum to dim {axis} of {:?}",
                    x.shape
                )));
            }
            Ok(sizes
                .iter()
                .map(|&n| {
                    let mut s = x.shape.clone();
                    s[*axis] = n;
                    TensorType::new(x.dtype, s)
                })
                .collect())
        }
        Op::Slice { axes } => {
            let x = c.get(0)?;
            let mut s = x.shape.clone();
            for sa in axes {
                if sa.axis >= x.rank() || sa.step == 0 {
                    return Err(c.err(format!("bad slice on axis {} (step {})", sa.axis, sa.step)));
                }
                let n = if sa.step > 0 {
                    ((sa.end - sa.start).max(0) as usize).div_ceil(sa.step as usize)
                } else {
                    ((sa.start - sa.end).max(0) as usize).div_ceil((-sa.step) as usize)
                };
                s[sa.axis] = n;
            }
            one(TensorType::new(x.dtype, s))
        }
        Op::Gather { axis } => {
            let (x, idx) = (c.get(0)?, c.get(1)?);
            if *axis >= x.rank() {
                return Err(c.err(format!("axis {axis} out of range for rank {}", x.rank())));
            }
            if !matches!(idx.dtype, DType::I64 | DType::I32) {
                return Err(c.dtype_err(1, "i64 or i32 indices"));
            }
            let mut s = x.shape[..*axis].to_vec();
            s.extend(&idx.shape);
            s.extend(&x.shape[axis + 1..]);
            one(TensorType::new(x.dtype, s))
        }
        Op::Expand { shape } => {
            let x = c.get(0)?;
            let s = broadcast_shapes(&x.shape, shape)
                .ok_or_else(|| c.shape_err(0, format!("broadcastable to {shape:?}")))?;
            one(TensorType::new(x.dtype, s))
        }
        Op::Pad { pads, mode, .. } => {
            let x = c.get(0)?;
            let r = x.rank();
            if pads.len() != 2 * r {
                return Err(c.err(format!("{} pads for rank {r}", pads.len())));
            }
            if *mode == PadMode::Reflect
                && (0..r).any(|i| pads[i] >= x.shape[i].max(1) || pads[i + r] >= x.shape[i].max(1))
            {
                return Err(c.err("reflect padding must be smaller than the dimension"));
            }
            one(TensorType::new(
                x.dtype,
                (0..r)
                    .map(|i| x.shape[i] + pads[i] + pads[i + r])
                    .collect::<Vec<usize>>(),
            ))
        }
        Op::Tile { repeats } => {
            let x = c.get(0)?;
            if repeats.len() != x.rank() {
                return Err(c.err(format!("{} repeats for rank {}", repeats.len(), x.rank())));
            }
            one(TensorType::new(
                x.dtype,
                x.shape
                    .iter()
                    .zip(repeats)
                    .map(|(a, b)| a * b)
                    .collect::<Vec<usize>>(),
            ))
        }
        Op::Range { count } => {
            let t = c.get(0)?;
            for i in 0..3 {
                let ti = c.get(i)?;
                if ti.numel() != 1 || ti.dtype != t.dtype {
                    return Err(c.shape_err(i, format!("a scalar of {}", t.dtype)));
                }
            }
            if t.dtype == DType::Bool {
                return Err(c.dtype_err(0, "a number"));
            }
            one(TensorType::new(t.dtype, vec![*count]))
        }
        Op::If {
            then_branch,
            else_branch,
        } => crate::control::infer_if(node, then_branch, else_branch, inputs),
        Op::Loop {
            body,
            n_carried,
            scan_len,
        } => crate::control::infer_loop(node, body, *n_carried, *scan_len, inputs),
        Op::Scan { body, attrs } => crate::control::infer_scan(node, body, attrs, inputs),
        Op::Lstm(a) => rnn_types(&c, a, 4, 3),
        Op::Gru(a) => rnn_types(&c, a, 3, 2),
        Op::QuantizeLinear { axis, to } => {
            let x = c.want_float(0)?;
            let s = c.want_scale(1)?;
            if !to.is_quant8() && *to != DType::I32 {
                return Err(c.err(format!("output type {to} is not supported (i8/u8)")));
            }
            if s.rank() == 1 && s.numel() != 1 && (*axis >= x.rank() || x.shape[*axis] != s.numel())
            {
                return Err(c.shape_err(1, format!("per-axis scale of length dim {axis}")));
            }
            if let Some(z) = c.opt(2)
                && z.dtype != *to
            {
                return Err(c.dtype_err(2, format!("{to}")));
            }
            one(TensorType::new(*to, x.shape.clone()))
        }
        Op::DequantizeLinear { axis } => {
            let x = c.get(0)?;
            if !x.dtype.is_quant8() && x.dtype != DType::I32 {
                return Err(c.dtype_err(0, "i8, u8 or i32"));
            }
            let s = c.want_scale(1)?;
            if s.rank() == 1 && s.numel() != 1 && (*axis >= x.rank() || x.shape[*axis] != s.numel())
            {
                return Err(c.shape_err(1, format!("per-axis scale of length dim {axis}")));
            }
            one(TensorType::new(DType::F32, x.shape.clone()))
        }
        Op::QLinearMatMul => {
            let a = c.want_q8(0)?;
            let b = c.want_q8(3)?;
            c.want_scale(1)?;
            c.want_scale(4)?;
            c.want_scale(6)?;
            let yz = c.want_q8(7)?;
            one(TensorType::new(
                yz.dtype,
                matmul_shape(&c, &a.shape, &b.shape, 0, 3)?,
            ))
        }
        Op::QLinearConv(a) => {
            let x = c.want_q8(0)?;
            let w = c.want_q8(3)?;
            c.want_scale(1)?;
            c.want_scale(6)?;
            let ws = c.want_scale(4)?;
            let yz = c.want_q8(7)?;
            let s = conv_shape(&c, x, w, a)?;
            if ws.numel() != 1 && ws.numel() != s[1] {
                return Err(c.shape_err(4, format!("scalar or [{}] (per output channel)", s[1])));
            }
            if let Some(b) = c.opt(8) {
                if b.dtype != DType::I32 {
                    return Err(c.dtype_err(8, "i32"));
                }
                if b.shape != [s[1]] {
                    return Err(c.shape_err(8, format!("[{}]", s[1])));
                }
            }
            one(TensorType::new(yz.dtype, s))
        }
        Op::MatMulInteger => {
            let a = c.want_q8(0)?;
            let b = c.want_q8(1)?;
            one(TensorType::new(
                DType::I32,
                matmul_shape(&c, &a.shape, &b.shape, 0, 1)?,
            ))
        }
        Op::ConvInteger(a) => {
            let x = c.want_q8(0)?;
            let w = c.want_q8(1)?;
            one(TensorType::new(DType::I32, conv_shape(&c, x, w, a)?))
        }
        Op::QLinearAdd | Op::QLinearMul => {
            let a = c.want_q8(0)?;
            let b = c.want_q8(3)?;
            let s = broadcast_shapes(&a.shape, &b.shape)
                .ok_or_else(|| c.shape_err(3, format!("broadcastable with {:?}", a.shape)))?;
            let yz = c.opt(7).map(|t| t.dtype).unwrap_or(a.dtype);
            one(TensorType::new(yz, s))
        }
        Op::QLinearConcat { axis } => {
            let yz = c.want_q8(1)?;
            if inputs.len() < 5 || !(inputs.len() - 2).is_multiple_of(3) {
                return Err(c.err("expects y_scale, y_zp, then (x, x_scale, x_zp) triples"));
            }
            let first = c.get(2)?;
            if *axis >= first.rank() {
                return Err(c.err(format!("axis {axis} out of range")));
            }
            let mut s = first.shape.clone();
            s[*axis] = 0;
            for i in (2..inputs.len()).step_by(3) {
                let t = c.want_q8(i)?;
                if t.rank() != first.rank()
                    || t.shape
                        .iter()
                        .enumerate()
                        .any(|(d, &v)| d != *axis && v != first.shape[d])
                {
                    return Err(c.shape_err(i, format!("{:?} except on axis {axis}", first.shape)));
                }
                s[*axis] += t.shape[*axis];
            }
            one(TensorType::new(yz.dtype, s))
        }
        Op::QLinearAveragePool(p) => {
            let x = c.want_q8(0)?;
            let yz = c.opt(4).map(|t| t.dtype).unwrap_or(x.dtype);
            one(TensorType::new(yz, pool_shape(&c, x, p)?))
        }
        Op::QLinearSoftmax { axis, .. } => {
            let x = c.want_q8(0)?;
            if *axis >= x.rank().max(1) {
                return Err(c.err(format!("axis {axis} out of range for rank {}", x.rank())));
            }
            let yz = c.opt(4).map(|t| t.dtype).unwrap_or(x.dtype);
            one(TensorType::new(yz, x.shape.clone()))
        }
        Op::QLinearWhere => {
            let cond = c.get(0)?;
            if cond.dtype != DType::Bool {
                return Err(c.dtype_err(0, "bool"));
            }
            let (x, y) = (c.want_q8(1)?, c.want_q8(4)?);
            let s = broadcast_shapes(&cond.shape, &x.shape)
                .and_then(|s| broadcast_shapes(&s, &y.shape))
                .ok_or_else(|| c.err("cond, x and y are not broadcastable"))?;
            let zz = c.opt(8).map(|t| t.dtype).unwrap_or(x.dtype);
            one(TensorType::new(zz, s))
        }
        Op::QLinearGlobalAveragePool { channels_last } => {
            let x = c.want_q8(0)?;
            if x.rank() < 3 {
                return Err(c.shape_err(0, "rank >= 3"));
            }
            let mut s = x.shape.clone();
            let r = s.len();
            let spatial: Vec<usize> = if *channels_last {
                (1..r - 1).collect()
            } else {
                (2..r).collect()
            };
            for d in spatial {
                s[d] = 1;
            }
            let yz = c.opt(4).map(|t| t.dtype).unwrap_or(x.dtype);
            one(TensorType::new(yz, s))
        }
        Op::QGemm {
            trans_a, trans_b, ..
        } => {
            let a = c.want_q8(0)?;
            let b = c.want_q8(3)?;
            if a.rank() != 2 || b.rank() != 2 {
                return Err(c.err("QGemm operands must be 2-D"));
            }
            let (m, n) = gemm_mn(&c, a, b, *trans_a, *trans_b, 3)?;
            let dt = match c.opt(8) {
                Some(z) => z.dtype,
                None if c.opt(7).is_some() => DType::U8,
                None => DType::F32,
            };
            one(TensorType::new(dt, vec![m, n]))
        }
        Op::QLinearSigmoid | Op::QLinearLeakyRelu { .. } => {
            let x = c.want_q8(0)?;
            let yz = c.opt(4).map(|t| t.dtype).unwrap_or(x.dtype);
            one(TensorType::new(yz, x.shape.clone()))
        }
        // ---- ONNX node-suite coverage (issue #16 item 4) ----
        Op::GatherElements { .. }
        | Op::GatherNd { .. }
        | Op::ScatterElements { .. }
        | Op::ScatterNd { .. }
        | Op::TensorScatter { .. }
        | Op::Cumulative { .. }
        | Op::TopK { .. }
        | Op::ArgMin { .. }
        | Op::BitCast { .. }
        | Op::Einsum { .. }
        | Op::MaxUnpool { .. }
        | Op::ReverseSequence { .. }
        | Op::Det
        | Op::Dft { .. }
        | Op::Stft { .. }
        | Op::Col2Im(_)
        | Op::GridSample { .. }
        | Op::RoiAlign(_)
        | Op::DeformConv { .. }
        | Op::Rnn(_)
        | Op::DynamicQuantizeLinear
        | Op::NonZero { .. }
        | Op::Unique { .. }
        | Op::Compress { .. }
        | Op::NonMaxSuppression { .. }
        | Op::TfIdfVectorizer(_)
        | Op::MaxPoolIndices { .. } => crate::infer_ext::infer(&c, op),
    }
}
