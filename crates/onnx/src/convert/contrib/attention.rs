//! BERT-style attention (Attention, QAttention) and MultiHeadAttention, on shared scores,
//! masks and softmax-context.

use super::super::dec::Dec;
use super::super::{Ctx, NodeIn};
use super::heads::{heads_first, slice};
use super::integer::integer_matmul_to_float;
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, Tensor, UnaryOp, ValueId};

/// Attention scores q · kᵀ · scale of [B, N, S, H] and [B, N, L, H].
pub(super) fn scores(d: &mut Dec, q: ValueId, k: ValueId, scale: f64) -> Result<ValueId> {
    let kt = d.transpose(k, vec![0, 1, 3, 2])?;
    let s = d.op(Op::MatMul, &[q, kt])?;
    let f = d.scalar(d.dtype(s), scale);
    d.bin(B::Mul, s, f)
}

/// The causal mask of `s` queries over `l` keys (query i sees keys up to l − s + i), 0 or
/// `filter`.
pub(super) fn causal_mask(d: &mut Dec, s: usize, l: usize, dt: DType, filter: f32) -> ValueId {
    let tri: Vec<f64> = (0..s)
        .flat_map(|i| (0..l).map(move |j| if j + s <= l + i { 0.0 } else { filter as f64 }))
        .collect();
    d.konst(Tensor::from_f64_as(dt, vec![s, l], &tri))
}

/// softmax(scores) · v, heads merged into ONNX output 0 of shape `out`.
pub(super) fn attend(d: &mut Dec, s: ValueId, v: ValueId, out: Vec<usize>) -> Result<()> {
    let p = d.op(Op::Softmax { axis: 3 }, &[s])?;
    let o = d.op(Op::MatMul, &[p, v])?;
    let o = d.transpose(o, vec![0, 2, 1, 3])?;
    d.out(0, Op::Reshape { shape: out }, &[o])?;
    Ok(())
}

/// BERT-style self-attention as onnxruntime's optimizer fuses it: QKV = input · weights +
/// bias split in three equal parts, `num_heads` heads, scores · scale (default 1/√head
/// size), keys masked with `mask_filter_value` (default −10000) beyond each sequence's
/// length (1-D mask index [batch]) or where a 2-D [batch, keys] mask is 0, causal with
/// `unidirectional`, softmax, · V, heads merged. The past/present cache, attention bias
/// and unequal `qkv_hidden_sizes` are refused.
pub(super) fn attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    for (i, what) in [
        (4, "past"),
        (5, "attention_bias"),
        (6, "past_sequence_length"),
    ] {
        if n.input(i).is_some() {
            return Err(ctx.err(n, format!("input {i} ({what}) is not supported")));
        }
    }
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let (w, bias) = (d.ctx.value(n, 1)?, d.ctx.opt_value(n, 2)?);
    let mut qkv = d.op(Op::MatMul, &[x, w])?;
    if let Some(b) = bias {
        qkv = d.bin(B::Add, qkv, b)?;
    }
    attention_core(&mut d, n, qkv, 3)
}

/// onnxruntime's QAttention (`quantize_dynamic` of the optimizer's Attention): QKV =
/// (input − input_zp) · (weight − weight_zp) in int32, times input_scale · weight_scale,
/// plus bias; then Attention's heads, mask (input 5) and softmax.
pub(super) fn qattention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    if n.input(8).is_some() {
        return Err(ctx.err(n, "input 8 (past) is not supported"));
    }
    let mut d = Dec::new(ctx, n);
    let qkv = integer_matmul_to_float(&mut d, n, [0, 1, 6, 7], [3, 4], Some(2))?;
    attention_core(&mut d, n, qkv, 5)
}

