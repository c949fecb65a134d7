//! onnxruntime's contrib ops that its transformer optimizer and its weight-only quantizer
//! write, decomposed into existing IR ops so that every engine runs them (their semantics
//! are onnxruntime's CPU kernels'; tests/data/ort-contrib holds onnxruntime's outputs):
//! SkipLayerNormalization and SkipSimplifiedLayerNormalization (residual add + LayerNorm /
//! RMSNorm, optionally returning the sum), SimplifiedLayerNormalization (RMSNorm, registered
//! by onnxruntime in the default domain), FastGelu, BiasGelu, QuickGelu, MatMulNBits
//! (2/4/8-bit block-quantized weights, dequantized to a float constant at import), and
//! BERT's EmbedLayerNormalization and Attention, and onnxruntime-genai's
//! GroupQueryAttention (KV cache, grouped heads, rotary) and RotaryEmbedding.

use super::dec::Dec;
use super::{Converter, Ctx, MS, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, ReduceKind, SliceAxis, Tensor, UnaryOp, ValueId};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert((MS, "SkipLayerNormalization"), skip_layer_norm);
    r.insert(
        (MS, "SkipSimplifiedLayerNormalization"),
        skip_simplified_layer_norm,
    );
    r.insert(("", "SimplifiedLayerNormalization"), simplified_layer_norm);
    r.insert((MS, "FastGelu"), fast_gelu);
    r.insert((MS, "BiasGelu"), bias_gelu);
    r.insert((MS, "QuickGelu"), quick_gelu);
    r.insert((MS, "MatMulNBits"), matmul_nbits);
    r.insert((MS, "EmbedLayerNormalization"), embed_layer_norm);
    r.insert((MS, "Attention"), attention);
    r.insert((MS, "QAttention"), qattention);
    r.insert((MS, "MatMulIntegerToFloat"), matmul_integer_to_float);
    r.insert((MS, "QEmbedLayerNormalization"), qembed_layer_norm);
    r.insert((MS, "DynamicQuantizeMatMul"), dynamic_quantize_matmul);
    r.insert((MS, "FusedMatMul"), fused_matmul);
    r.insert((MS, "MultiHeadAttention"), multi_head_attention);
    r.insert((MS, "GroupQueryAttention"), group_query_attention);
    r.insert((MS, "RotaryEmbedding"), rotary_embedding);
}

/// input + skip (+ bias): the residual sum both skip norms start from.
fn skip_sum(d: &mut Dec, n: &NodeIn, bias_input: usize) -> Result<ValueId> {
    let x = d.ctx.value(n, 0)?;
    let skip = d.ctx.value(n, 1)?;
    let mut s = d.bin(B::Add, x, skip)?;
    if let Some(b) = d.ctx.opt_value(n, bias_input)? {
        s = d.bin(B::Add, s, b)?;
    }
    Ok(s)
}

/// The sum as output 3 (`input_skip_bias_sum`) when requested; outputs 1 and 2 (mean,
/// inv_std_var) are training outputs onnxruntime's exports leave unused.
fn finish_sum(d: &mut Dec, n: &NodeIn, sum: ValueId) -> Result<()> {
    for i in [1, 2] {
        if let Some(o) = n
            .outputs
            .get(i)
            .filter(|o| !o.is_empty() && d.ctx.used.contains(**o))
        {
            return Err(d.ctx.err(
                n,
                format!("output {i} ('{o}', the mean or inverse standard deviation) is used, but pimkit does not compute it"),
            ));
        }
    }
    if d.wants(3) {
        d.out_node(3, false, Op::Identity, &[sum])?;
    }
    Ok(())
}

/// LayerNorm(input + skip + bias) over the last axis, with gamma and beta.
fn skip_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let eps = n.attrs.float("epsilon", 1e-12)?;
    let mut d = Dec::new(ctx, n);
    let sum = skip_sum(&mut d, n, 4)?;
    let axis = d.ty(sum).rank().saturating_sub(1);
    let gamma = d.ctx.value(n, 2)?;
    let mut ins = vec![sum, gamma];
    if let Some(beta) = d.ctx.opt_value(n, 3)? {
        ins.push(beta);
    }
    d.out(0, Op::LayerNorm { axis, epsilon: eps }, &ins)?;
    finish_sum(&mut d, n, sum)
}

