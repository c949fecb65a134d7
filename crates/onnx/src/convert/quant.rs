//! Quantized ops: (De)QuantizeLinear (per tensor and per axis), QLinearMatMul,
//! QLinearConv, MatMulInteger, ConvInteger, and the com.microsoft QOperator kernels that
//! onnxruntime's quantize_static emits.

use super::{Converter, Ctx, MS, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use crate::tensor::dtype_from_onnx;
use pimkit_ir::{DType, Op, Tensor};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "QuantizeLinear"), qdq);
    r.insert(("", "DequantizeLinear"), qdq);
    r.insert(("", "QLinearMatMul"), passthrough);
    r.insert(("", "MatMulInteger"), passthrough);
    r.insert(("", "QLinearConv"), conv);
    r.insert(("", "ConvInteger"), conv);
    for op in [
        "QLinearAdd",
        "QLinearMul",
        "QLinearSigmoid",
        "QLinearLeakyRelu",
        "QLinearConcat",
        "QLinearGlobalAveragePool",
        "QGemm",
        "QLinearWhere",
    ] {
        r.insert((MS, op), passthrough);
    }
    r.insert((MS, "QLinearAveragePool"), qlinear_avg_pool);
    r.insert((MS, "QLinearSoftmax"), qlinear_softmax);
}

/// com.microsoft QLinearAveragePool: AveragePool's attributes (NCHW only).
fn qlinear_avg_pool(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    if a.bool("channels_last", false)? {
        return Err(a.err(
            "channels_last",
            "NHWC input (channels_last = 1) is not supported; onnxruntime's quantizer writes NCHW",
        ));
    }
    let x = ctx.ty(n, 0)?;
    if x.rank() < 3 {
        return Err(ctx.err(
            n,
            format!("input has rank {}, expected N, C, spatial", x.rank()),
        ));
    }
    let kernel = a
        .usize_list("kernel_shape")?
        .ok_or_else(|| a.err("kernel_shape", "is required"))?;
    let (strides, dilations, pads) = super::window::window(&a, kernel.clone(), &x.shape[2..])?;
    let p = pimkit_ir::PoolAttrs {
        kind: pimkit_ir::PoolKind::Avg,
        kernel,
        strides,
        pads,
        dilations,
        ceil_mode: a.bool("ceil_mode", false)?,
        count_include_pad: a.bool("count_include_pad", false)?,
    };
    let ins = ctx.all_values(n)?;
    ctx.emit(n, Op::QLinearAveragePool(p), ins)?;
    Ok(())
}

/// com.microsoft QLinearSoftmax: `opset` (the model's ai.onnx opset, written by the
/// quantizer) picks the semantics: before 13, softmax over the flattened axes
/// [axis, rank); from 13, over one axis. The axis defaults to -1 in both cases: that is
/// what onnxruntime 1.32 computes (tested: without `axis`, an opset-12 node reduces the
/// last axis alone, not [1, rank)).
fn qlinear_softmax(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let opset = a.opt_int("opset")?.ok_or_else(|| {
        a.err(
            "opset",
            "is required (the quantizer writes the model's opset)",
        )
    })?;
    let r = ctx.ty(n, 0)?.rank();
    let ax = a.int("axis", -1)?;
    let axis = norm_axis(ax, r)
        .filter(|&v| v < r.max(1))
        .ok_or_else(|| a.err("axis", format!("{ax} out of range for rank {r}")))?;
    let ins = ctx.all_values(n)?;
    ctx.emit(
        n,
        Op::QLinearSoftmax {
            axis,
            flatten: opset < 13,
        },
        ins,
    )?;
    Ok(())
}