/// Attention from the projected `qkv` [B, S, 3·hidden]: the heads, the mask at input
/// `mask_input`, the causal mask with `unidirectional`, softmax, · V, heads merged.
pub(super) fn attention_core(
    d: &mut Dec,
    n: &NodeIn,
    qkv: ValueId,
    mask_input: usize,
) -> Result<()> {
    let a = n.attrs;
    let heads = num_heads(&a)?;
    if let Some(sizes) = a.ints("qkv_hidden_sizes")?
        && !(sizes.len() == 3 && sizes[0] == sizes[1] && sizes[1] == sizes[2])
    {
        return Err(a.err(
            "qkv_hidden_sizes",
            format!("{sizes:?}: only equal Q, K and V sizes are supported"),
        ));
    }
    if a.int("do_rotary", 0)? != 0 {
        return Err(a.err("do_rotary", "rotary attention is not supported"));
    }
    d.ctx.require_unused(n, 1, "the present cache")?;
    let causal = a.int("unidirectional", 0)? != 0;
    let filter = a.float("mask_filter_value", -10000.0)?;
    let qs = d.shape(qkv);
    let [batch, seq, three_h] = qs[..] else {
        return Err(d.ctx.err(
            n,
            format!("input must be [batch, sequence, hidden], got QKV {qs:?}"),
        ));
    };
    let hidden = three_h / 3;
    if !three_h.is_multiple_of(3) || !hidden.is_multiple_of(heads) {
        return Err(d.ctx.err(
            n,
            format!("weights' last dim {three_h} must be 3 x hidden with hidden divisible by num_heads {heads}"),
        ));
    }
    let hd = hidden / heads;
    let scale = match a.float("scale", 0.0)? {
        s if s != 0.0 => s as f64,
        _ => 1.0 / (hd as f64).sqrt(),
    };
    let dt = d.dtype(qkv);
    let qkv = d.reshape(qkv, vec![batch, seq, 3, heads, hd])?;
    let qkv = d.transpose(qkv, vec![2, 0, 3, 1, 4])?;
    let part = |d: &mut Dec, i: usize| -> Result<ValueId> {
        let p = slice(d, qkv, 0, i, i + 1)?;
        d.reshape(p, vec![batch, heads, seq, hd])
    };
    let (q, k, v) = (part(d, 0)?, part(d, 1)?, part(d, 2)?);
    let mut s = scores(d, q, k, scale)?;
    if let Some(mask) = d.ctx.opt_value(n, mask_input)? {
        let add = key_padding(d, n, mask, batch, seq, dt, filter)?;
        s = d.bin(B::Add, s, add)?;
    }
    if causal {
        let c = causal_mask(d, seq, seq, dt, filter);
        s = d.bin(B::Add, s, c)?;
    }
    attend(d, s, v, vec![batch, seq, hidden])
}

/// The additive mask of a key padding mask: [B] key lengths or [B, L] with 0 for padding,
/// as [B, 1, 1, L] of 0 and `filter`.
pub(super) fn key_padding(
    d: &mut Dec,
    n: &NodeIn,
    mask: ValueId,
    batch: usize,
    keys: usize,
    dt: DType,
    filter: f32,
) -> Result<ValueId> {
    let ms = d.shape(mask);
    let keep = match ms[..] {
        [b] if b == batch => {
            let len = d.cast(mask, DType::I64)?;
            let len = d.reshape(len, vec![batch, 1, 1, 1])?;
            let iota = d.i64s(vec![1, 1, 1, keys], (0..keys as i64).collect());
            d.bin(B::Less, iota, len)?
        }
        [b, l] if b == batch && l == keys => {
            let m = d.cast(mask, DType::I64)?;
            let m = d.reshape(m, vec![batch, 1, 1, keys])?;
            let z = d.i64s(vec![], vec![0]);
            let off = d.bin(B::Equal, m, z)?;
            d.unary(UnaryOp::Not, off)?
        }
        _ => {
            return Err(d.ctx.err(
                n,
                format!("mask {ms:?}: pimkit reads a [batch] key length or a [batch, {keys}] mask"),
            ));
        }
    };
    let zero = d.scalar(dt, 0.0);
    let masked = d.scalar(dt, filter as f64);
    d.op(Op::Where, &[keep, zero, masked])
}

