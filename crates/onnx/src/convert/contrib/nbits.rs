//! MatMulNBits: block-quantized 2/4/8-bit weights, dequantized at import.

use super::super::dec::Dec;
use super::super::{Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, Tensor};

/// Y = A · dequant(B)ᵀ (+ bias). B holds N rows of K `bits`-bit codes in blocks of
/// `block_size` along K ([N, blocks, block_size·bits/8] bytes, low bits first); each
/// block has a scale and a zero point (packed like B when uint8, one value per block when
/// A's type; 2^(bits-1) when absent): w = (q − zp) · scale. Dequantized once, here, into
/// a [K, N] constant of A's type; the weight-only quantization is recorded in a note
/// (`pimkit llm --weight-bits` counts the packed bytes).
pub(super) fn matmul_nbits(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
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
