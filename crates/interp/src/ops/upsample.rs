//! PRelu, ConvTranspose and Resize: the layers that PyTorch decoders and segmentation
//! heads use to grow feature maps.

use crate::elem::{broadcast_map, float_tensor, floats, sgemm, strides};
use crate::error::{OpError, OpResult};
use pimkit_ir::{AxisTaps, ConvTransposeAttrs, ResizeAttrs, Tensor, conv_transpose_output_hw};

/// `x < 0 ? slope * x : x`, slope unidirectionally broadcast to x.
pub(crate) fn prelu(x: &Tensor, slope: &Tensor) -> OpResult<Tensor> {
    if x.shape.len() < slope.shape.len() {
        return Err(OpError::Invalid(
            "slope has a higher rank than the input".into(),
        ));
    }
    let xf = floats(x);
    let sf = floats(slope);
    let map = broadcast_map(&slope.shape, &x.shape);
    let v = xf
        .iter()
        .zip(&map)
        .map(|(&v, &i)| if v < 0.0 { v * sf[i] } else { v })
        .collect();
    Ok(float_tensor(x.dtype(), x.shape.clone(), v))
}

/// Transposed convolution as GEMM + col2im (the formulation of the ONNX reference and of
/// onnxruntime): per image and group, `col[mg*kvol, in_vol] = W_g^T x_g`, then every
/// column entry is added to the output position `in*stride + k*dilation - pad_begin`.
pub(crate) fn conv_transpose(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvTransposeAttrs,
) -> OpResult<Tensor> {
    let r = a.kernel.len();
    let bad = |m: &str| Err(OpError::Invalid(m.to_string()));
    if x.shape.len() != r + 2 || w.shape.len() != r + 2 || a.group == 0 {
        return bad("input/weight rank does not match the kernel rank");
    }
    let (n, cin) = (x.shape[0], x.shape[1]);
    if w.shape[0] != cin || cin % a.group != 0 || w.shape[2..] != a.kernel[..] {
        return bad("weight shape does not match input channels, group and kernel");
    }
    let in_sp = &x.shape[2..];
    let out_sp = conv_transpose_output_hw(in_sp, a)
        .ok_or_else(|| OpError::Invalid("pads crop the whole output".into()))?;
    let (cg, mg) = (cin / a.group, w.shape[1]);
    let m = mg * a.group;
    let in_vol: usize = in_sp.iter().product();
    let out_vol: usize = out_sp.iter().product();
    let kv: usize = a.kernel.iter().product();
    // dest[kidx * in_vol + p]: output offset hit by kernel tap kidx from input position p.
    let dest = scatter_table(in_sp, &out_sp, a);
    let xf = floats(x);
    let wf = floats(w);
    let mut out = vec![0f32; n * m * out_vol];
    let mut col = vec![0f32; mg * kv * in_vol];
    for b in 0..n {
        for g in 0..a.group {
            let xs = &xf[(b * cin + g * cg) * in_vol..][..cg * in_vol];
            let ws = &wf[g * cg * mg * kv..][..cg * mg * kv];
            // ws is [cg, mg*kv] row-major; read it transposed.
            sgemm(
                mg * kv,
                cg,
                in_vol,
                1.0,
                ws,
                1,
                mg * kv,
                xs,
                in_vol,
                1,
                0.0,
                &mut col,
            );
            for c in 0..mg {
                let o = &mut out[(b * m + g * mg + c) * out_vol..][..out_vol];
                let cc = &col[c * kv * in_vol..][..kv * in_vol];
                for (&d, &v) in dest.iter().zip(cc) {
                    if d != usize::MAX {
                        o[d] += v;
                    }
                }
            }
        }
    }
    if let Some(bias) = bias {
        let bf = floats(bias);
        for (i, o) in out.chunks_mut(out_vol.max(1)).enumerate() {
            let bv = bf[i % m];
            o.iter_mut().for_each(|v| *v += bv);
        }
    }
    let mut shape = vec![n, m];
    shape.extend(out_sp);
    Ok(float_tensor(x.dtype(), shape, out))
}

fn scatter_table(in_sp: &[usize], out_sp: &[usize], a: &ConvTransposeAttrs) -> Vec<usize> {
    let r = in_sp.len();
    let kv: usize = a.kernel.iter().product();
    let in_vol: usize = in_sp.iter().product();
    let ostr = strides(out_sp);
    let mut t = Vec::with_capacity(kv * in_vol);
    let mut ks = vec![0usize; r];
    let mut ps = vec![0usize; r];
    for kidx in 0..kv {
        unravel(kidx, &a.kernel, &mut ks);
        for p in 0..in_vol {
            unravel(p, in_sp, &mut ps);
            let mut off = 0usize;
            let mut ok = true;
            for i in 0..r {
                let o =
                    (ps[i] * a.strides[i] + ks[i] * a.dilations[i]) as isize - a.pads[i] as isize;
                if o < 0 || o as usize >= out_sp[i] {
                    ok = false;
                    break;
                }
                off += o as usize * ostr[i];
            }
            t.push(if ok { off } else { usize::MAX });
        }
    }
    t
}

fn unravel(mut i: usize, shape: &[usize], out: &mut [usize]) {
    for d in (0..shape.len()).rev() {
        out[d] = i % shape[d];
        i /= shape[d];
    }
}

/// Resize, separably one axis at a time in f64 (the ONNX reference's order), with the
/// taps of [`pimkit_ir::resize_axis_taps`].
pub(crate) fn resize(x: &Tensor, a: &ResizeAttrs) -> OpResult<Tensor> {
    let r = x.shape.len();
    if a.sizes.len() != r || a.scales.len() != r {
        return Err(OpError::Invalid(
            "scales/sizes do not match the input rank".into(),
        ));
    }
    let mut shape = x.shape.clone();
    let mut data: Vec<f64> = floats(x).iter().map(|&v| v as f64).collect();
    for axis in 0..r {
        if pimkit_ir::resize_axis_is_identity(a, axis, shape[axis]) {
            continue;
        }
        let in_len = shape[axis];
        if in_len == 0 {
            return Err(OpError::Invalid(format!("axis {axis} is empty")));
        }
        let taps = pimkit_ir::resize_axis_taps(a, axis, in_len);
        let outer: usize = shape[..axis].iter().product();
        let inner: usize = shape[axis + 1..].iter().product();
        let out_len = a.sizes[axis];
        let mut next = vec![0f64; outer * out_len * inner];
        for o in 0..outer {
            let src = &data[o * in_len * inner..][..in_len * inner];
            let dst = &mut next[o * out_len * inner..][..out_len * inner];
            for (j, t) in taps.iter().enumerate() {
                let d = &mut dst[j * inner..][..inner];
                match t {
                    AxisTaps::Extrapolate => d.fill(a.extrapolation_value as f64),
                    AxisTaps::Mix(v) => {
                        for &(i, wt) in v {
                            let s = &src[i * inner..][..inner];
                            d.iter_mut().zip(s).for_each(|(d, &s)| *d += wt * s);
                        }
                    }
                }
            }
        }
        data = next;
        shape[axis] = out_len;
    }
    Ok(float_tensor(
        x.dtype(),
        shape,
        data.into_iter().map(|v| v as f32).collect(),
    ))
}