/// RMSNorm(input + skip + bias) over the last axis, times gamma.
fn skip_simplified_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let eps = n.attrs.float("epsilon", 1e-12)?;
    let mut d = Dec::new(ctx, n);
    let sum = skip_sum(&mut d, n, 3)?;
    let axis = d.ty(sum).rank().saturating_sub(1);
    let gamma = d.ctx.value(n, 2)?;
    let y = rms(&mut d, sum, axis, eps, true)?;
    d.out(0, Op::Binary(B::Mul), &[y, gamma])?;
    finish_sum(&mut d, n, sum)
}

/// onnxruntime's SimplifiedLayerNormalization: RMSNormalization's semantics (axis,
/// epsilon, stash_type), from the default domain where onnxruntime registers it.
fn simplified_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let eps = a.float("epsilon", 1e-5)?;
    let stash_f32 = a.int("stash_type", 1)? == 1;
    let mut d = Dec::new(ctx, n);
    d.ctx
        .require_unused(n, 1, "the inverse standard deviation")?;
    let x = d.ctx.value(n, 0)?;
    let scale = d.ctx.value(n, 1)?;
    let rank = d.ty(x).rank();
    let ax = a.int("axis", -1)?;
    let axis = crate::attr::norm_axis(ax, rank)
        .filter(|&v| v < rank)
        .ok_or_else(|| a.err("axis", format!("{ax} out of range for rank {rank}")))?;
    let y = rms(&mut d, x, axis, eps, stash_f32)?;
    d.out(0, Op::Binary(B::Mul), &[y, scale])?;
    Ok(())
}

/// x / sqrt(mean(x², axes [axis..)) + eps), in f32 for f16/bf16 inputs when `stash_f32`
/// (onnxruntime's kernels accumulate in float), cast back to x's type.
fn rms(d: &mut Dec, x: ValueId, axis: usize, eps: f32, stash_f32: bool) -> Result<ValueId> {
    let ty = d.ty(x);
    let work = if stash_f32 && matches!(ty.dtype, DType::F16 | DType::Bf16) {
        DType::F32
    } else {
        ty.dtype
    };
    let xs = d.cast(x, work)?;
    let sq = d.bin(B::Mul, xs, xs)?;
    let m = d.reduce(ReduceKind::Mean, sq, (axis..ty.rank()).collect(), true)?;
    let e = d.scalar(work, eps as f64);
    let m = d.bin(B::Add, m, e)?;
    let r = d.unary(UnaryOp::Sqrt, m)?;
    let y = d.bin(B::Div, xs, r)?;
    d.cast(y, ty.dtype)
}

/// x (+ bias) through `gelu`.
fn gelu_of_sum(ctx: &mut Ctx, n: &NodeIn, tanh: bool) -> Result<()> {
    let mut d = Dec::new(ctx, n);
    let mut x = d.ctx.value(n, 0)?;
    if let Some(b) = d.ctx.opt_value(n, 1)? {
        x = d.bin(B::Add, x, b)?;
    }
    d.out(0, Op::Unary(UnaryOp::Gelu { tanh }), &[x])?;
    Ok(())
}

/// The tanh approximation of GELU of x (+ bias).
fn fast_gelu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    gelu_of_sum(ctx, n, true)
}

/// The exact (erf) GELU of A + B.
fn bias_gelu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    gelu_of_sum(ctx, n, false)
}

/// x · sigmoid(alpha · x).
fn quick_gelu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let alpha = n.attrs.float("alpha", 1.702)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let a = d.scalar(d.dtype(x), alpha as f64);
    let ax = d.bin(B::Mul, x, a)?;
    let s = d.unary(UnaryOp::Sigmoid, ax)?;
    d.out(0, Op::Binary(B::Mul), &[x, s])?;
    Ok(())
}

