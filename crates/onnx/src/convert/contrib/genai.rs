//! onnxruntime-genai's attention with a KV cache (GroupQueryAttention) and RotaryEmbedding.

use super::super::dec::Dec;
use super::super::{Ctx, NodeIn};
use super::attention::{attend, scores};
use super::heads::{heads_first, slice};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, ValueId};

/// Rotary embedding of `x` [B, N, S, H] over its first `2 · half` channels (the rest pass
/// through) with `cos`/`sin` [B, 1, S, half] (or broadcastable): the two halves rotated
/// (GPT-NeoX / LLaMA, `interleaved` 0) or each even/odd pair (GPT-J, `interleaved` 1).
pub(super) fn rotate(
    d: &mut Dec,
    x: ValueId,
    cos: ValueId,
    sin: ValueId,
    half: usize,
    interleaved: bool,
) -> Result<ValueId> {
    let shape = d.shape(x);
    let (r, h) = (shape.len(), shape[shape.len() - 1]);
    let rot = if 2 * half < h {
        slice(d, x, r - 1, 0, 2 * half)?
    } else {
        x
    };
    let rotated = if interleaved {
        let mut pairs = shape.clone();
        pairs[r - 1] = half;
        pairs.push(2);
        let p = d.reshape(rot, pairs.clone())?;
        let even = slice(d, p, r, 0, 1)?;
        let odd = slice(d, p, r, 1, 2)?;
        let mut cs = d.shape(cos);
        cs.push(1);
        let (c, s) = (d.reshape(cos, cs.clone())?, d.reshape(sin, cs)?);
        let (ec, os) = (d.bin(B::Mul, even, c)?, d.bin(B::Mul, odd, s)?);
        let (oc, es) = (d.bin(B::Mul, odd, c)?, d.bin(B::Mul, even, s)?);
        let e2 = d.bin(B::Sub, ec, os)?;
        let o2 = d.bin(B::Add, oc, es)?;
        let both = d.op(Op::Concat { axis: r }, &[e2, o2])?;
        let mut back = shape.clone();
        back[r - 1] = 2 * half;
        d.reshape(both, back)?
    } else {
        let x1 = slice(d, rot, r - 1, 0, half)?;
        let x2 = slice(d, rot, r - 1, half, 2 * half)?;
        let (a, b) = (d.bin(B::Mul, x1, cos)?, d.bin(B::Mul, x2, sin)?);
        let (c, e) = (d.bin(B::Mul, x2, cos)?, d.bin(B::Mul, x1, sin)?);
        let y1 = d.bin(B::Sub, a, b)?;
        let y2 = d.bin(B::Add, c, e)?;
        d.op(Op::Concat { axis: r - 1 }, &[y1, y2])?
    };
    if 2 * half < h {
        let rest = slice(d, x, r - 1, 2 * half, h)?;
        d.op(Op::Concat { axis: r - 1 }, &[rotated, rest])
    } else {
        Ok(rotated)
    }
}

/// The columns of a [positions, half] cos/sin cache.
pub(super) fn cache_half(d: &Dec, table: ValueId) -> Result<usize> {
    match d.shape(table)[..] {
        [_, half] if half > 0 => Ok(half),
        ref s => Err(d.ctx.err(
            d.n,
            format!("cos/sin caches must be [positions, rotary_dim / 2], got {s:?}"),
        )),
    }
}

/// `table` [positions, half] rows at `pos` [B, S] (i64), as [B, 1, S, half].
pub(super) fn rows_at(
    d: &mut Dec,
    table: ValueId,
    pos: ValueId,
    batch: usize,
    seq: usize,
) -> Result<ValueId> {
    let half = cache_half(d, table)?;
    let t = d.op(Op::Gather { axis: 0 }, &[table, pos])?;
    d.reshape(t, vec![batch, 1, seq, half])
}

