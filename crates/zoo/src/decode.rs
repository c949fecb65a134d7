//! Single-token decode layers (batch 1) of LLaMA-7B and GPT-J-6B, the Torch-PIM real-world
//! workloads (torch-pim.md §5.1, §5.2). Activations are 2-D [1, hidden] so every
//! projection is a plain GEMV (no weight-broadcast copy, torch-pim.md §2.2). Attention
//! tensors are [heads, 1, head_dim]: with batch 1 and one token, HF's
//! view + transpose to [1, heads, 1, head_dim] is this Reshape. The KV cache of `ctx` past
//! tokens comes in as graph inputs and the updated cache goes out (the "append" step).

use crate::layers::Builder;
use crate::params::spec;
use crate::torchpim::rmsnorm_layer;
use crate::{Def, Params, Result};
use pimkit_ir::{BinaryOp, Graph, Op, SliceAxis, UnaryOp, ValueId};

const CTX_HELP: &str = "past tokens in the KV cache (inputs past_key/past_value are [heads, ctx, head_dim]); \
    default 2047 so the new token fills the 2048-position window (max positions, torch-pim.md §5.1/§5.2)";

pub(crate) fn defs() -> Vec<Def> {
    vec![
        Def {
            name: "llama_decode",
            family: "torch-pim",
            description: "one LLaMA-7B decoder layer, single-token decode: RMSNorm, q/k/v GEMVs, RoPE (rotate_half), \
                KV-cache append, attention, o_proj + residual, RMSNorm, SwiGLU FFN + residual (≈202.4M weights at full size)",
            params: vec![
                spec(
                    "hidden",
                    4096,
                    "hidden size (LLaMA-7B: 4096, torch-pim.md §5.1)",
                ),
                spec(
                    "heads",
                    32,
                    "attention heads (LLaMA-7B: 32, head_dim = hidden/heads = 128)",
                ),
                spec("ffn", 11008, "SwiGLU intermediate size (LLaMA-7B: 11008)"),
                spec("ctx", 2047, CTX_HELP),
            ],
            build: llama,
            float: None,
        },
        Def {
            name: "gptj_decode",
            family: "torch-pim",
            description: "one GPT-J-6B decoder layer, single-token decode: LayerNorm, q/k/v GEMVs, partial rotary \
                (rotate_every_two on the first `rotary` dims), KV-cache append, attention, out_proj, parallel \
                fc_in -> gelu_new (tanh) -> fc_out, both added to the residual (≈201.4M weights at full size)",
            params: vec![
                spec(
                    "hidden",
                    4096,
                    "hidden size (GPT-J-6B n_embd: 4096, torch-pim.md §5.2)",
                ),
                spec("heads", 16, "attention heads (GPT-J-6B: 16, head_dim 256)"),
                spec("ffn", 16384, "MLP inner size (GPT-J-6B: 4 * 4096 = 16384)"),
                spec(
                    "rotary",
                    64,
                    "rotary dimensions per head (GPT-J-6B rotary_dim: 64)",
                ),
                spec("ctx", 2047, CTX_HELP),
            ],
            build: gptj,
            float: None,
        },
    ]
}

struct Dims {
    hidden: usize,
    heads: usize,
    hd: usize,
    ffn: usize,
    ctx: usize,
}

fn dims(p: &Params) -> Result<Dims> {
    let hidden = p.size("hidden")?;
    let heads = p.size("heads")?;
    if hidden % heads != 0 {
        return Err(p.invalid(format!("heads = {heads} does not divide hidden = {hidden}")));
    }
    let hd = hidden / heads;
    if hd % 2 != 0 {
        return Err(p.invalid(format!(
            "head_dim = hidden/heads = {hd} must be even for rotary embeddings"
        )));
    }
    Ok(Dims {
        hidden,
        heads,
        hd,
        ffn: p.size("ffn")?,
        ctx: p.size("ctx")?,
    })
}