/// Y = A · dequant(B)ᵀ (+ bias). B holds N rows of K `bits`-bit codes in blocks of
/// `block_size` along K ([N, blocks, block_size·bits/8] bytes, low bits first); each
/// block has a scale and a zero point (packed like B when uint8, one value per block when
/// A's type; 2^(bits-1) when absent): w = (q − zp) · scale. Dequantized once, here, into
/// a [K, N] constant of A's type; the weight-only quantization is recorded in a note
/// (`pimkit llm --weight-bits` counts the packed bytes).
fn matmul_nbits(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let need = |name: &str| -> Result<usize> {
        a.opt_int(name)?
            .filter(|&v| v > 0 && v <= 1 << 31)
            .map(|v| v as usize)
            .ok_or_else(|| a.err(name, "is required and must be a positive size"))
    };
    let (k, nn, bs) = (need("K")?, need("N")?, need("block_size")?);
    let bits = a.int("bits", 4)?;
    if !matches!(bits, 2 | 4 | 8) {
        return Err(a.err("bits", format!("{bits} is not supported (use 2, 4 or 8)")));
    }
    let bits = bits as usize;
    if a.int("weight_prepacked", 0)? != 0 {
        return Err(a.err(
            "weight_prepacked",
            "prepacked weights are an onnxruntime-internal layout; export the unpacked model",
        ));
    }
    if !bs.is_power_of_two() || bs < 16 {
        return Err(a.err(
            "block_size",
            format!("{bs} must be a power of two of at least 16"),
        ));
    }
    if n.input(4).is_some() {
        return Err(ctx.err(
            n,
            "input 4 (g_idx, act-order) is not supported; quantize without act-order",
        ));
    }
    let blocks = k.div_ceil(bs);
    let blob = bs * bits / 8;
    let Some(b) = ctx.const_input(n, 1, "packed weights")? else {
        return Err(ctx.err(n, "input 1 (B) is required"));
    };
    let Some(scales) = ctx.const_input(n, 2, "scales")? else {
        return Err(ctx.err(n, "input 2 (scales) is required"));
    };
    let zp = ctx.const_input(n, 3, "zero points")?;
    let want = nn.checked_mul(blocks).and_then(|v| v.checked_mul(blob));
    if b.dtype() != DType::U8 || Some(b.numel()) != want {
        return Err(ctx.err(
            n,
            format!(
                "input 1 (B) must be uint8 [{nn}, {blocks}, {blob}] for K {k}, N {nn}, block_size {bs}, bits {bits}; got {} {:?}",
                b.dtype(),
                b.shape
            ),
        ));
    }
    if scales.numel() != nn * blocks {
        return Err(ctx.err(
            n,
            format!(
                "input 2 (scales) must hold N x blocks = {} values, got {}",
                nn * blocks,
                scales.numel()
            ),
        ));
    }
    let mask = (1u32 << bits) - 1;
    let code = |bytes: &[u8], i: usize| -> f64 {
        let bit = i * bits;
        ((bytes[bit / 8] as u32 >> (bit % 8)) & mask) as f64
    };
    let zp_row = (blocks * bits).div_ceil(8);
    let zero: Vec<f64> = match &zp {
        None => vec![(1u32 << (bits - 1)) as f64; nn * blocks],
        Some(z) if z.dtype() == DType::U8 && z.numel() == nn * zp_row => {
            let bytes: Vec<u8> = z.as_u8().expect("checked uint8").to_vec();
            (0..nn)
                .flat_map(|r| {
                    let row = &bytes[r * zp_row..(r + 1) * zp_row];
                    (0..blocks).map(move |j| code(row, j)).collect::<Vec<_>>()
                })
                .collect()
        }
        Some(z) if z.dtype() != DType::U8 && z.numel() == nn * blocks => z.to_f64_vec(),
        Some(z) => {
            return Err(ctx.err(
                n,
                format!(
                    "input 3 (zero points) must be uint8 [{}] (packed) or A's type [{}], got {} with {} values",
                    nn * zp_row,
                    nn * blocks,
                    z.dtype(),
                    z.numel()
                ),
            ));
        }
    };
    let bytes: &[u8] = b.as_u8().expect("checked uint8");
    let sc = scales.to_f64_vec();
    let mut w = vec![0.0f64; k * nn];
    for r in 0..nn {
        for j in 0..blocks {
            let blk = &bytes[(r * blocks + j) * blob..(r * blocks + j + 1) * blob];
            let (s, z) = (sc[r * blocks + j], zero[r * blocks + j]);
            for i in 0..bs.min(k - j * bs) {
                w[(j * bs + i) * nn + r] = (code(blk, i) - z) * s;
            }
        }
    }
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let dt = d.dtype(x);
    let wt = d.konst(Tensor::from_f64_as(dt, vec![k, nn], &w));
    let note = format!(
        "MatMulNBits '{}': {bits}-bit weights [{k}, {nn}] in blocks of {bs} dequantized to {dt} at import (pimkit llm: --weight-bits {bits} --weight-group {bs})",
        n.name
    );
    d.ctx.notes.push(note);
    match d.ctx.opt_value(n, 5)? {
        Some(bias) => {
            let y = d.op(Op::MatMul, &[x, wt])?;
            d.out(0, Op::Binary(B::Add), &[y, bias])?;
        }
        None => {
            d.out(0, Op::MatMul, &[x, wt])?;
        }
    }
    Ok(())
}

