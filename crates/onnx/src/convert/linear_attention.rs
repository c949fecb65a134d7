//! LinearAttention (opset 26), decomposed and unrolled over the (static) sequence, as the
//! ONNX reference computes it in f32: per step t, the state S [B, H_kv, d_k, d_v] decays
//! by exp(decay_t) (gated rules), the delta rules replace v_t by beta_t·(v_t - k_t·S),
//! S += k_tᵀ·v_t, and the output is scale·q_t·S (each kv head serving q_heads/kv_heads
//! query heads). Outputs: [B, T, H_q·d_v] and the final state.

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, SliceAxis, Tensor, UnaryOp, ValueId};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "LinearAttention"), linear_attention);
}

/// [B, T, H·D] -> [B, H, T, D] in f32.
fn heads(d: &mut Dec, v: ValueId, h: usize) -> Result<ValueId> {
    let s = d.shape(v);
    if s.len() != 3 || h == 0 || !s[2].is_multiple_of(h) {
        return Err(d.ctx.err(d.n, format!("{s:?} is not [B, T, {h}·D]")));
    }
    let r = d.reshape(v, vec![s[0], s[1], h, s[2] / h])?;
    let t = d.transpose(r, vec![0, 2, 1, 3])?;
    d.cast(t, DType::F32)
}

/// Step `t` of a [B, H, T, X] tensor: [B, H, 1, X].
fn step(d: &mut Dec, v: ValueId, t: usize) -> Result<ValueId> {
    if d.shape(v)[2] == 1 {
        return Ok(v);
    }
    d.op(
        Op::Slice {
            axes: vec![SliceAxis {
                axis: 2,
                start: t as i64,
                end: t as i64 + 1,
                step: 1,
            }],
        },
        &[v],
    )
}

fn linear_attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let rule = a
        .string("update_rule")?
        .unwrap_or_else(|| "gated_delta".into());
    let (gating, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        r => {
            return Err(a.err(
                "update_rule",
                format!("'{r}' is not linear, gated, delta or gated_delta"),
            ));
        }
    };
    let qh = a.opt_int("q_num_heads")?.unwrap_or(0).max(0) as usize;
    let kvh = a.opt_int("kv_num_heads")?.unwrap_or(0).max(0) as usize;
    if qh == 0 || kvh == 0 || !qh.is_multiple_of(kvh) {
        return Err(ctx.err(
            n,
            format!("q_num_heads {qh} must be a positive multiple of kv_num_heads {kvh}"),
        ));
    }
    let mut d = Dec::new(ctx, n);
    let (q, k, v) = (d.ctx.value(n, 0)?, d.ctx.value(n, 1)?, d.ctx.value(n, 2)?);
    let past = d.ctx.opt_value(n, 3)?;
    let decay = d.ctx.opt_value(n, 4)?;
    let beta = d.ctx.opt_value(n, 5)?;
    if gating != decay.is_some() || delta != beta.is_some() {
        return Err(d.ctx.err(
            n,
            format!("update_rule '{rule}' needs decay: {gating}, beta: {delta}"),
        ));
    }
    let out_dt = d.dtype(q);
    let qs = d.shape(q);
    let (b, t_len) = (qs[0], qs[1]);
    let q4 = heads(&mut d, q, qh)?;
    let k4 = heads(&mut d, k, kvh)?;
    let v4 = heads(&mut d, v, kvh)?;
    let (dk, dv) = (d.shape(k4)[3], d.shape(v4)[3]);
    // decay as [B, H_kv, T, 1 or d_k]; beta as [B, H_kv or 1, T, 1].
    let decay4 = match decay {
        Some(g) => {
            let last = *d.shape(g).last().unwrap_or(&0);
            let per = if last == kvh { 1 } else { dk };
            if last != kvh && last != kvh * dk {
                return Err(d.ctx.err(
                    n,
                    format!("decay's last dim {last} is not {kvh} or {}", kvh * dk),
                ));
            }
            let r = d.reshape(g, vec![b, t_len, kvh, per])?;
            let t = d.transpose(r, vec![0, 2, 1, 3])?;
            Some(d.cast(t, DType::F32)?)
        }
        None => None,
    };
    let beta4 = match beta {
        Some(be) => {
            let last = *d.shape(be).last().unwrap_or(&0);
            let r = d.reshape(be, vec![b, t_len, last, 1])?;
            let t = d.transpose(r, vec![0, 2, 1, 3])?;
            Some(d.cast(t, DType::F32)?)
        }
        None => None,
    };
    let state_dt = past.map(|p| d.dtype(p)).unwrap_or(out_dt);
    let mut state = match past {
        Some(p) => {
            if d.shape(p) != [b, kvh, dk, dv] {
                return Err(d
                    .ctx
                    .err(n, format!("past_state must be [{b}, {kvh}, {dk}, {dv}]")));
            }
            d.cast(p, DType::F32)?
        }
        None => d.konst(Tensor::zeros(DType::F32, vec![b, kvh, dk, dv])),
    };
    let scale = match a.opt_float("scale")? {
        Some(s) if s != 0.0 => s as f64,
        _ => 1.0 / (dk as f64).sqrt(),
    };
    let scale = d.scalar(DType::F32, scale);
    let mut outs = Vec::with_capacity(t_len);
    for t in 0..t_len {
        let (qt, kt, mut vt) = (
            step(&mut d, q4, t)?,
            step(&mut d, k4, t)?,
            step(&mut d, v4, t)?,
        );
        if let Some(g) = decay4 {
            let gt = step(&mut d, g, t)?;
            let per = d.shape(gt)[3];
            let gt = d.reshape(gt, vec![b, kvh, per, 1])?;
            let e = d.unary(UnaryOp::Exp, gt)?;
            state = d.bin(B::Mul, state, e)?;
        }
        if let Some(be) = beta4 {
            let retrieved = d.op(Op::MatMul, &[kt, state])?;
            let diff = d.bin(B::Sub, vt, retrieved)?;
            let bt = step(&mut d, be, t)?;
            vt = d.bin(B::Mul, bt, diff)?;
        }
        let ktt = d.reshape(kt, vec![b, kvh, dk, 1])?;
        let outer = d.bin(B::Mul, ktt, vt)?;
        state = d.bin(B::Add, state, outer)?;
        let read = if qh == kvh {
            state
        } else {
            let u = d.reshape(state, vec![b, kvh, 1, dk, dv])?;
            let e = d.op(
                Op::Expand {
                    shape: vec![b, kvh, qh / kvh, dk, dv],
                },
                &[u],
            )?;
            d.reshape(e, vec![b, qh, dk, dv])?
        };
        let o = d.op(Op::MatMul, &[qt, read])?;
        outs.push(d.bin(B::Mul, o, scale)?);
    }
    let all = if outs.len() == 1 {
        outs[0]
    } else {
        d.op(Op::Concat { axis: 2 }, &outs)?
    };
    let tr = d.transpose(all, vec![0, 2, 1, 3])?;
    let shape = vec![b, t_len, qh * dv];
    if out_dt == DType::F32 {
        d.out(0, Op::Reshape { shape }, &[tr])?;
    } else {
        let flat = d.reshape(tr, shape)?;
        d.out(0, Op::cast(out_dt), &[flat])?;
    }
    if d.wants(1) {
        if state_dt == DType::F32 {
            d.out(1, Op::Identity, &[state])?;
        } else {
            d.out(1, Op::cast(state_dt), &[state])?;
        }
    }
    Ok(())
}
