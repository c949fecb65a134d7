//! CausalConvWithState (opset 26), decomposed: the past state (zeros when absent) is
//! concatenated in front of the input, a depthwise Conv with no padding slides over it,
//! SiLU (`silu`/`swish`, computed in f32 for f16/bf16 as the ONNX reference does) is
//! optional, and the last kernel-1 columns of the concatenation are the present state.

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp, ConvAttrs, DType, Op, SliceAxis, Tensor, UnaryOp};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "CausalConvWithState"), causal_conv);
}

fn causal_conv(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let silu = match n.attrs.string("activation")?.as_deref().unwrap_or("none") {
        "none" => false,
        "silu" | "swish" => true,
        a => {
            return Err(n
                .attrs
                .err("activation", format!("'{a}' is not none, silu or swish")));
        }
    };
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let w = d.ctx.value(n, 1)?;
    let bias = d.ctx.opt_value(n, 2)?;
    let past = d.ctx.opt_value(n, 3)?;
    let (xs, ws) = (d.shape(x), d.shape(w));
    let dt = d.dtype(x);
    if xs.len() != 3 || ws.len() != 3 || ws[0] != xs[1] || ws[1] != 1 || ws[2] == 0 {
        return Err(d.ctx.err(
            n,
            format!("input {xs:?} and weight {ws:?} are not [B, C, L] and [C, 1, k]"),
        ));
    }
    let (b, c, len, k) = (xs[0], xs[1], xs[2], ws[2]);
    let pad = match past {
        Some(p) => p,
        None => d.konst(Tensor::zeros(dt, vec![b, c, k - 1])),
    };
    if d.shape(pad) != [b, c, k - 1] {
        return Err(d
            .ctx
            .err(n, format!("past_state must be [{b}, {c}, {}]", k - 1)));
    }
    let padded = d.op(Op::Concat { axis: 2 }, &[pad, x])?;
    let conv = Op::Conv(ConvAttrs::simple(vec![k], 1, 0, c));
    let mut ins = vec![padded, w];
    ins.extend(bias);
    if silu {
        let y = d.op(conv, &ins)?;
        let wide = if matches!(dt, DType::F16 | DType::Bf16) {
            DType::F32
        } else {
            dt
        };
        let y = d.cast(y, wide)?;
        let s = d.unary(UnaryOp::Sigmoid, y)?;
        if wide == dt {
            d.out(0, Op::Binary(BinaryOp::Mul), &[y, s])?;
        } else {
            let m = d.bin(BinaryOp::Mul, y, s)?;
            d.out(0, Op::cast(dt), &[m])?;
        }
    } else {
        d.out(0, conv, &ins)?;
    }
    if d.wants(1) {
        let slice = Op::Slice {
            axes: vec![SliceAxis {
                axis: 2,
                start: len as i64,
                end: (len + k - 1) as i64,
                step: 1,
            }],
        };
        d.out(1, slice, &[padded])?;
    }
    Ok(())
}
