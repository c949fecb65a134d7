//! Shape and dtype inference for every op. Given the input types it returns the output
//! types or an error naming the node and the offending input.

use crate::{DType, IrError, Op, PadMode, PoolAttrs, Result, RnnAttrs, TensorType, UnaryOp, numel};

pub(crate) struct Ctx<'a> {
    pub(crate) node: &'a str,
    pub(crate) op: &'a Op,
    pub(crate) inputs: &'a [Option<&'a TensorType>],
}

impl<'a> Ctx<'a> {
    pub(crate) fn err(&self, msg: impl Into<String>) -> IrError {
        IrError::Node {
            node: self.node.into(),
            op: self.op.name().into(),
            msg: msg.into(),
        }
    }
    pub(crate) fn get(&self, i: usize) -> Result<&'a TensorType> {
        self.inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| self.err(format!("required input {i} is missing")))
    }
    pub(crate) fn opt(&self, i: usize) -> Option<&'a TensorType> {
        self.inputs.get(i).copied().flatten()
    }
    pub(crate) fn shape_err(&self, i: usize, expected: impl Into<String>) -> IrError {
        IrError::Shape {
            node: self.node.into(),
            op: self.op.name().into(),
            index: i,
            got: self.opt(i).map(|t| t.shape.clone()).unwrap_or_default(),
            expected: expected.into(),
        }
    }
    pub(crate) fn dtype_err(&self, i: usize, expected: impl Into<String>) -> IrError {
        IrError::DType {
            node: self.node.into(),
            op: self.op.name().into(),
            index: i,
            got: self.opt(i).map(|t| t.dtype).unwrap_or(DType::F32),
            expected: expected.into(),
        }
    }
    pub(crate) fn want_rank(&self, i: usize, r: usize) -> Result<&'a TensorType> {
        let t = self.get(i)?;
        if t.rank() != r {
            return Err(self.shape_err(i, format!("rank {r}")));
        }
        Ok(t)
    }
    pub(crate) fn want_float(&self, i: usize) -> Result<&'a TensorType> {
        let t = self.get(i)?;
        if !t.dtype.is_float() {
            return Err(self.dtype_err(i, "f32 or f16"));
        }
        Ok(t)
    }
    pub(crate) fn want_q8(&self, i: usize) -> Result<&'a TensorType> {
        let t = self.get(i)?;
        if !t.dtype.is_quant8() {
            return Err(self.dtype_err(i, "i8 or u8"));
        }
        Ok(t)
    }
    /// A quantization scale: f32 scalar or 1-D (per axis).
    pub(crate) fn want_scale(&self, i: usize) -> Result<&'a TensorType> {
        let t = self.get(i)?;
        if t.dtype != DType::F32 {
            return Err(self.dtype_err(i, "f32 scale"));
        }
        Ok(t)
    }
}

/// Numpy broadcasting of two shapes; `None` if incompatible.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let da = if i + a.len() >= r {
            a[i + a.len() - r]
        } else {
            1
        };
        let db = if i + b.len() >= r {
            b[i + b.len() - r]
        } else {
            1
        };
        out[i] = if da == db {
            da
        } else if da == 1 {
            db
        } else if db == 1 {
            da
        } else {
            return None;
        };
    }
    Some(out)
}

/// Output spatial extents of a convolution or pooling window.
pub fn conv_output_hw(
    input: &[usize],
    kernel: &[usize],
    strides: &[usize],
    pads: &[usize],
    dilations: &[usize],
    ceil_mode: bool,
) -> Option<Vec<usize>> {
    let r = kernel.len();
    let mut out = Vec::with_capacity(r);
    for i in 0..r {
        let padded = input[i] + pads[i] + pads[i + r];
        let eff = dilations[i] * (kernel[i].checked_sub(1)?) + 1;
        if padded < eff || strides[i] == 0 {
            return None;
        }
        let num = padded - eff;
        let mut o = if ceil_mode {
            num.div_ceil(strides[i]) + 1
        } else {
            num / strides[i] + 1
        };
        // ONNX/PyTorch: the last window must start inside the input or left padding.
        if ceil_mode && (o - 1) * strides[i] >= input[i] + pads[i] {
            o -= 1;
        }
        out.push(o);
    }
    Some(out)
}

