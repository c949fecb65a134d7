//! BERT's fused embeddings: EmbedLayerNormalization and its quantized form.

use super::super::dec::Dec;
use super::super::{Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, ReduceKind, Tensor, ValueId};

/// BERT's embeddings as onnxruntime's optimizer fuses them: LayerNorm(word[input_ids] +
/// position[0..S or position_ids] + segment[segment_ids]) with gamma and beta; output 1
/// (`mask_index`) is the number of ones in each row of the mask, what Attention's 1-D
/// mask index reads; output 2 the sum before the norm.
pub(super) fn embed_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
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
pub(super) struct Embeddings {
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
pub(super) fn embed_sum_norm(d: &mut Dec, n: &NodeIn, eps: f32, e: Embeddings) -> Result<()> {
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

/// onnxruntime's QEmbedLayerNormalization (`quantize_dynamic` of the optimizer's
/// EmbedLayerNormalization): every table, gamma and beta stored as 8-bit codes with a
/// scale and zero point, dequantized here ((q − zp) · scale) into float constants, then
/// EmbedLayerNormalization's sum, norm and mask index.
pub(super) fn qembed_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
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
