//! The shape rules inference shares between ops (broadcasting, conv/pool windows,
//! matmul, RNN outputs) and the context that names the node in their errors. Used by
//! `infer` (every op) and `infer_ext` (the node-suite ops), which do not use each other.

use crate::{DType, IrError, Op, PoolAttrs, Result, RnnAttrs, TensorType};

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

pub(crate) fn conv_shape(
    c: &Ctx,
    x: &TensorType,
    w: &TensorType,
    a: &crate::ConvAttrs,
) -> Result<Vec<usize>> {
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

pub(crate) fn conv_transpose_shape(
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

pub(crate) fn resize_shape(c: &Ctx, x: &TensorType, a: &crate::ResizeAttrs) -> Result<Vec<usize>> {
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

pub(crate) fn matmul_shape(
    c: &Ctx,
    a: &[usize],
    b: &[usize],
    ia: usize,
    ib: usize,
) -> Result<Vec<usize>> {
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
pub(crate) fn gemm_mn(
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