/// nn.Linear without bias on a 2-D activation: MatMul with the transposed weight.
fn proj(b: &mut Builder, m: &str, x: ValueId, out: usize) -> Result<ValueId> {
    b.linear(m, x, out, false, 1.0)
}

fn slice(
    b: &mut Builder,
    name: &str,
    x: ValueId,
    axis: usize,
    start: usize,
    end: usize,
    step: usize,
) -> Result<ValueId> {
    b.node(
        name,
        Op::Slice {
            axes: vec![SliceAxis {
                axis,
                start: start as i64,
                end: end as i64,
                step: step as i64,
            }],
        },
        &[x],
    )
}

/// Rotary angles of position `pos` for `dim` rotated dims: inv_freq[i] = 10000^(-2i/dim).
fn angles(pos: usize, dim: usize) -> Vec<f64> {
    (0..dim / 2)
        .map(|i| pos as f64 * 10000f64.powf(-(2.0 * i as f64) / dim as f64))
        .collect()
}

/// Attention over the cache: q [h,1,d], k_new/v_new [h,1,d]; returns ([1, hidden], K, V).
fn attend(
    b: &mut Builder,
    m: &str,
    d: &Dims,
    q: ValueId,
    k: ValueId,
    v: ValueId,
    scale_div: bool,
) -> Result<(ValueId, ValueId, ValueId)> {
    let pk = b.input("past_key", &[d.heads, d.ctx, d.hd]);
    let pv = b.input("past_value", &[d.heads, d.ctx, d.hd]);
    let kk = b.node("present_key", Op::Concat { axis: 1 }, &[pk, k])?;
    let vv = b.node("present_value", Op::Concat { axis: 1 }, &[pv, v])?;
    // Written as separate torch calls, as Meta's LLaMA model.py and HF GPT-J's eager
    // attention do (matmul, scale, softmax, matmul): one operator per node.
    let kt = b.node(
        &format!("{m}.key_transpose"),
        Op::Transpose {
            perm: vec![0, 2, 1],
        },
        &[kk],
    )?;
    let s = b.node(&format!("{m}.qk"), Op::MatMul, &[q, kt])?;
    let s = if scale_div {
        // GPT-J: attn_weights / scale_attn (sqrt(head_dim)).
        let c = b.scalar(&format!("{m}.scale_attn"), (d.hd as f32).sqrt());
        b.binary(&format!("{m}.div_scale"), BinaryOp::Div, s, c)?
    } else {
        let c = b.scalar(&format!("{m}.scaling"), 1.0 / (d.hd as f32).sqrt());
        b.binary(&format!("{m}.mul_scale"), BinaryOp::Mul, s, c)?
    };
    let pr = b.node(&format!("{m}.softmax"), Op::Softmax { axis: 2 }, &[s])?;
    let o = b.node(&format!("{m}.pv"), Op::MatMul, &[pr, vv])?;
    let o = b.reshape(&format!("{m}.merge_heads"), o, &[1, d.hidden])?;
    Ok((o, kk, vv))
}

fn heads(b: &mut Builder, name: &str, x: ValueId, d: &Dims) -> Result<ValueId> {
    b.reshape(name, x, &[d.heads, 1, d.hd])
}

/// HF LLaMA rotate_half: x*cos + cat(-x2, x1)*sin with cos/sin of length head_dim.
fn rope_half(
    b: &mut Builder,
    m: &str,
    x: ValueId,
    cos: ValueId,
    sin: ValueId,
    hd: usize,
) -> Result<ValueId> {
    let x1 = slice(b, &format!("{m}.x1"), x, 2, 0, hd / 2, 1)?;
    let x2 = slice(b, &format!("{m}.x2"), x, 2, hd / 2, hd, 1)?;
    let nx2 = b.node(&format!("{m}.neg"), Op::Unary(UnaryOp::Neg), &[x2])?;
    let rot = b.node(
        &format!("{m}.rotate_half"),
        Op::Concat { axis: 2 },
        &[nx2, x1],
    )?;
    let a = b.binary(&format!("{m}.mul_cos"), BinaryOp::Mul, x, cos)?;
    let c = b.binary(&format!("{m}.mul_sin"), BinaryOp::Mul, rot, sin)?;
    b.binary(&format!("{m}.add"), BinaryOp::Add, a, c)
}

