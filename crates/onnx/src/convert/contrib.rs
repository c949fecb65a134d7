//! onnxruntime's contrib ops that its transformer optimizer and its weight-only quantizer
//! write, decomposed into existing IR ops so that every engine runs them (their semantics
//! are onnxruntime's CPU kernels'; tests/data/ort-contrib holds onnxruntime's outputs):
//! SkipLayerNormalization and SkipSimplifiedLayerNormalization (residual add + LayerNorm /
//! RMSNorm, optionally returning the sum), SimplifiedLayerNormalization (RMSNorm, registered
//! by onnxruntime in the default domain), FastGelu, BiasGelu, QuickGelu, and MatMulNBits
//! (2/4/8-bit block-quantized weights, dequantized to a float constant at import).

use super::dec::Dec;
use super::{Converter, Ctx, MS, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, ReduceKind, Tensor, UnaryOp, ValueId};
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
