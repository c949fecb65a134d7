//! Attention (opset 23/24) and RotaryEmbedding (opset 23), decomposed into MatMul,
//! Softmax, Transpose, Reshape, Concat, Slice and elementwise ops, following the ONNX
//! reference implementation (which the node tests' outputs come from):
//!
//! - 3-D q/k/v ([B, S, heads·size]) are split into heads with `q_num_heads` /
//!   `kv_num_heads`; 4-D ones are [B, heads, S, size].
//! - `past_key`/`past_value` are concatenated in front of k/v on the sequence axis
//!   (these are the `present_*` outputs).
//! - Q and K are each scaled by sqrt(scale) (scale = 1/sqrt(head size) by default), then
//!   QKᵀ, then `softcap`·tanh(·/softcap), then the bias: a float mask is added, a bool
//!   mask adds -inf where false, `is_causal` adds -inf above the diagonal shifted by the
//!   past length, `nonpad_kv_seqlen` (opset 24) adds -inf past each batch's length. A
//!   mask shorter than the total sequence is padded with -inf (false).
//! - Grouped-query attention repeats each kv head q_heads/kv_heads times ([h0, h0, h1, ...]).
//! - `qk_matmul_output` is QKᵀ (mode 0), after softcap (1), after the bias (2) or after
//!   the softmax (3). onnxruntime 1.32 leaves the causal -inf out of mode 2; pimkit keeps
//!   it, as the ONNX reference does.

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::error::Result;
use crate::tensor::dtype_from_onnx;
use pimkit_ir::{BinaryOp as B, DType, Op, PadMode, SliceAxis, Tensor, UnaryOp, ValueId};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "Attention"), attention);
    r.insert(("", "RotaryEmbedding"), rotary);
}

/// [B, S, heads·size] -> [B, heads, S, size].
fn split_heads(d: &mut Dec, v: ValueId, heads: usize) -> Result<ValueId> {
    let s = d.shape(v);
    if heads == 0 || !s[2].is_multiple_of(heads) {
        return Err(d.ctx.err(
            d.n,
            format!("hidden size {} is not divisible by {heads} heads", s[2]),
        ));
    }
    let r = d.reshape(v, vec![s[0], s[1], heads, s[2] / heads])?;
    d.transpose(r, vec![0, 2, 1, 3])
}