fn qdq(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let scale = ctx.ty(n, 1)?;
    if a.int("block_size", 0)? != 0 {
        return Err(a.err("block_size", "blocked quantization is not supported"));
    }
    let ax = a.int("axis", 1)?;
    let per_axis = scale.rank() == 1 && scale.numel() > 1;
    let axis = match norm_axis(ax, x.rank()).filter(|&v| v < x.rank()) {
        Some(v) => v,
        None if !per_axis => ax.max(0) as usize,
        None => return Err(a.err("axis", format!("{ax} out of range for rank {}", x.rank()))),
    };
    let ins = vec![
        ctx.opt_value(n, 0)?,
        ctx.opt_value(n, 1)?,
        ctx.opt_value(n, 2)?,
    ];
    let op = if n.op_type == "QuantizeLinear" {
        // Output type: the zero point's, else `output_dtype` (opset 21), else uint8.
        let to = match n.input(2) {
            Some(_) => ctx.ty(n, 2)?.dtype,
            None => match a.opt_int("output_dtype")? {
                Some(0) | None => DType::U8,
                Some(c) => dtype_from_onnx(c as i32, "output_dtype")
                    .map_err(|e| a.err("output_dtype", e.to_string()))?,
            },
        };
        Op::QuantizeLinear { axis, to }
    } else {
        Op::DequantizeLinear { axis }
    };
    ctx.emit(n, op, ins)?;
    Ok(())
}

fn conv(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let w_index = if n.op_type == "QLinearConv" { 3 } else { 1 };
    let x = ctx.ty(n, 0)?;
    let w = ctx.ty(n, w_index)?;
    let attrs = super::nn::conv_attrs(ctx, n, &x.shape, &w.shape)?;
    let ins = ctx.all_values(n)?;
    let op = if n.op_type == "QLinearConv" {
        Op::QLinearConv(attrs)
    } else {
        Op::ConvInteger(attrs)
    };
    ctx.emit(n, op, ins)?;
    Ok(())
}

/// Ops whose inputs map one to one and whose attributes are scalars.
fn passthrough(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let op = match n.op_type {
        "QLinearMatMul" => Op::QLinearMatMul,
        "MatMulInteger" => Op::MatMulInteger,
        "QLinearAdd" => Op::QLinearAdd,
        "QLinearMul" => Op::QLinearMul,
        "QLinearSigmoid" => Op::QLinearSigmoid,
        "QLinearLeakyRelu" => Op::QLinearLeakyRelu {
            alpha: a.float("alpha", 0.01)?,
        },
        "QLinearConcat" => {
            let first = ctx.ty(n, 2)?;
            let ax = a
                .opt_int("axis")?
                .ok_or_else(|| a.err("axis", "is required"))?;
            let axis = norm_axis(ax, first.rank())
                .filter(|&v| v < first.rank())
                .ok_or_else(|| a.err("axis", format!("{ax} out of range")))?;
            Op::QLinearConcat { axis }
        }
        "QLinearGlobalAveragePool" => Op::QLinearGlobalAveragePool {
            channels_last: a.bool("channels_last", false)?,
        },
        "QLinearWhere" => Op::QLinearWhere,
        "QGemm" => Op::QGemm {
            alpha: a.float("alpha", 1.0)?,
            trans_a: a.bool("transA", false)?,
            trans_b: a.bool("transB", false)?,
        },
        other => return Err(ctx.err(n, format!("no mapping for {other}"))),
    };
    let mut ins = ctx.all_values(n)?;
    if matches!(op, Op::QLinearMatMul) {
        // Opset 21 allows f16 scales; the output is an integer either way, so constant
        // f16 scales become f32 constants (exact) and the IR keeps one scale type.
        for i in [1, 4, 6] {
            if let Some(Some(v)) = ins.get(i).copied()
                && let Some(t) = ctx.g.const_data(v)
                && t.dtype() == DType::F16
            {
                let f: Vec<f32> = t.to_f64_vec().iter().map(|&x| x as f32).collect();
                let t32 = Tensor::from_f32(t.shape.clone(), f);
                let name = format!("{}:f32", ctx.g.value(v).name);
                ins[i] = Some(ctx.new_const(name, t32));
            }
        }
    }
    ctx.emit(n, op, ins)?;
    Ok(())
}
