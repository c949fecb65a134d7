//! Layers that grow feature maps, as PyTorch exports them: ConvTranspose
//! (nn.ConvTranspose*d), Resize (nn.Upsample / F.interpolate) and PRelu (nn.PReLU, kept
//! here as the third op added together).

use super::{Converter, Ctx, NodeIn};
use crate::attr::to_dim;
use crate::error::Result;
use pimkit_ir::{ConvTransposeAttrs, CoordMode, NearestMode, Op, ResizeAttrs, ResizeMode};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "PRelu"), prelu);
    r.insert(("", "ConvTranspose"), conv_transpose);
    r.insert(("", "Resize"), resize);
    r.insert(("", "Upsample"), resize);
}

fn prelu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let ins = vec![Some(ctx.value(n, 0)?), Some(ctx.value(n, 1)?)];
    ctx.emit(n, Op::PRelu, ins)?;
    Ok(())
}

/// ConvTranspose with `output_shape` and `auto_pad` resolved into pads and output_padding
/// (ONNX ConvTranspose-11 spec formulas; an output_shape larger than the natural extent
/// grows the end of the axis, as onnxruntime does).
fn conv_transpose(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let w = ctx.ty(n, 1)?;
    if w.rank() < 3 || x.rank() != w.rank() {
        return Err(ctx.err(
            n,
            format!(
                "input shape {:?} and weight shape {:?} do not form a transposed convolution",
                x.shape, w.shape
            ),
        ));
    }
    let r = x.rank() - 2;
    let kernel = a
        .usize_list("kernel_shape")?
        .unwrap_or_else(|| w.shape[2..].to_vec());
    if kernel.len() != r {
        return Err(a.err("kernel_shape", format!("must hold {r} values")));
    }
    let list = |name: &str, len: usize, default: usize, positive: bool| -> Result<Vec<usize>> {
        let v = a.usize_list(name)?.unwrap_or_else(|| vec![default; len]);
        if v.len() != len || (positive && v.contains(&0)) {
            let what = if positive { "positive " } else { "" };
            return Err(a.err(name, format!("must hold {len} {what}values")));
        }
        Ok(v)
    };
    let strides = list("strides", r, 1, true)?;
    let dilations = list("dilations", r, 1, true)?;
    let mut output_padding = list("output_padding", r, 0, false)?;
    let group = a.int("group", 1)?;
    let group = to_dim(group)
        .filter(|&g| g > 0)
        .ok_or_else(|| a.err("group", format!("{group} is not a positive group count")))?;
    let auto = a.string("auto_pad")?.unwrap_or_else(|| "NOTSET".into());
    let out_shape = match a.usize_list("output_shape")? {
        Some(v) if v.len() == r => Some(v),
        Some(v) if v.len() == r + 2 => Some(v[2..].to_vec()),
        Some(v) => {
            return Err(a.err(
                "output_shape",
                format!("has {} values, expected {r} spatial extents", v.len()),
            ));
        }
        None => None,
    };
    let pads = match (auto.as_str(), out_shape) {
        ("NOTSET", None) => list("pads", 2 * r, 0, false)?,
        ("VALID", None) => vec![0; 2 * r],
        (mode @ ("NOTSET" | "VALID" | "SAME_UPPER" | "SAME_LOWER"), target) => {
            let target =
                target.unwrap_or_else(|| (0..r).map(|i| x.shape[i + 2] * strides[i]).collect());
            let mut p = vec![0; 2 * r];
            for i in 0..r {
                let full = (strides[i] * x.shape[i + 2].saturating_sub(1)
                    + output_padding[i]
                    + dilations[i] * kernel[i].saturating_sub(1)
                    + 1) as i64;
                let total = full - target[i] as i64;
                if total < 0 {
                    output_padding[i] += (-total) as usize;
                    continue;
                }
                let total = total as usize;
                let (b, e) = if mode == "SAME_UPPER" {
                    (total / 2, total - total / 2)
                } else {
                    (total - total / 2, total / 2)
                };
                p[i] = b;
                p[i + r] = e;
            }
            p
        }
        (other, _) => return Err(a.err("auto_pad", format!("unknown value '{other}'"))),
    };
    let attrs = ConvTransposeAttrs {
        kernel,
        strides,
        pads,
        dilations,
        output_padding,
        group,
    };
    let ins = vec![
        ctx.opt_value(n, 0)?,
        ctx.opt_value(n, 1)?,
        ctx.opt_value(n, 2)?,
    ];
    ctx.emit(n, Op::ConvTranspose(attrs), ins)?;
    Ok(())
}

