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
    ] {
        r.insert((MS, op), passthrough);
    }
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