fn attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let is_causal = a.bool("is_causal", false)?;
    let softcap = a.float("softcap", 0.0)?;
    let mode = a.int("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&mode) {
        return Err(a.err(
            "qk_matmul_output_mode",
            format!("{mode} is not 0, 1, 2 or 3"),
        ));
    }
    let softmax_dt = match a.opt_int("softmax_precision")? {
        Some(c) => Some(dtype_from_onnx(
            c as i32,
            &format!("node '{}' attribute 'softmax_precision'", n.name),
        )?),
        None => None,
    };
    let mut d = Dec::new(ctx, n);
    let (mut q, mut k, mut v) = (d.ctx.value(n, 0)?, d.ctx.value(n, 1)?, d.ctx.value(n, 2)?);
    let mask = d.ctx.opt_value(n, 3)?;
    let (past_k, past_v) = (d.ctx.opt_value(n, 4)?, d.ctx.opt_value(n, 5)?);
    let nonpad = d.ctx.opt_value(n, 6)?;
    let qty = d.ty(q);
    let dt = qty.dtype;
    let three_d = qty.rank() == 3;
    if three_d {
        let qh = a.opt_int("q_num_heads")?.unwrap_or(0) as usize;
        let kvh = a.opt_int("kv_num_heads")?.unwrap_or(0) as usize;
        q = split_heads(&mut d, q, qh)?;
        k = split_heads(&mut d, k, kvh)?;
        v = split_heads(&mut d, v, kvh)?;
    } else if qty.rank() != 4 || d.ty(k).rank() != 4 || d.ty(v).rank() != 4 {
        return Err(d.ctx.err(n, "Q, K and V must all be 3-D or all 4-D"));
    }
    let (b, qh, qs, hd) = {
        let s = d.shape(q);
        (s[0], s[1], s[2], s[3])
    };
    let past_len = past_k.map(|p| d.shape(p)[2]).unwrap_or(0);
    if let Some(p) = past_k {
        k = if d.wants(1) {
            d.out(1, Op::Concat { axis: 2 }, &[p, k])?
        } else {
            d.op(Op::Concat { axis: 2 }, &[p, k])?
        };
    } else if d.wants(1) {
        k = d.out(1, Op::Identity, &[k])?;
    }
    if let Some(p) = past_v {
        v = if d.wants(2) {
            d.out(2, Op::Concat { axis: 2 }, &[p, v])?
        } else {
            d.op(Op::Concat { axis: 2 }, &[p, v])?
        };
    } else if d.wants(2) {
        v = d.out(2, Op::Identity, &[v])?;
    }
    let kvh = d.shape(k)[1];
    let kv_len = d.shape(k)[2];
    if kvh == 0 || qh % kvh != 0 || d.shape(v)[1] != kvh {
        return Err(d.ctx.err(
            n,
            format!("{qh} query heads cannot share {kvh} key/value heads"),
        ));
    }
    if qh != kvh {
        // np.repeat along the head axis: [B, kvh, S, D] -> [B, kvh, reps, S, D] -> [B, qh, S, D].
        for t in [&mut k, &mut v] {
            let s = d.shape(*t);
            let u = d.reshape(*t, vec![s[0], s[1], 1, s[2], s[3]])?;
            let e = d.op(
                Op::Expand {
                    shape: vec![s[0], s[1], qh / kvh, s[2], s[3]],
                },
                &[u],
            )?;
            *t = d.reshape(e, vec![s[0], qh, s[2], s[3]])?;
        }
    }
    let scale = match a.opt_float("scale")? {
        Some(s) => s as f64,
        None => 1.0 / (hd as f64).sqrt(),
    };
    let sq = d.scalar(dt, (scale as f32 as f64).sqrt());
    let qs_ = d.bin(B::Mul, q, sq)?;
    let kt = d.transpose(k, vec![0, 1, 3, 2])?;
    let kt = d.bin(B::Mul, kt, sq)?;
    let mut qk = d.op(Op::MatMul, &[qs_, kt])?;
    let raw = qk;
    if softcap > 0.0 {
        let c = d.scalar(dt, softcap as f64);
        let t = d.bin(B::Div, qk, c)?;
        let t = d.unary(UnaryOp::Tanh, t)?;
        qk = d.bin(B::Mul, t, c)?;
    }
    let capped = qk;
    // The additive bias: mask (float or bool -> -inf), causal, padding.
    let mut bias: Option<ValueId> = None;
    if let Some(m) = mask {
        let mut m = m;
        let ms = d.shape(m);
        let last = *ms.last().unwrap_or(&0);
        if last < kv_len {
            let r = ms.len();
            let mut pads = vec![0; 2 * r];
            pads[2 * r - 1] = kv_len - last;
            let value = if d.dtype(m) == DType::Bool {
                0.0
            } else {
                f32::NEG_INFINITY
            };
            m = d.op(
                Op::Pad {
                    pads,
                    mode: PadMode::Constant,
                    value,
                },
                &[m],
            )?;
        }
        if d.dtype(m) == DType::Bool {
            let zero = d.scalar(dt, 0.0);
            let ninf = d.scalar(dt, f64::NEG_INFINITY);
            m = d.op(Op::Where, &[m, zero, ninf])?;
        }
        bias = Some(m);
    }
    if is_causal {
        let v: Vec<f64> = (0..qs * kv_len)
            .map(|e| {
                let (i, j) = (e / kv_len, e % kv_len);
                if j >= past_len && j - past_len > i {
                    f64::NEG_INFINITY
                } else {
                    0.0
                }
            })
            .collect();
        let c = d.konst(Tensor::from_f64_as(dt, vec![qs, kv_len], &v));
        bias = Some(match bias {
            Some(m) => d.bin(B::Add, m, c)?,
            None => c,
        });
    }
    if let Some(np) = nonpad {
        // Position j of batch b is padding when j >= nonpad_kv_seqlen[b].
        let lens = d.cast(np, DType::I64)?;
        let lens = d.reshape(lens, vec![b, 1, 1, 1])?;
        let ramp = d.i64s(vec![1, 1, 1, kv_len], (0..kv_len as i64).collect());
        let keep = d.bin(B::Less, ramp, lens)?;
        let zero = d.scalar(dt, 0.0);
        let ninf = d.scalar(dt, f64::NEG_INFINITY);
        let pm = d.op(Op::Where, &[keep, zero, ninf])?;
        bias = Some(match bias {
            Some(m) => d.bin(B::Add, m, pm)?,
            None => pm,
        });
    }
    if let Some(m) = bias {
        qk = d.bin(B::Add, qk, m)?;
    }
    let biased = qk;
    let sm_in = match softmax_dt {
        Some(t) if t != dt => d.cast(qk, t)?,
        _ => qk,
    };
    let p = d.op(Op::Softmax { axis: 3 }, &[sm_in])?;
    let p = d.cast(p, dt)?;
    if d.wants(3) {
        let src = match mode {
            0 => raw,
            1 => capped,
            2 => biased,
            _ => p,
        };
        d.out(3, Op::Identity, &[src])?;
    }
    if three_d {
        let y = d.op(Op::MatMul, &[p, v])?;
        let t = d.transpose(y, vec![0, 2, 1, 3])?;
        let vs = d.shape(v)[3];
        d.out(
            0,
            Op::Reshape {
                shape: vec![b, qs, qh * vs],
            },
            &[t],
        )?;
    } else {
        d.out(0, Op::MatMul, &[p, v])?;
    }
    Ok(())
}