/// `x`[..] along `axis` from `start` to `end` (step 1).
fn slice(d: &mut Dec, x: ValueId, axis: usize, start: usize, end: usize) -> Result<ValueId> {
    d.op(
        Op::Slice {
            axes: vec![SliceAxis {
                axis,
                start: start as i64,
                end: end as i64,
                step: 1,
            }],
        },
        &[x],
    )
}

/// Attention scores q · kᵀ · scale of [B, N, S, H] and [B, N, L, H].
fn scores(d: &mut Dec, q: ValueId, k: ValueId, scale: f64) -> Result<ValueId> {
    let kt = d.transpose(k, vec![0, 1, 3, 2])?;
    let s = d.op(Op::MatMul, &[q, kt])?;
    let f = d.scalar(d.dtype(s), scale);
    d.bin(B::Mul, s, f)
}

/// The causal mask of `s` queries over `l` keys (query i sees keys up to l − s + i), 0 or
/// `filter`.
fn causal_mask(d: &mut Dec, s: usize, l: usize, dt: DType, filter: f32) -> ValueId {
    let tri: Vec<f64> = (0..s)
        .flat_map(|i| (0..l).map(move |j| if j + s <= l + i { 0.0 } else { filter as f64 }))
        .collect();
    d.konst(Tensor::from_f64_as(dt, vec![s, l], &tri))
}

/// softmax(scores) · v, heads merged into ONNX output 0 of shape `out`.
fn attend(d: &mut Dec, s: ValueId, v: ValueId, out: Vec<usize>) -> Result<()> {
    let p = d.op(Op::Softmax { axis: 3 }, &[s])?;
    let o = d.op(Op::MatMul, &[p, v])?;
    let o = d.transpose(o, vec![0, 2, 1, 3])?;
    d.out(0, Op::Reshape { shape: out }, &[o])?;
    Ok(())
}

/// BERT's embeddings as onnxruntime's optimizer fuses them: LayerNorm(word[input_ids] +
/// position[0..S or position_ids] + segment[segment_ids]) with gamma and beta; output 1
/// (`mask_index`) is the number of ones in each row of the mask, what Attention's 1-D
/// mask index reads; output 2 the sum before the norm.
fn embed_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let eps = n.attrs.float("epsilon", 1e-12)?;
    let mut d = Dec::new(ctx, n);
    let e = Embeddings {
        ids: d.ctx.value(n, 0)?,
        segs: d.ctx.opt_value(n, 1)?,
        word: d.ctx.value(n, 2)?,
        pos: d.ctx.value(n, 3)?,
        seg: d.ctx.opt_value(n, 4)?,
        gamma: d.ctx.value(n, 5)?,
        beta: d.ctx.opt_value(n, 6)?,
        mask: d.ctx.opt_value(n, 7)?,
        positions: d.ctx.opt_value(n, 8)?,
    };
    embed_sum_norm(&mut d, n, eps, e)
}

/// The values BERT's fused embedding reads.
struct Embeddings {
    ids: ValueId,
    segs: Option<ValueId>,
    word: ValueId,
    pos: ValueId,
    seg: Option<ValueId>,
    gamma: ValueId,
    beta: Option<ValueId>,
    mask: Option<ValueId>,
    positions: Option<ValueId>,
}