fn llama(p: &Params) -> Result<Graph> {
    let d = dims(p)?;
    let mut b = Builder::new("llama_decode", p)?;
    let x = b.input("hidden_states", &[1, d.hidden]);
    let xn = rmsnorm_layer(&mut b, "input_layernorm", x, 1e-6)?;
    let q = proj(&mut b, "self_attn.q_proj", xn, d.hidden)?;
    let k = proj(&mut b, "self_attn.k_proj", xn, d.hidden)?;
    let v = proj(&mut b, "self_attn.v_proj", xn, d.hidden)?;
    let q = heads(&mut b, "self_attn.q_heads", q, &d)?;
    let k = heads(&mut b, "self_attn.k_heads", k, &d)?;
    let v = heads(&mut b, "self_attn.v_heads", v, &d)?;
    let ang = angles(d.ctx, d.hd);
    let hd = d.hd;
    // HF: emb = cat(freqs, freqs), so dim j uses frequency j mod hd/2.
    let cos = b.constant("rotary.cos", &[1, hd], || {
        (0..hd).map(|j| ang[j % (hd / 2)].cos() as f32).collect()
    });
    let sin = b.constant("rotary.sin", &[1, hd], || {
        (0..hd).map(|j| ang[j % (hd / 2)].sin() as f32).collect()
    });
    let q = rope_half(&mut b, "self_attn.rope_q", q, cos, sin, hd)?;
    let k = rope_half(&mut b, "self_attn.rope_k", k, cos, sin, hd)?;
    let (a, kk, vv) = attend(&mut b, "self_attn", &d, q, k, v, false)?;
    let o = proj(&mut b, "self_attn.o_proj", a, d.hidden)?;
    let h = b.binary("residual_attn", BinaryOp::Add, x, o)?;
    let hn = rmsnorm_layer(&mut b, "post_attention_layernorm", h, 1e-6)?;
    let gate = proj(&mut b, "mlp.gate_proj", hn, d.ffn)?;
    let up = proj(&mut b, "mlp.up_proj", hn, d.ffn)?;
    // F.silu (Meta's LLaMA FeedForward: silu(w1(x)) * w3(x)): one call exported as
    // Sigmoid and Mul.
    let act = b.call("mlp.act", |b| {
        let sg = b.node("mlp.act.sigmoid", Op::Unary(UnaryOp::Sigmoid), &[gate])?;
        b.binary("mlp.act.mul", BinaryOp::Mul, gate, sg)
    })?;
    let m = b.binary("mlp.mul_up", BinaryOp::Mul, act, up)?;
    let down = proj(&mut b, "mlp.down_proj", m, d.hidden)?;
    let out = b.binary("residual_mlp", BinaryOp::Add, h, down)?;
    b.finish(&[out, kk, vv])
}

