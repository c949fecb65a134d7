//! Native IR ops of the ONNX node suite without a family of their own: BitCast, Einsum,
//! Det, DynamicQuantizeLinear, Col2Im, RoiAlign, DeformConv and TfIdfVectorizer.

use super::nn::conv_attrs;
use super::{Converter, Ctx, NodeIn};
use crate::error::Result;
use crate::tensor::dtype_from_onnx;
use pimkit_ir::{Col2ImAttrs, Op, RoiAlignAttrs, TfIdfAttrs, TfIdfMode};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "BitCast"), bitcast);
    r.insert(("", "Einsum"), einsum);
    r.insert(("", "Det"), det);
    r.insert(("", "DynamicQuantizeLinear"), dynamic_quantize_linear);
    r.insert(("", "Col2Im"), col2im);
    r.insert(("", "RoiAlign"), roi_align);
    r.insert(("", "DeformConv"), deform_conv);
    r.insert(("", "TfIdfVectorizer"), tfidf);
}

fn bitcast(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let code = n
        .attrs
        .opt_int("to")?
        .ok_or_else(|| n.attrs.err("to", "is required"))?;
    let to = dtype_from_onnx(code as i32, &format!("node '{}' attribute 'to'", n.name))?;
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::BitCast { to }, vec![Some(x)])?;
    Ok(())
}

fn einsum(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let equation = n
        .attrs
        .string("equation")?
        .ok_or_else(|| n.attrs.err("equation", "is required"))?;
    let ins = ctx.all_values(n)?;
    ctx.emit(n, Op::Einsum { equation }, ins)?;
    Ok(())
}

fn det(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Det, vec![Some(x)])?;
    Ok(())
}

fn dynamic_quantize_linear(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::DynamicQuantizeLinear, vec![Some(x)])?;
    Ok(())
}

fn dims(ctx: &mut Ctx, n: &NodeIn, i: usize, what: &str) -> Result<Vec<usize>> {
    let v = ctx
        .const_ints(n, i, what)?
        .ok_or_else(|| ctx.err(n, format!("the {what} input is missing")))?;
    v.iter()
        .map(|&d| crate::attr::to_dim(d).filter(|&d| d > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| ctx.err(n, format!("the {what} {v:?} must be positive")))
}

fn col2im(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let image_shape = dims(ctx, n, 1, "image shape")?;
    let block_shape = dims(ctx, n, 2, "block shape")?;
    let r = image_shape.len();
    let attrs = Col2ImAttrs {
        dilations: a.usize_list("dilations")?.unwrap_or_else(|| vec![1; r]),
        pads: a.usize_list("pads")?.unwrap_or_else(|| vec![0; 2 * r]),
        strides: a.usize_list("strides")?.unwrap_or_else(|| vec![1; r]),
        image_shape,
        block_shape,
    };
    if attrs.dilations.contains(&0) || attrs.strides.contains(&0) {
        return Err(ctx.err(n, "dilations and strides must be positive"));
    }
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Col2Im(attrs), vec![Some(x)])?;
    Ok(())
}

fn roi_align(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let max = match a.string("mode")?.as_deref().unwrap_or("avg") {
        "avg" => false,
        "max" => true,
        m => return Err(a.err("mode", format!("'{m}' is not avg or max"))),
    };
    let default_mode = if n.opset >= 16 {
        "half_pixel"
    } else {
        "output_half_pixel"
    };
    let half_pixel = match a
        .string("coordinate_transformation_mode")?
        .as_deref()
        .unwrap_or(default_mode)
    {
        "half_pixel" => true,
        "output_half_pixel" => false,
        m => {
            return Err(a.err(
                "coordinate_transformation_mode",
                format!("'{m}' is not half_pixel or output_half_pixel"),
            ));
        }
    };
    let size = |name: &str| -> Result<usize> {
        let v = a.int(name, 1)?;
        crate::attr::to_dim(v)
            .filter(|&d| d > 0)
            .ok_or_else(|| a.err(name, format!("{v} is not positive")))
    };
    let ratio = a.int("sampling_ratio", 0)?;
    let attrs = RoiAlignAttrs {
        max,
        output_height: size("output_height")?,
        output_width: size("output_width")?,
        sampling_ratio: crate::attr::to_dim(ratio)
            .ok_or_else(|| a.err("sampling_ratio", format!("{ratio} is negative")))?,
        spatial_scale: a.float("spatial_scale", 1.0)?,
        half_pixel,
    };
    let ins = ctx.all_values(n)?;
    ctx.emit(n, Op::RoiAlign(attrs), ins)?;
    Ok(())
}

fn deform_conv(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let x = ctx.ty(n, 0)?;
    let w = ctx.ty(n, 1)?;
    let conv = conv_attrs(ctx, n, &x.shape, &w.shape)?;
    let og = n.attrs.int("offset_group", 1)?;
    let offset_group = crate::attr::to_dim(og)
        .filter(|&g| g > 0)
        .ok_or_else(|| n.attrs.err("offset_group", format!("{og} is not positive")))?;
    let ins = ctx.all_values(n)?;
    ctx.emit(n, Op::DeformConv { conv, offset_group }, ins)?;
    Ok(())
}

/// TfIdfVectorizer over integer tokens (`pool_strings` needs string tensors, which pimkit
/// does not have).
fn tfidf(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    if a.has("pool_strings") {
        return Err(a.err(
            "pool_strings",
            "string pools are not supported (pimkit has no string tensors)",
        ));
    }
    let mode = match a.string("mode")?.as_deref() {
        Some("TF") => TfIdfMode::Tf,
        Some("IDF") => TfIdfMode::Idf,
        Some("TFIDF") => TfIdfMode::TfIdf,
        m => return Err(a.err("mode", format!("{m:?} is not TF, IDF or TFIDF"))),
    };
    let size = |name: &str| -> Result<usize> {
        let v = a.int(name, 0)?;
        crate::attr::to_dim(v).ok_or_else(|| a.err(name, format!("{v} is negative")))
    };
    let list = |name: &str| -> Result<Vec<usize>> { Ok(a.usize_list(name)?.unwrap_or_default()) };
    let attrs = TfIdfAttrs {
        mode,
        min_gram_length: size("min_gram_length")?,
        max_gram_length: size("max_gram_length")?,
        max_skip_count: size("max_skip_count")?,
        ngram_counts: list("ngram_counts")?,
        ngram_indexes: list("ngram_indexes")?,
        pool: a.ints("pool_int64s")?.unwrap_or_default(),
        weights: a.floats("weights")?.unwrap_or_default(),
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::TfIdfVectorizer(attrs), vec![Some(x)])?;
    Ok(())
}