fn slice_last(d: &mut Dec, x: ValueId, start: usize, end: usize, step: i64) -> Result<ValueId> {
    let r = d.shape(x).len();
    d.op(
        Op::Slice {
            axes: vec![SliceAxis {
                axis: r - 1,
                start: start as i64,
                end: end as i64,
                step,
            }],
        },
        &[x],
    )
}

/// x·cos - rot(x)·sin on the first `rotary_embedding_dim` features of every head, halves
/// (or even/odd pairs when `interleaved`) rotated together.
fn rotary(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let interleaved = a.bool("interleaved", false)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let (cos, sin) = (d.ctx.value(n, 1)?, d.ctx.value(n, 2)?);
    let pos = d.ctx.opt_value(n, 3)?;
    let xs = d.shape(x);
    // Work in [B, H, S, D] (4-D input) or [B, S, H, D] (3-D input split into heads).
    let (work, b, s, heads_axis) = match xs.len() {
        4 => (x, xs[0], xs[2], 1),
        3 => {
            let h = a.opt_int("num_heads")?.unwrap_or(0) as usize;
            if h == 0 || !xs[2].is_multiple_of(h) {
                return Err(a.err(
                    "num_heads",
                    format!("must divide the hidden size {}", xs[2]),
                ));
            }
            (
                d.reshape(x, vec![xs[0], xs[1], h, xs[2] / h])?,
                xs[0],
                xs[1],
                2,
            )
        }
        _ => {
            return Err(d
                .ctx
                .err(n, format!("input must be 3-D or 4-D, got {xs:?}")));
        }
    };
    let hd = *d.shape(work).last().unwrap_or(&0);
    let rd = match a.int("rotary_embedding_dim", 0)? {
        0 => hd,
        r if r > 0 && (r as usize) <= hd && r % 2 == 0 => r as usize,
        r => {
            return Err(a.err(
                "rotary_embedding_dim",
                format!("{r} must be even and at most the head size {hd}"),
            ));
        }
    };
    let half = rd / 2;
    // cos/sin as [B, S, half] (gathered by position ids), then broadcast over heads.
    let (mut c, mut sn) = (cos, sin);
    if let Some(p) = pos {
        c = d.op(Op::Gather { axis: 0 }, &[cos, p])?;
        sn = d.op(Op::Gather { axis: 0 }, &[sin, p])?;
    }
    for t in [&mut c, &mut sn] {
        if d.shape(*t) != [b, s, half] {
            return Err(d.ctx.err(
                n,
                format!(
                    "cos/sin cache gives {:?}, expected [{b}, {s}, {half}]",
                    d.shape(*t)
                ),
            ));
        }
        let shape = if heads_axis == 1 {
            vec![b, 1, s, half]
        } else {
            vec![b, s, 1, half]
        };
        *t = d.reshape(*t, shape)?;
    }
    let rot = if rd < hd {
        slice_last(&mut d, work, 0, rd, 1)?
    } else {
        work
    };
    let (x1, x2) = if interleaved {
        (
            slice_last(&mut d, rot, 0, rd, 2)?,
            slice_last(&mut d, rot, 1, rd, 2)?,
        )
    } else {
        (
            slice_last(&mut d, rot, 0, half, 1)?,
            slice_last(&mut d, rot, half, rd, 1)?,
        )
    };
    let a1 = d.bin(B::Mul, c, x1)?;
    let a2 = d.bin(B::Mul, sn, x2)?;
    let real = d.bin(B::Sub, a1, a2)?;
    let b1 = d.bin(B::Mul, sn, x1)?;
    let b2 = d.bin(B::Mul, c, x2)?;
    let imag = d.bin(B::Add, b1, b2)?;
    let r = d.shape(real).len();
    let rotated = if interleaved {
        let mut sh = d.shape(real);
        sh.push(1);
        let re = d.reshape(real, sh.clone())?;
        let im = d.reshape(imag, sh)?;
        let cat = d.op(Op::Concat { axis: r }, &[re, im])?;
        let mut full = d.shape(rot);
        full[r - 1] = rd;
        d.reshape(cat, full)?
    } else {
        d.op(Op::Concat { axis: r - 1 }, &[real, imag])?
    };
    let joined = if rd < hd {
        let rest = slice_last(&mut d, work, rd, hd, 1)?;
        d.op(Op::Concat { axis: r - 1 }, &[rotated, rest])?
    } else {
        rotated
    };
    d.out(0, Op::Reshape { shape: xs }, &[joined])?;
    Ok(())
}