/// onnxruntime-genai's attention with a KV cache: query [B, S, N·H] and key/value
/// [B, S, Nkv·H] (or one packed QKV input), past key/value [B, Nkv, P, H]; present =
/// past ‖ new keys/values along positions (what the LLM engine reads as the cache).
/// Token s of sequence b sits at position seqlens_k[b] + 1 − S + s: rotary (`do_rotary`,
/// cos/sin caches) uses it, and the query sees keys up to it (causal, and each sequence's
/// own length). Key/value heads are repeated for the Nq / Nkv query heads of each group.
/// Soft-capping, local windows, smooth softmax, quantized caches, attention bias and
/// head sinks are refused.
pub(super) fn group_query_attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let req = |name: &str| -> Result<usize> {
        a.opt_int(name)?
            .filter(|&v| v > 0 && v <= 1 << 16)
            .map(|v| v as usize)
            .ok_or_else(|| a.err(name, "is required and must be positive"))
    };
    let (nq, nkv) = (req("num_heads")?, req("kv_num_heads")?);
    if !nq.is_multiple_of(nkv) {
        return Err(a.err("kv_num_heads", format!("{nkv} must divide num_heads {nq}")));
    }
    if a.float("softcap", 0.0)? != 0.0 {
        return Err(a.err("softcap", "soft-capped scores are not supported"));
    }
    if a.int("local_window_size", -1)? != -1 {
        return Err(a.err(
            "local_window_size",
            "sliding-window attention is not supported",
        ));
    }
    if a.int("smooth_softmax", -1)? == 1 {
        return Err(a.err("smooth_softmax", "the smooth softmax is not supported"));
    }
    for q in ["k_quant_type", "v_quant_type"] {
        if let Some(v) = a.string(q)?
            && v != "NONE"
        {
            return Err(a.err(q, format!("'{v}': quantized KV caches are not supported")));
        }
    }
    for name in ["qk_output", "sliding_window_cache", "kv_cache_bit_width"] {
        if a.int(name, 0)? != 0 {
            return Err(a.err(name, "is not supported"));
        }
    }
    if a.int("causal", 1)? != 1 {
        return Err(a.err("causal", "only causal attention (1) is supported"));
    }
    for i in 9..n.num_inputs() {
        if n.input(i).is_some() {
            return Err(ctx.err(
                n,
                format!("input {i} (position ids, attention bias, head sink, cache scales or norms) is not supported"),
            ));
        }
    }
    let rotary = a.int("do_rotary", 0)? != 0;
    let interleaved = a.int("rotary_interleaved", 0)? != 0;
    let mut d = Dec::new(ctx, n);
    let query = d.ctx.value(n, 0)?;
    let qs = d.shape(query);
    let [batch, seq, width] = qs[..] else {
        return Err(d.ctx.err(
            n,
            format!("query must be [batch, sequence, hidden], got {qs:?}"),
        ));
    };
    let (key, value) = (d.ctx.opt_value(n, 1)?, d.ctx.opt_value(n, 2)?);
    let hd = match key {
        Some(_) => width / nq,
        None => width / (nq + 2 * nkv),
    };
    if hd == 0
        || (key.is_some() && width != nq * hd)
        || (key.is_none() && width != (nq + 2 * nkv) * hd)
    {
        return Err(d.ctx.err(
            n,
            format!("query width {width} does not split into {nq} query and {nkv} key/value heads"),
        ));
    }
    let (q, k, v) = match (key, value) {
        (Some(k), Some(v)) => (query, k, v),
        (None, None) => {
            let q = slice(&mut d, query, 2, 0, nq * hd)?;
            let k = slice(&mut d, query, 2, nq * hd, (nq + nkv) * hd)?;
            let v = slice(&mut d, query, 2, (nq + nkv) * hd, (nq + 2 * nkv) * hd)?;
            (q, k, v)
        }
        _ => {
            return Err(d
                .ctx
                .err(n, "give both key and value, or neither (packed QKV)"));
        }
    };
    let mut q = heads_first(&mut d, q, batch, seq, nq, hd)?;
    let mut k = heads_first(&mut d, k, batch, seq, nkv, hd)?;
    let v = heads_first(&mut d, v, batch, seq, nkv, hd)?;
    // Absolute positions from each sequence's length: seqlens_k + 1 - S + s.
    let lens = d.ctx.value(n, 5)?;
    let lens = d.cast(lens, DType::I64)?;
    let lens = d.reshape(lens, vec![batch, 1])?;
    let offs = d.i64s(
        vec![1, seq],
        (0..seq as i64).map(|s| s + 1 - seq as i64).collect(),
    );
    let pos = d.bin(B::Add, lens, offs)?;
    if rotary {
        let (Some(cos), Some(sin)) = (d.ctx.opt_value(n, 7)?, d.ctx.opt_value(n, 8)?) else {
            return Err(d
                .ctx
                .err(n, "do_rotary needs inputs 7 and 8 (cos_cache, sin_cache)"));
        };
        let half = cache_half(&d, cos)?;
        if 2 * half > hd {
            return Err(d.ctx.err(
                n,
                format!("cos_cache's {half} columns rotate more than the head size {hd}"),
            ));
        }
        let c = rows_at(&mut d, cos, pos, batch, seq)?;
        let s = rows_at(&mut d, sin, pos, batch, seq)?;
        q = rotate(&mut d, q, c, s, half, interleaved)?;
        k = rotate(&mut d, k, c, s, half, interleaved)?;
    }
    let (k_all, v_all) = match (d.ctx.opt_value(n, 3)?, d.ctx.opt_value(n, 4)?) {
        (Some(pk), Some(pv)) => (
            d.op(Op::Concat { axis: 2 }, &[pk, k])?,
            d.op(Op::Concat { axis: 2 }, &[pv, v])?,
        ),
        (None, None) => (k, v),
        _ => {
            return Err(d
                .ctx
                .err(n, "give both past_key and past_value, or neither"));
        }
    };
    if d.wants(1) {
        d.out_node(1, false, Op::Identity, &[k_all])?;
    }
    if d.wants(2) {
        d.out_node(2, false, Op::Identity, &[v_all])?;
    }
    d.ctx.require_unused(n, 3, "the QK scores")?;
    let total = d.shape(k_all)[2];
    let group = nq / nkv;
    let repeat = |d: &mut Dec, x: ValueId| -> Result<ValueId> {
        if group == 1 {
            return Ok(x);
        }
        let x = d.reshape(x, vec![batch, nkv, 1, total, hd])?;
        let x = d.op(
            Op::Expand {
                shape: vec![batch, nkv, group, total, hd],
            },
            &[x],
        )?;
        d.reshape(x, vec![batch, nq, total, hd])
    };
    let (kr, vr) = (repeat(&mut d, k_all)?, repeat(&mut d, v_all)?);
    let dt = d.dtype(q);
    let scale = match a.float("scale", 0.0)? {
        s if s != 0.0 => s as f64,
        _ => 1.0 / (hd as f64).sqrt(),
    };
    let s = scores(&mut d, q, kr, scale)?;
    // Key j is seen by the query at position p when j <= p.
    let keys = d.i64s(vec![1, 1, 1, total], (0..total as i64).collect());
    let p4 = d.reshape(pos, vec![batch, 1, seq, 1])?;
    let keep = d.bin(B::LessOrEqual, keys, p4)?;
    let zero = d.scalar(dt, 0.0);
    let low = d.scalar(dt, f32::MIN as f64);
    let add = d.op(Op::Where, &[keep, zero, low])?;
    let s = d.bin(B::Add, s, add)?;
    attend(&mut d, s, vr, vec![batch, seq, nq * hd])
}