/// Outputs 0-2 of (Q)EmbedLayerNormalization from float tables.
fn embed_sum_norm(d: &mut Dec, n: &NodeIn, eps: f32, e: Embeddings) -> Result<()> {
    let shape = d.shape(e.ids);
    let [_, seq] = shape[..] else {
        return Err(d.ctx.err(
            n,
            format!("input_ids must be [batch, sequence], got {shape:?}"),
        ));
    };
    let mut sum = d.op(Op::Gather { axis: 0 }, &[e.word, e.ids])?;
    let positions = match e.positions {
        Some(p) => p,
        None => d.i64s(vec![seq], (0..seq as i64).collect()),
    };
    let p = d.op(Op::Gather { axis: 0 }, &[e.pos, positions])?;
    sum = d.bin(B::Add, sum, p)?;
    if let (Some(segs), Some(table)) = (e.segs, e.seg) {
        let s = d.op(Op::Gather { axis: 0 }, &[table, segs])?;
        sum = d.bin(B::Add, sum, s)?;
    }
    let axis = d.ty(sum).rank() - 1;
    let mut ins = vec![sum, e.gamma];
    ins.extend(e.beta);
    d.out(0, Op::LayerNorm { axis, epsilon: eps }, &ins)?;
    if d.wants(1) && d.ctx.used.contains(n.outputs[1]) {
        let Some(mask) = e.mask else {
            return Err(d.ctx.err(
                n,
                "output 1 (mask_index) is used but input 7 (mask) is absent; pimkit computes the mask index from the mask",
            ));
        };
        let m = d.cast(mask, DType::I64)?;
        let m = d.reduce(ReduceKind::Sum, m, vec![1], false)?;
        d.out_node(1, false, Op::cast(DType::I32), &[m])?;
    }
    if d.wants(2) {
        d.out_node(2, false, Op::Identity, &[sum])?;
    }
    Ok(())
}

/// BERT-style self-attention as onnxruntime's optimizer fuses it: QKV = input · weights +
/// bias split in three equal parts, `num_heads` heads, scores · scale (default 1/√head
/// size), keys masked with `mask_filter_value` (default −10000) beyond each sequence's
/// length (1-D mask index [batch]) or where a 2-D [batch, keys] mask is 0, causal with
/// `unidirectional`, softmax, · V, heads merged. The past/present cache, attention bias
/// and unequal `qkv_hidden_sizes` are refused.
fn attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
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
fn qattention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    if n.input(8).is_some() {
        return Err(ctx.err(n, "input 8 (past) is not supported"));
    }
    let mut d = Dec::new(ctx, n);
    let qkv = integer_matmul_to_float(&mut d, n, [0, 1, 6, 7], [3, 4], Some(2))?;
    attention_core(&mut d, n, qkv, 5)
}

/// float(MatMulInteger(a, b, a_zp, b_zp)) · (a_scale · b_scale) + bias, inputs by index
/// ([a, b, a_zp, b_zp], [a_scale, b_scale], bias), as onnxruntime's kernels compute it.
fn integer_matmul_to_float(
    d: &mut Dec,
    n: &NodeIn,
    [a, b, azp, bzp]: [usize; 4],
    [ascale, bscale]: [usize; 2],
    bias: Option<usize>,
) -> Result<ValueId> {
    let ins = [
        Some(d.ctx.value(n, a)?),
        Some(d.ctx.value(n, b)?),
        d.ctx.opt_value(n, azp)?,
        d.ctx.opt_value(n, bzp)?,
    ];
    let (sa, sb) = (d.ctx.value(n, ascale)?, d.ctx.value(n, bscale)?);
    let acc = d.op_opt(Op::MatMulInteger, ins.to_vec())?;
    let dt = d.dtype(sa);
    let acc = d.cast(acc, dt)?;
    let scale = d.bin(B::Mul, sa, sb)?;
    let mut y = d.bin(B::Mul, acc, scale)?;
    if let Some(i) = bias
        && let Some(bv) = d.ctx.opt_value(n, i)?
    {
        y = d.bin(B::Add, y, bv)?;
    }
    Ok(y)
}

/// onnxruntime's MatMulIntegerToFloat (its fusion of a dynamically quantized MatMul).
fn matmul_integer_to_float(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let mut d = Dec::new(ctx, n);
    let y = integer_matmul_to_float(&mut d, n, [0, 1, 4, 5], [2, 3], Some(6))?;
    d.out(0, Op::Identity, &[y])?;
    Ok(())
}