/// onnxruntime's MultiHeadAttention with separate 3-D query [B, S, D], key [B, L, D] and
/// value [B, L, Dv]: the optional bias [D + D + Dv] added to each, `num_heads` heads,
/// scores · scale (default 1/√head size) + attention_bias (broadcast to [B, N, S, L]),
/// keys masked with `mask_filter_value` by the key padding mask, causal with
/// `unidirectional` (query s sees keys up to L − S + s), softmax, · V. Packed QKV, the
/// past/present cache and cache indirection are refused.
pub(super) fn multi_head_attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let heads = num_heads(&a)?;
    for (i, what) in [
        (6, "past_key"),
        (7, "past_value"),
        (8, "past_sequence_length"),
        (9, "cache_indirection"),
    ] {
        if n.input(i).is_some() {
            return Err(ctx.err(n, format!("input {i} ({what}) is not supported")));
        }
    }
    ctx.require_unused(n, 1, "the present cache or the QK scores")?;
    let causal = a.int("unidirectional", 0)? != 0;
    let filter = a.float("mask_filter_value", -10000.0)?;
    let mut d = Dec::new(ctx, n);
    let (Some(k), Some(v)) = (d.ctx.opt_value(n, 1)?, d.ctx.opt_value(n, 2)?) else {
        return Err(d.ctx.err(
            n,
            "packed QKV (no key and value inputs) is not supported; give query, key and value",
        ));
    };
    let q = d.ctx.value(n, 0)?;
    let (qs, ks, vs) = (d.shape(q), d.shape(k), d.shape(v));
    let (&[b, s, dq], &[_, l, dk], &[_, _, dv]) = (&qs[..], &ks[..], &vs[..]) else {
        return Err(d.ctx.err(
            n,
            format!("query, key and value must be 3-D [B, S, D]; got {qs:?}, {ks:?}, {vs:?}"),
        ));
    };
    if dq != dk
        || !dq.is_multiple_of(heads)
        || !dv.is_multiple_of(heads)
        || ks[0] != b
        || vs[0] != b
        || vs[1] != l
    {
        return Err(d.ctx.err(
            n,
            format!("query {qs:?}, key {ks:?} and value {vs:?} do not form {heads} heads"),
        ));
    }
    let (mut q, mut k, mut v) = (q, k, v);
    if let Some(bias) = d.ctx.opt_value(n, 3)? {
        if d.ty(bias).numel() != dq + dk + dv {
            return Err(d.ctx.err(
                n,
                format!("bias must hold {} values (Q, K and V)", dq + dk + dv),
            ));
        }
        let parts = [(0, dq), (dq, dq + dk), (dq + dk, dq + dk + dv)];
        let mut out = [q, k, v];
        for (x, (lo, hi)) in out.iter_mut().zip(parts) {
            let bp = slice(&mut d, bias, 0, lo, hi)?;
            *x = d.bin(B::Add, *x, bp)?;
        }
        [q, k, v] = out;
    }
    let (hq, hv) = (dq / heads, dv / heads);
    let q = heads_first(&mut d, q, b, s, heads, hq)?;
    let k = heads_first(&mut d, k, b, l, heads, hq)?;
    let v = heads_first(&mut d, v, b, l, heads, hv)?;
    let dt = d.dtype(q);
    let scale = match a.float("scale", 0.0)? {
        x if x != 0.0 => x as f64,
        _ => 1.0 / (hq as f64).sqrt(),
    };
    let mut sc = scores(&mut d, q, k, scale)?;
    if let Some(ab) = d.ctx.opt_value(n, 5)? {
        sc = d.bin(B::Add, sc, ab)?;
    }
    if let Some(mask) = d.ctx.opt_value(n, 4)? {
        let add = key_padding(&mut d, n, mask, b, l, dt, filter)?;
        sc = d.bin(B::Add, sc, add)?;
    }
    if causal {
        let c = causal_mask(&mut d, s, l, dt, filter);
        sc = d.bin(B::Add, sc, c)?;
    }
    attend(&mut d, sc, v, vec![b, s, dv])
}

/// The required, positive `num_heads` attribute.
fn num_heads(a: &crate::attr::Attrs) -> Result<usize> {
    a.opt_int("num_heads")?
        .filter(|&h| h > 0 && h <= 1 << 16)
        .map(|h| h as usize)
        .ok_or_else(|| a.err("num_heads", "is required and must be positive"))
}