fn resize_modes(n: &NodeIn) -> Result<(ResizeMode, CoordMode)> {
    let a = n.attrs;
    let mode = a.string("mode")?.unwrap_or_else(|| "nearest".into());
    let upsample = n.op_type == "Upsample";
    let mode = match mode.as_str() {
        "nearest" => {
            let nm = a
                .string("nearest_mode")?
                .unwrap_or_else(|| "round_prefer_floor".into());
            // Upsample and Resize-10 have no nearest_mode: resolved from the scales in
            // `resize` (floor here as a placeholder).
            let nm = if upsample || n.opset < 11 {
                "floor".to_string()
            } else {
                nm
            };
            ResizeMode::Nearest(match nm.as_str() {
                "round_prefer_floor" => NearestMode::RoundPreferFloor,
                "round_prefer_ceil" => NearestMode::RoundPreferCeil,
                "floor" => NearestMode::Floor,
                "ceil" => NearestMode::Ceil,
                o => return Err(a.err("nearest_mode", format!("unknown value '{o}'"))),
            })
        }
        "linear" | "bilinear" => ResizeMode::Linear,
        "cubic" => ResizeMode::Cubic,
        o => {
            return Err(a.err(
                "mode",
                format!("unsupported value '{o}' (nearest, linear or cubic)"),
            ));
        }
    };
    let coord = if upsample || n.opset < 11 {
        CoordMode::Asymmetric
    } else {
        match a
            .string("coordinate_transformation_mode")?
            .unwrap_or_else(|| "half_pixel".into())
            .as_str()
        {
            "half_pixel" => CoordMode::HalfPixel,
            "half_pixel_symmetric" => CoordMode::HalfPixelSymmetric,
            "pytorch_half_pixel" => CoordMode::PytorchHalfPixel,
            "align_corners" => CoordMode::AlignCorners,
            "asymmetric" => CoordMode::Asymmetric,
            "tf_crop_and_resize" => CoordMode::TfCropAndResize,
            o => {
                return Err(a.err(
                    "coordinate_transformation_mode",
                    format!("unknown value '{o}'"),
                ));
            }
        }
    };
    Ok((mode, coord))
}