/// Attention from the projected `qkv` [B, S, 3·hidden]: the heads, the mask at input
/// `mask_input`, the causal mask with `unidirectional`, softmax, · V, heads merged.
fn attention_core(d: &mut Dec, n: &NodeIn, qkv: ValueId, mask_input: usize) -> Result<()> {
    let a = n.attrs;
    let heads = a
        .opt_int("num_heads")?
        .filter(|&h| h > 0)
        .ok_or_else(|| a.err("num_heads", "is required and must be positive"))?
        as usize;
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

/// Rotary embedding of `x` [B, N, S, H] over its first `2 · half` channels (the rest pass
/// through) with `cos`/`sin` [B, 1, S, half] (or broadcastable): the two halves rotated
/// (GPT-NeoX / LLaMA, `interleaved` 0) or each even/odd pair (GPT-J, `interleaved` 1).
fn rotate(
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
fn cache_half(d: &Dec, table: ValueId) -> Result<usize> {
    match d.shape(table)[..] {
        [_, half] if half > 0 => Ok(half),
        ref s => Err(d.ctx.err(
            d.n,
            format!("cos/sin caches must be [positions, rotary_dim / 2], got {s:?}"),
        )),
    }
}

/// `table` [positions, half] rows at `pos` [B, S] (i64), as [B, 1, S, half].
fn rows_at(d: &mut Dec, table: ValueId, pos: ValueId, batch: usize, seq: usize) -> Result<ValueId> {
    let half = cache_half(d, table)?;
    let t = d.op(Op::Gather { axis: 0 }, &[table, pos])?;
    d.reshape(t, vec![batch, 1, seq, half])
}

/// [B, S, N·H] as [B, N, S, H].
fn heads_first(
    d: &mut Dec,
    x: ValueId,
    batch: usize,
    seq: usize,
    heads: usize,
    hd: usize,
) -> Result<ValueId> {
    let x = d.reshape(x, vec![batch, seq, heads, hd])?;
    d.transpose(x, vec![0, 2, 1, 3])
}

/// onnxruntime-genai's attention with a KV cache: query [B, S, N·H] and key/value
/// [B, S, Nkv·H] (or one packed QKV input), past key/value [B, Nkv, P, H]; present =
/// past ‖ new keys/values along positions (what the LLM engine reads as the cache).
/// Token s of sequence b sits at position seqlens_k[b] + 1 − S + s: rotary (`do_rotary`,
/// cos/sin caches) uses it, and the query sees keys up to it (causal, and each sequence's
/// own length). Key/value heads are repeated for the Nq / Nkv query heads of each group.
/// Soft-capping, local windows, smooth softmax, quantized caches, attention bias and
/// head sinks are refused.
fn group_query_attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
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
fn rotary_embedding(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
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

/// onnxruntime's QEmbedLayerNormalization (`quantize_dynamic` of the optimizer's
/// EmbedLayerNormalization): every table, gamma and beta stored as 8-bit codes with a
/// scale and zero point, dequantized here ((q − zp) · scale) into float constants, then
/// EmbedLayerNormalization's sum, norm and mask index.
fn qembed_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let eps = n.attrs.float("epsilon", 1e-12)?;
    // (quantized input, scale input, zero-point input) per table, gamma and beta.
    let parts = [
        (2, 8, 13),
        (3, 9, 14),
        (4, 10, 15),
        (5, 11, 16),
        (6, 12, 17),
    ];
    // Initializers, possibly already used by another node (quantize_dynamic also leaves a
    // DequantizeLinear of gamma and beta for the SkipLayerNormalizations).
    let mut data = |i: usize| -> Result<Option<Tensor>> {
        let Some(name) = n.input(i) else {
            return Ok(None);
        };
        match ctx.const_data(name)? {
            Some(t) => Ok(Some(t.clone())),
            None => Err(ctx.err(
                n,
                format!("input {i} ('{name}') must be a constant initializer"),
            )),
        }
    };
    let mut deq = Vec::new();
    for (q, sc, zp) in parts {
        let Some(t) = data(q)? else {
            deq.push(None);
            continue;
        };
        let (Some(s), Some(z)) = (data(sc)?, data(zp)?) else {
            return Err(ctx.err(
                n,
                format!("input {q} needs its scale (input {sc}) and zero point (input {zp})"),
            ));
        };
        if s.numel() != 1 || z.numel() != 1 {
            return Err(ctx.err(
                n,
                format!(
                    "inputs {sc} and {zp} must be scalars (one scale and zero point per table)"
                ),
            ));
        }
        let (s, z) = (s.to_f64_vec()[0], z.to_f64_vec()[0]);
        let v: Vec<f64> = t.to_f64_vec().iter().map(|&x| (x - z) * s).collect();
        deq.push(Some(Tensor::from_f64_as(DType::F32, t.shape.clone(), &v)));
    }
    let mut d = Dec::new(ctx, n);
    let mut table = |d: &mut Dec, i: usize, what: &str| -> Result<ValueId> {
        match deq[i].take() {
            Some(t) => Ok(d.konst(t)),
            None => Err(d.ctx.err(n, format!("the {what} is required"))),
        }
    };
    let e = Embeddings {
        word: table(&mut d, 0, "word embedding")?,
        pos: table(&mut d, 1, "position embedding")?,
        seg: table(&mut d, 2, "segment embedding").ok(),
        gamma: table(&mut d, 3, "gamma")?,
        beta: Some(table(&mut d, 4, "beta")?),
        ids: d.ctx.value(n, 0)?,
        segs: d.ctx.opt_value(n, 1)?,
        mask: d.ctx.opt_value(n, 7)?,
        positions: None,
    };
    embed_sum_norm(&mut d, n, eps, e)
}

/// onnxruntime's DynamicQuantizeMatMul: A quantized at run time as DynamicQuantizeLinear
/// does (u8, scale and zero point from A's range), then MatMulIntegerToFloat with B.
fn dynamic_quantize_matmul(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = ctx.value(n, 0)?;
    let base = n.outputs.first().copied().unwrap_or(n.name);
    let names: Vec<String> = ["q", "scale", "zp"]
        .iter()
        .map(|s| format!("{base}/dql_{s}"))
        .collect();
    let outs = ctx
        .g
        .add_node_named(
            format!("{}/dql", n.name),
            Op::DynamicQuantizeLinear,
            vec![Some(a)],
            names.clone(),
        )
        .map_err(|e| Ctx::ir_err(n, e))?;
    for (name, id) in names.iter().zip(&outs) {
        ctx.bind(n, name, *id)?;
    }
    let (b, bscale) = (ctx.value(n, 1)?, ctx.value(n, 2)?);
    let (bzp, bias) = (ctx.opt_value(n, 3)?, ctx.opt_value(n, 4)?);
    let mut d = Dec::new(ctx, n);
    let acc = d.op_opt(
        Op::MatMulInteger,
        vec![Some(outs[0]), Some(b), Some(outs[2]), bzp],
    )?;
    let dt = d.dtype(bscale);
    let acc = d.cast(acc, dt)?;
    let scale = d.bin(B::Mul, outs[1], bscale)?;
    let y = d.bin(B::Mul, acc, scale)?;
    match bias {
        Some(bv) => d.out(0, Op::Binary(B::Add), &[y, bv])?,
        None => d.out(0, Op::Identity, &[y])?,
    };
    Ok(())
}

/// onnxruntime's FusedMatMul: alpha · op(A) · op(B), op transposing the last two axes
/// where `transA` / `transB` say (the batch-transposing variants are refused).
fn fused_matmul(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let at = n.attrs;
    for name in ["transBatchA", "transBatchB"] {
        if at.int(name, 0)? != 0 {
            return Err(at.err(name, "batch transposition is not supported"));
        }
    }
    let alpha = at.float("alpha", 1.0)?;
    let (ta, tb) = (at.int("transA", 0)? != 0, at.int("transB", 0)? != 0);
    let mut d = Dec::new(ctx, n);
    let mut ab = [d.ctx.value(n, 0)?, d.ctx.value(n, 1)?];
    for (v, t) in ab.iter_mut().zip([ta, tb]) {
        let r = d.ty(*v).rank();
        if t {
            if r < 2 {
                return Err(d.ctx.err(n, "a transposed operand needs rank 2 or more"));
            }
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 2, r - 1);
            *v = d.transpose(*v, perm)?;
        }
    }
    if alpha == 1.0 {
        d.out(0, Op::MatMul, &ab)?;
    } else {
        let y = d.op(Op::MatMul, &ab)?;
        let s = d.scalar(d.dtype(y), alpha as f64);
        d.out(0, Op::Binary(B::Mul), &[y, s])?;
    }
    Ok(())
}

/// The additive mask of a key padding mask: [B] key lengths or [B, L] with 0 for padding,
/// as [B, 1, 1, L] of 0 and `filter`.
fn key_padding(
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
fn multi_head_attention(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let heads = a
        .opt_int("num_heads")?
        .filter(|&h| h > 0)
        .ok_or_else(|| a.err("num_heads", "is required and must be positive"))?
        as usize;
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