fn conv_shape(c: &Ctx, x: &TensorType, w: &TensorType, a: &crate::ConvAttrs) -> Result<Vec<usize>> {
    let r = a.kernel.len();
    if x.rank() != r + 2 {
        return Err(c.shape_err(0, format!("rank {} (N, C, {r} spatial dims)", r + 2)));
    }
    if w.rank() != r + 2 {
        return Err(c.shape_err(1, format!("rank {} (M, C/group, kernel)", r + 2)));
    }
    if a.strides.len() != r || a.dilations.len() != r || a.pads.len() != 2 * r || a.group == 0 {
        return Err(c.err("strides/dilations/pads/group do not match the kernel rank"));
    }
    if w.shape[2..] != a.kernel[..] {
        return Err(c.shape_err(1, format!("kernel {:?}", a.kernel)));
    }
    let cin = x.shape[1];
    let m = w.shape[0];
    if !cin.is_multiple_of(a.group) || !m.is_multiple_of(a.group) || w.shape[1] * a.group != cin {
        return Err(c.shape_err(
            1,
            format!(
                "[M, {}/{}, ..] for {} input channels in {} groups",
                cin, a.group, cin, a.group
            ),
        ));
    }
    let hw = conv_output_hw(
        &x.shape[2..],
        &a.kernel,
        &a.strides,
        &a.pads,
        &a.dilations,
        false,
    )
    .ok_or_else(|| {
        c.err(format!(
            "kernel {:?} does not fit input {:?} with pads {:?}",
            a.kernel,
            &x.shape[2..],
            a.pads
        ))
    })?;
    let mut s = vec![x.shape[0], m];
    s.extend(hw);
    Ok(s)
}

/// Output extents of a transposed convolution (see [`crate::ConvTransposeAttrs`]).
pub fn conv_transpose_output_hw(
    input: &[usize],
    a: &crate::ConvTransposeAttrs,
) -> Option<Vec<usize>> {
    let r = a.kernel.len();
    if input.len() != r
        || a.strides.len() != r
        || a.dilations.len() != r
        || a.pads.len() != 2 * r
        || a.output_padding.len() != r
    {
        return None;
    }
    (0..r)
        .map(|i| {
            if input[i] == 0 || a.strides[i] == 0 || a.dilations[i] == 0 {
                return None;
            }
            let full = a.strides[i].checked_mul(input[i] - 1)?
                + a.output_padding[i]
                + a.dilations[i].checked_mul(a.kernel[i].checked_sub(1)?)?
                + 1;
            full.checked_sub(a.pads[i] + a.pads[i + r])
                .filter(|&o| o > 0)
        })
        .collect()
}

fn conv_transpose_shape(
    c: &Ctx,
    x: &TensorType,
    w: &TensorType,
    a: &crate::ConvTransposeAttrs,
) -> Result<Vec<usize>> {
    let r = a.kernel.len();
    if x.rank() != r + 2 {
        return Err(c.shape_err(0, format!("rank {} (N, C, {r} spatial dims)", r + 2)));
    }
    if w.rank() != r + 2 {
        return Err(c.shape_err(1, format!("rank {} (C, M/group, kernel)", r + 2)));
    }
    if a.group == 0 || w.shape[2..] != a.kernel[..] || w.shape[0] != x.shape[1] {
        return Err(c.shape_err(
            1,
            format!(
                "[{}, M/{}, {:?}] (input channels, output channels per group, kernel)",
                x.shape[1], a.group, a.kernel
            ),
        ));
    }
    if !x.shape[1].is_multiple_of(a.group) {
        return Err(c.err(format!(
            "{} input channels are not divisible by group {}",
            x.shape[1], a.group
        )));
    }
    let hw = conv_transpose_output_hw(&x.shape[2..], a).ok_or_else(|| {
        c.err(format!(
            "strides/dilations/pads/output_padding do not match kernel {:?}, or pads {:?} crop the whole output of input {:?}",
            a.kernel,
            a.pads,
            &x.shape[2..]
        ))
    })?;
    let mut s = vec![x.shape[0], w.shape[1] * a.group];
    s.extend(hw);
    Ok(s)
}

fn resize_shape(c: &Ctx, x: &TensorType, a: &crate::ResizeAttrs) -> Result<Vec<usize>> {
    let r = x.rank();
    if a.scales.len() != r || a.sizes.len() != r {
        return Err(c.err(format!(
            "{} scales and {} sizes for an input of rank {r}",
            a.scales.len(),
            a.sizes.len()
        )));
    }
    if a.scales.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return Err(c.err(format!("scales {:?} must be positive and finite", a.scales)));
    }
    if a.antialias && matches!(a.mode, crate::ResizeMode::Nearest(_)) {
        return Err(c.err("antialias applies to linear and cubic modes only"));
    }
    let tf = a.coord == crate::CoordMode::TfCropAndResize;
    if (tf && a.roi.len() != 2 * r) || (!tf && !a.roi.is_empty()) {
        return Err(c.err(format!(
            "roi has {} values; tf_crop_and_resize needs {} (starts, ends), other modes none",
            a.roi.len(),
            2 * r
        )));
    }
    if x.shape.contains(&0) && a.sizes.iter().zip(&x.shape).any(|(o, i)| o != i) {
        return Err(c.shape_err(0, "no empty axis (nothing to interpolate from)"));
    }
    Ok(a.sizes.clone())
}