/// Resize (opsets 10, 11, 13, 18, 19) and the older Upsample. roi, scales and sizes must
/// be constants; `axes` and `keep_aspect_ratio_policy` are folded into per-axis values.
fn resize(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let rank = x.rank();
    let (mut mode, coord) = resize_modes(n)?;
    let antialias = a.int("antialias", 0)? != 0;
    if antialias && matches!(mode, ResizeMode::Nearest(_)) {
        return Err(a.err(
            "antialias",
            "applies to linear and cubic modes only, not nearest",
        ));
    }
    // Input slots: Upsample and Resize-10 are (x, scales); later Resize is
    // (x, roi, scales, sizes).
    let old = n.op_type == "Upsample" || n.opset < 11;
    let (roi_i, scales_i, sizes_i) = if old {
        (None, Some(1), None)
    } else {
        (Some(1), Some(2), Some(3))
    };
    let scales = match scales_i {
        Some(_) if n.op_type == "Upsample" && n.opset < 9 => a.floats("scales")?,
        Some(i) => ctx
            .const_input(n, i, "scales")?
            .map(|t| t.to_f32_vec())
            .filter(|v| !v.is_empty()),
        None => None,
    };
    let sizes = match sizes_i {
        Some(i) => ctx.const_ints(n, i, "sizes")?.filter(|v| !v.is_empty()),
        None => None,
    };
    let roi = match roi_i {
        Some(i) if coord == CoordMode::TfCropAndResize => ctx
            .const_input(n, i, "roi")?
            .map(|t| t.to_f32_vec())
            .filter(|v| !v.is_empty()),
        _ => None,
    };
    let axes: Vec<usize> = match a.ints("axes")? {
        None => (0..rank).collect(),
        Some(v) => {
            let mut out = Vec::new();
            for ax in v {
                let ax = crate::attr::norm_axis(ax, rank)
                    .ok_or_else(|| a.err("axes", format!("{ax} out of range for rank {rank}")))?;
                if out.contains(&ax) {
                    return Err(a.err("axes", format!("axis {ax} is repeated")));
                }
                out.push(ax);
            }
            out
        }
    };
    let k = axes.len();
    let mut full_scales = vec![1.0f64; rank];
    let mut full_sizes = x.shape.clone();
    match (scales, sizes) {
        (Some(_), Some(_)) => {
            return Err(ctx.err(n, "both scales and sizes are given; ONNX allows only one"));
        }
        (None, None) => {
            return Err(ctx.err(
                n,
                "neither scales nor sizes is given (or they are empty): pimkit needs one of \
                 them as a constant",
            ));
        }
        (Some(s), None) => {
            if s.len() != k {
                return Err(ctx.err(
                    n,
                    format!("scales has {} values for {k} resized axes", s.len()),
                ));
            }
            for (j, &ax) in axes.iter().enumerate() {
                if !(s[j].is_finite() && s[j] > 0.0) {
                    return Err(ctx.err(n, format!("scale {} of axis {ax} is not positive", s[j])));
                }
                full_scales[ax] = s[j] as f64;
                full_sizes[ax] = (x.shape[ax] as f64 * s[j] as f64).floor() as usize;
            }
        }
        (None, Some(sz)) => {
            if sz.len() != k {
                return Err(ctx.err(
                    n,
                    format!("sizes has {} values for {k} resized axes", sz.len()),
                ));
            }
            let mut want = Vec::with_capacity(k);
            for (j, &ax) in axes.iter().enumerate() {
                let d = to_dim(sz[j])
                    .filter(|&d| d > 0 && x.shape[ax] > 0)
                    .ok_or_else(|| {
                        ctx.err(n, format!("size {} of axis {ax} is not positive", sz[j]))
                    })?;
                want.push(d);
            }
            let policy = a
                .string("keep_aspect_ratio_policy")?
                .unwrap_or_else(|| "stretch".into());
            let ratio = |j: usize| want[j] as f64 / x.shape[axes[j]] as f64;
            let common = match policy.as_str() {
                "stretch" => None,
                "not_larger" => Some((0..k).map(ratio).fold(f64::INFINITY, f64::min)),
                "not_smaller" => Some((0..k).map(ratio).fold(0.0, f64::max)),
                o => return Err(a.err("keep_aspect_ratio_policy", format!("unknown value '{o}'"))),
            };
            for (j, &ax) in axes.iter().enumerate() {
                match common {
                    None => {
                        full_scales[ax] = ratio(j);
                        full_sizes[ax] = want[j];
                    }
                    Some(s) => {
                        full_scales[ax] = s;
                        // round half up, as the ONNX reference does
                        full_sizes[ax] = (s * x.shape[ax] as f64 + 0.5) as usize;
                    }
                }
            }
        }
    }
    if old && let ResizeMode::Nearest(_) = mode {
        // onnxruntime's pre-opset-11 rule: floor when upsampling, ceil when downsampling,
        // per axis; the IR has one rounding mode per node.
        let resized: Vec<f64> = full_scales.iter().copied().filter(|&s| s != 1.0).collect();
        if resized.iter().all(|&s| s < 1.0) && !resized.is_empty() {
            mode = ResizeMode::Nearest(NearestMode::Ceil);
        } else if resized.iter().any(|&s| s < 1.0) {
            return Err(ctx.err(
                n,
                format!(
                    "opset {} nearest resize mixes up- and downsampling axes (scales {:?}); \
                     pimkit supports one rounding mode per node, re-export with opset >= 11",
                    n.opset, full_scales
                ),
            ));
        }
    }
    let full_roi = match (coord, roi) {
        (CoordMode::TfCropAndResize, Some(roi)) => {
            if roi.len() != 2 * k {
                return Err(ctx.err(
                    n,
                    format!(
                        "roi has {} values, expected {} (starts, ends)",
                        roi.len(),
                        2 * k
                    ),
                ));
            }
            let mut full = [vec![0.0f32; rank], vec![1.0f32; rank]].concat();
            for (j, &ax) in axes.iter().enumerate() {
                full[ax] = roi[j];
                full[rank + ax] = roi[k + j];
            }
            full
        }
        (CoordMode::TfCropAndResize, None) => {
            return Err(ctx.err(n, "tf_crop_and_resize needs a constant roi input"));
        }
        _ => Vec::new(),
    };
    let attrs = ResizeAttrs {
        mode,
        coord,
        scales: full_scales,
        sizes: full_sizes,
        roi: full_roi,
        cubic_coeff_a: a.float("cubic_coeff_a", -0.75)?,
        exclude_outside: a.bool("exclude_outside", false)?,
        extrapolation_value: a.float("extrapolation_value", 0.0)?,
        antialias,
    };
    let xv = ctx.value(n, 0)?;
    ctx.emit(n, Op::Resize(attrs), vec![Some(xv)])?;
    Ok(())
}