/// GPT-J rotate_every_two on the first `rd` dims: x_rot*cos + stack(-x_odd, x_even)*sin,
/// cos/sin repeat-interleaved; the pass-through dims are concatenated back.
fn rope_every_two(
    b: &mut Builder,
    m: &str,
    x: ValueId,
    cos: ValueId,
    sin: ValueId,
    d: &Dims,
    rd: usize,
) -> Result<ValueId> {
    let h = d.heads;
    let xr = slice(b, &format!("{m}.rot"), x, 2, 0, rd, 1)?;
    let even = slice(b, &format!("{m}.even"), xr, 2, 0, rd, 2)?;
    let odd = slice(b, &format!("{m}.odd"), xr, 2, 1, rd, 2)?;
    let nodd = b.node(&format!("{m}.neg"), Op::Unary(UnaryOp::Neg), &[odd])?;
    let a = b.reshape(&format!("{m}.unsqueeze_neg"), nodd, &[h, 1, rd / 2, 1])?;
    let c = b.reshape(&format!("{m}.unsqueeze_even"), even, &[h, 1, rd / 2, 1])?;
    let st = b.node(&format!("{m}.stack"), Op::Concat { axis: 3 }, &[a, c])?;
    let rot = b.reshape(&format!("{m}.flatten"), st, &[h, 1, rd])?;
    let t1 = b.binary(&format!("{m}.mul_cos"), BinaryOp::Mul, xr, cos)?;
    let t2 = b.binary(&format!("{m}.mul_sin"), BinaryOp::Mul, rot, sin)?;
    let xe = b.binary(&format!("{m}.add"), BinaryOp::Add, t1, t2)?;
    if rd == d.hd {
        return Ok(xe);
    }
    let pass = slice(b, &format!("{m}.pass"), x, 2, rd, d.hd, 1)?;
    b.node(&format!("{m}.cat"), Op::Concat { axis: 2 }, &[xe, pass])
}

fn gptj(p: &Params) -> Result<Graph> {
    let d = dims(p)?;
    let rd = p.size("rotary")?;
    if rd > d.hd || rd % 2 != 0 {
        return Err(p.invalid(format!(
            "rotary = {rd} must be even and at most head_dim = {}",
            d.hd
        )));
    }
    let mut b = Builder::new("gptj_decode", p)?;
    let x = b.input("hidden_states", &[1, d.hidden]);
    let lw = b.weight("ln_1.weight", &[d.hidden], |r, n| r.uniform(n, 0.8, 1.2));
    let lb = b.weight("ln_1.bias", &[d.hidden], |r, n| r.uniform(n, -0.1, 0.1));
    let xn = b.node(
        "ln_1",
        Op::LayerNorm {
            axis: 1,
            epsilon: 1e-5,
        },
        &[x, lw, lb],
    )?;
    let q = proj(&mut b, "attn.q_proj", xn, d.hidden)?;
    let k = proj(&mut b, "attn.k_proj", xn, d.hidden)?;
    let v = proj(&mut b, "attn.v_proj", xn, d.hidden)?;
    let q = heads(&mut b, "attn.q_heads", q, &d)?;
    let k = heads(&mut b, "attn.k_heads", k, &d)?;
    let v = heads(&mut b, "attn.v_heads", v, &d)?;
    let ang = angles(d.ctx, rd);
    // GPT-J: sin/cos repeat_interleave(2), so dim j uses frequency j / 2.
    let cos = b.constant("rotary.cos", &[1, rd], || {
        (0..rd).map(|j| ang[j / 2].cos() as f32).collect()
    });
    let sin = b.constant("rotary.sin", &[1, rd], || {
        (0..rd).map(|j| ang[j / 2].sin() as f32).collect()
    });
    let q = rope_every_two(&mut b, "attn.rope_q", q, cos, sin, &d, rd)?;
    let k = rope_every_two(&mut b, "attn.rope_k", k, cos, sin, &d, rd)?;
    let (a, kk, vv) = attend(&mut b, "attn", &d, q, k, v, true)?;
    let attn_out = proj(&mut b, "attn.out_proj", a, d.hidden)?;
    let h = b.linear("mlp.fc_in", xn, d.ffn, true, 1.0)?;
    let h = b.node("mlp.act", Op::Unary(UnaryOp::Gelu { tanh: true }), &[h])?;
    let mlp_out = b.linear("mlp.fc_out", h, d.hidden, true, 1.0)?;
    let s = b.binary("add_attn_mlp", BinaryOp::Add, attn_out, mlp_out)?;
    let out = b.binary("residual", BinaryOp::Add, s, x)?;
    b.finish(&[out, kk, vv])
}