pub(crate) fn pool_shape(c: &Ctx, x: &TensorType, p: &PoolAttrs) -> Result<Vec<usize>> {
    let r = p.kernel.len();
    if x.rank() != r + 2 {
        return Err(c.shape_err(0, format!("rank {}", r + 2)));
    }
    if p.strides.len() != r || p.dilations.len() != r || p.pads.len() != 2 * r {
        return Err(c.err("strides/dilations/pads do not match the kernel rank"));
    }
    let hw = conv_output_hw(
        &x.shape[2..],
        &p.kernel,
        &p.strides,
        &p.pads,
        &p.dilations,
        p.ceil_mode,
    )
    .ok_or_else(|| c.err("pooling window does not fit the input"))?;
    let mut s = x.shape[..2].to_vec();
    s.extend(hw);
    Ok(s)
}

fn matmul_shape(c: &Ctx, a: &[usize], b: &[usize], ia: usize, ib: usize) -> Result<Vec<usize>> {
    if a.is_empty() || b.is_empty() {
        return Err(c.err("matmul operands must have rank >= 1"));
    }
    let a2: Vec<usize> = if a.len() == 1 {
        vec![1, a[0]]
    } else {
        a.to_vec()
    };
    let b2: Vec<usize> = if b.len() == 1 {
        vec![b[0], 1]
    } else {
        b.to_vec()
    };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != k2 {
        return Err(c.shape_err(ib, format!("inner dimension {k} to match input {ia}")));
    }
    let batch = broadcast_shapes(&a2[..a2.len() - 2], &b2[..b2.len() - 2])
        .ok_or_else(|| c.shape_err(ib, "batch dims broadcastable"))?;
    let mut s = batch;
    if a.len() > 1 {
        s.push(m);
    }
    if b.len() > 1 {
        s.push(n);
    }
    Ok(s)
}

/// Output extents [m, n] of a (possibly transposed) 2-D product; `ib` is b's input index.
fn gemm_mn(
    c: &Ctx,
    a: &TensorType,
    b: &TensorType,
    trans_a: bool,
    trans_b: bool,
    ib: usize,
) -> Result<(usize, usize)> {
    let (m, k) = if trans_a {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let (k2, n) = if trans_b {
        (b.shape[1], b.shape[0])
    } else {
        (b.shape[0], b.shape[1])
    };
    if k != k2 {
        return Err(c.shape_err(ib, format!("inner dimension {k}")));
    }
    Ok((m, n))
}

pub(crate) fn rnn_types(
    c: &Ctx,
    a: &RnnAttrs,
    gates: usize,
    nout: usize,
) -> Result<Vec<TensorType>> {
    let x = c.want_rank(0, 3)?;
    let w = c.want_rank(1, 3)?;
    let r = c.want_rank(2, 3)?;
    let dirs = a.direction.num_directions();
    let h = a.hidden_size;
    let (seq, batch, feat) = if a.batch_first {
        (x.shape[1], x.shape[0], x.shape[2])
    } else {
        (x.shape[0], x.shape[1], x.shape[2])
    };
    if w.shape != [dirs, gates * h, feat] {
        return Err(c.shape_err(1, format!("[{dirs}, {}, {feat}]", gates * h)));
    }
    if r.shape != [dirs, gates * h, h] {
        return Err(c.shape_err(2, format!("[{dirs}, {}, {h}]", gates * h)));
    }
    if let Some(b) = c.opt(3)
        && b.shape != [dirs, 2 * gates * h]
    {
        return Err(c.shape_err(3, format!("[{dirs}, {}]", 2 * gates * h)));
    }
    if c.opt(4).is_some() {
        return Err(c.err("sequence_lens is not supported (static full-length sequences only)"));
    }
    let state = if a.batch_first {
        vec![batch, dirs, h]
    } else {
        vec![dirs, batch, h]
    };
    for i in 5..5 + nout - 1 {
        if let Some(t) = c.opt(i)
            && t.shape != state
        {
            return Err(c.shape_err(i, format!("{state:?}")));
        }
    }
    let y = if a.batch_first {
        vec![batch, seq, dirs, h]
    } else {
        vec![seq, dirs, batch, h]
    };
    let mut out = vec![TensorType::new(x.dtype, y)];
    for _ in 1..nout {
        out.push(TensorType::new(x.dtype, state.clone()));
    }
    Ok(out)
}

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
            if s.rank() == 1 && s.numel() > 1 && (*axis >= x.rank() || x.shape[*axis] != s.numel())
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
            if s.rank() == 1 && s.numel() > 1 && (*axis >= x.rank() || x.shape[*axis] != s.numel())
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