/// onnxruntime's RotaryEmbedding: `input` [B, S, N·H] (`num_heads`, else H from the
/// caches) or [B, N, S, H], `position_ids` [B, S] (or one offset [1]: positions
/// offset..offset+S), caches [positions, half]; `rotary_embedding_dim` channels rotated
/// (default all), `interleaved` pairs or halves.
pub(super) fn rotary_embedding(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    if a.int("is_packed_batching", 0)? != 0 {
        return Err(a.err("is_packed_batching", "packed batching is not supported"));
    }
    if a.float("scale", 1.0)? != 1.0 {
        return Err(a.err("scale", "only scale 1.0 is supported"));
    }
    let interleaved = a.int("interleaved", 0)? != 0;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let (ids, cos, sin) = (d.ctx.value(n, 1)?, d.ctx.value(n, 2)?, d.ctx.value(n, 3)?);
    let half = cache_half(&d, cos)?;
    let rot_dim = match a.int("rotary_embedding_dim", 0)? {
        0 => 2 * half,
        v if v as usize == 2 * half => v as usize,
        v => {
            return Err(a.err(
                "rotary_embedding_dim",
                format!("{v} is not twice the caches' {half} columns"),
            ));
        }
    };
    let xs = d.shape(x);
    let (batch, seq, x4, back) = match xs[..] {
        [b, s, w] => {
            let heads = match a.int("num_heads", 0)? {
                0 => w / rot_dim.max(1),
                h => h as usize,
            };
            if heads == 0 || !w.is_multiple_of(heads) {
                return Err(a.err(
                    "num_heads",
                    format!("{heads} does not divide the width {w}"),
                ));
            }
            (b, s, heads_first(&mut d, x, b, s, heads, w / heads)?, true)
        }
        [b, _, s, _] => (b, s, x, false),
        _ => {
            return Err(d.ctx.err(
                n,
                format!("input must be [B, S, hidden] or [B, N, S, H], got {xs:?}"),
            ));
        }
    };
    let ids = d.cast(ids, DType::I64)?;
    let pos = match d.shape(ids)[..] {
        [b, s] if b == batch && s == seq => ids,
        [1] => {
            let offs = d.i64s(vec![1, seq], (0..seq as i64).collect());
            let o = d.reshape(ids, vec![1, 1])?;
            let p = d.bin(B::Add, o, offs)?;
            d.op(
                Op::Expand {
                    shape: vec![batch, seq],
                },
                &[p],
            )?
        }
        ref s => {
            return Err(d.ctx.err(
                n,
                format!("position_ids must be [{batch}, {seq}] or [1], got {s:?}"),
            ));
        }
    };
    let c = rows_at(&mut d, cos, pos, batch, seq)?;
    let s = rows_at(&mut d, sin, pos, batch, seq)?;
    let y = rotate(&mut d, x4, c, s, half, interleaved)?;
    if back {
        let y = d.transpose(y, vec![0, 2, 1, 3])?;
        d.out(0, Op::Reshape { shape: xs.clone() }, &[y])?;
    } else {
        d.out(0, Op::Identity, &[y])?;
    }
    Ok(())
}
