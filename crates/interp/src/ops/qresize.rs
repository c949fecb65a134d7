//! Resize on 8-bit data (the Resize a QOperator model keeps on quantized tensors), as
//! onnxruntime's NCHW kernels compute it: nearest copies codes; 2-D linear computes the
//! source coordinates in f32, mixes the four neighbours with f32 weights left to right
//! and truncates toward zero (no rounding); shared/reference/onnxruntime-quantized.md §9.

use crate::error::{OpError, OpResult, unsupported};
use pimkit_ir::{CoordMode, ResizeAttrs, ResizeMode, Tensor};

/// onnxruntime's `GetOriginalCoordinateFromResizedCoordinate` in f32.
fn source_coord(
    mode: CoordMode,
    o: usize,
    scale: f32,
    out_len: usize,
    in_len: usize,
) -> OpResult<f32> {
    let x = o as f32;
    Ok(match mode {
        CoordMode::HalfPixel => (x + 0.5) / scale - 0.5,
        CoordMode::Asymmetric => x / scale,
        CoordMode::PytorchHalfPixel => {
            if out_len > 1 {
                (x + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        CoordMode::AlignCorners => {
            if out_len == 1 {
                0.0
            } else {
                x * (in_len - 1) as f32 / (out_len - 1) as f32
            }
        }
        m => return unsupported(format!("8-bit linear Resize with coordinate mode {m:?}")),
    })
}

/// Per output index along one axis: (x1, x2, d1, d2) as the kernel's tables hold them.
fn axis_table(
    a: &ResizeAttrs,
    axis: usize,
    in_len: usize,
) -> OpResult<Vec<(usize, usize, f32, f32)>> {
    let out_len = a.sizes[axis];
    (0..out_len)
        .map(|o| {
            let s = a.scales[axis] as f32;
            let v = source_coord(a.coord, o, s, out_len, in_len)?;
            let v = v.max(0.0).min((in_len - 1) as f32);
            let x1 = (v as usize).min(in_len - 1);
            let x2 = (x1 + 1).min(in_len - 1);
            let (d1, d2) = if x1 == x2 {
                (0.5, 0.5)
            } else {
                ((v - x1 as f32).abs(), (v - x2 as f32).abs())
            };
            Ok((x1, x2, d1, d2))
        })
        .collect()
}

pub(crate) fn resize_q8(x: &Tensor, a: &ResizeAttrs) -> OpResult<Tensor> {
    let r = x.rank();
    let v = x.to_i32_vec();
    match a.mode {
        ResizeMode::Nearest(_) => {
            // Exact copies: the source index of every output element, axis by axis.
            let mut shape = x.shape.clone();
            let mut data = v;
            for axis in 0..r {
                if pimkit_ir::resize_axis_is_identity(a, axis, shape[axis]) {
                    continue;
                }
                let in_len = shape[axis];
                let taps = pimkit_ir::resize_axis_taps(a, axis, in_len);
                let outer: usize = shape[..axis].iter().product();
                let inner: usize = shape[axis + 1..].iter().product();
                let out_len = a.sizes[axis];
                let mut next = Vec::with_capacity(outer * out_len * inner);
                for o in 0..outer {
                    for t in &taps {
                        let src = match t {
                            pimkit_ir::AxisTaps::Mix(w) if w.len() == 1 => w[0].0,
                            _ => return unsupported("8-bit nearest Resize that extrapolates"),
                        };
                        next.extend_from_slice(&data[(o * in_len + src) * inner..][..inner]);
                    }
                }
                data = next;
                shape[axis] = out_len;
            }
            Ok(crate::ops::quant::q_tensor(x.dtype(), shape, data))
        }
        ResizeMode::Linear => {
            if r != 4 || a.sizes[0] != x.shape[0] || a.sizes[1] != x.shape[1] {
                return unsupported("8-bit linear Resize other than 2-D on an NCHW tensor");
            }
            let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
            let (oh, ow) = (a.sizes[2], a.sizes[3]);
            let ty = axis_table(a, 2, h)?;
            let tx = axis_table(a, 3, w)?;
            let mut out = Vec::with_capacity(n * c * oh * ow);
            for p in 0..n * c {
                let plane = &v[p * h * w..][..h * w];
                for &(y1, y2, dy1, dy2) in &ty {
                    for &(x1, x2, dx1, dx2) in &tx {
                        let g = |yy: usize, xx: usize| plane[yy * w + xx] as f32;
                        let val = dx2 * dy2 * g(y1, x1)
                            + dx1 * dy2 * g(y1, x2)
                            + dx2 * dy1 * g(y2, x1)
                            + dx1 * dy1 * g(y2, x2);
                        // static_cast to the 8-bit type: truncation toward zero.
                        out.push(val.trunc() as i32);
                    }
                }
            }
            let shape = vec![n, c, oh, ow];
            Ok(crate::ops::quant::q_tensor(x.dtype(), shape, out))
        }
        ResizeMode::Cubic => Err(OpError::Unsupported(
            "8-bit cubic Resize (onnxruntime's quantizer keeps such a Resize in float)".into(),
        )),
    }
}
