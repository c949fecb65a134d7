//! Whole decoder-only language models with their KV cache, one generation step: `seq` new
//! tokens of `batch` sequences attend to `ctx` cached positions (`seq` = prompt length and
//! `ctx` = 0 is the prefill; `seq` = 1 a decode step). Inputs and outputs are named as
//! Hugging Face's ONNX exports name them (`input_ids`, `past_key_values.{i}.key|value`
//! [batch, kv_heads, ctx, head_dim], `logits`, `present.{i}.key|value`), so `pimkit llm`
//! reads a zoo model and a user's export the same way. The full-size presets are the
//! published configurations (each cites its `config.json` or paper); with `weights=none`
//! they are shape-only and build instantly.

use crate::layers::Builder;
use crate::params::spec;
use crate::torchpim::rmsnorm_layer;
use crate::{Def, Params, Result};
use pimkit_ir::{BinaryOp, DType, Op, SliceAxis, TensorType, UnaryOp, ValueId};

/// A published configuration: (name, description with its source, layers, hidden, heads,
/// kv_heads, ffn, vocab, style).
struct Preset {
    name: &'static str,
    description: &'static str,
    layers: usize,
    hidden: usize,
    heads: usize,
    kv_heads: usize,
    ffn: usize,
    vocab: usize,
    /// The context length it was trained for: its config.json's `max_position_embeddings`
    /// (LLaMA-2 4096, LLaMA-3 8192, OPT 2048), `n_positions` (GPT-J 2048), GPT-3's paper
    /// n_ctx 2048; 0: none (the runnable `decoder`).
    max_positions: usize,
    style: &'static str,
}

/// `llama`: RMSNorm, rotary positions, SwiGLU FFN, no biases. `gptj`: LayerNorm, rotary
/// positions, GELU FFN with biases. `opt`/`gpt3`: LayerNorm, learned positions, biases
/// everywhere, ReLU (OPT) or GELU (GPT-3) FFN.
const STYLES: &[&str] = &["llama", "gptj", "opt", "gpt3"];

const PRESETS: &[Preset] = &[
    Preset {
        name: "llama2_7b",
        description: "LLaMA-2-7B (meta-llama/Llama-2-7b-hf config.json: 32 layers, hidden 4096, 32 heads, ffn 11008, vocab 32000)",
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 32,
        ffn: 11008,
        vocab: 32000,
        max_positions: 4096,
        style: "llama",
    },
    Preset {
        name: "llama2_13b",
        description: "LLaMA-2-13B (meta-llama/Llama-2-13b-hf config.json: 40 layers, hidden 5120, 40 heads, ffn 13824, vocab 32000)",
        layers: 40,
        hidden: 5120,
        heads: 40,
        kv_heads: 40,
        ffn: 13824,
        vocab: 32000,
        max_positions: 4096,
        style: "llama",
    },
    Preset {
        name: "llama2_70b",
        description: "LLaMA-2-70B (meta-llama/Llama-2-70b-hf config.json: 80 layers, hidden 8192, 64 heads, 8 key/value heads (GQA), ffn 28672, vocab 32000)",
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        ffn: 28672,
        vocab: 32000,
        max_positions: 4096,
        style: "llama",
    },
    Preset {
        name: "llama3_8b",
        description: "LLaMA-3-8B (meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 heads, 8 key/value heads (GQA), ffn 14336, vocab 128256)",
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        ffn: 14336,
        vocab: 128256,
        max_positions: 8192,
        style: "llama",
    },
    Preset {
        name: "gptj_6b",
        description: "GPT-J-6B (EleutherAI/gpt-j-6b config.json: 28 layers, n_embd 4096, 16 heads, n_inner 16384, vocab 50400, rotary_dim 64)",
        layers: 28,
        hidden: 4096,
        heads: 16,
        kv_heads: 16,
        ffn: 16384,
        vocab: 50400,
        max_positions: 2048,
        style: "gptj",
    },
    Preset {
        name: "opt_30b",
        description: "OPT-30B (facebook/opt-30b config.json: 48 layers, hidden 7168, 56 heads, ffn 28672, vocab 50272)",
        layers: 48,
        hidden: 7168,
        heads: 56,
        kv_heads: 56,
        ffn: 28672,
        vocab: 50272,
        max_positions: 2048,
        style: "opt",
    },
    Preset {
        name: "opt_66b",
        description: "OPT-66B (facebook/opt-66b config.json: 64 layers, hidden 9216, 72 heads, ffn 36864, vocab 50272)",
        layers: 64,
        hidden: 9216,
        heads: 72,
        kv_heads: 72,
        ffn: 36864,
        vocab: 50272,
        max_positions: 2048,
        style: "opt",
    },
    Preset {
        name: "gpt3_175b",
        description: "GPT-3 175B (Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads of 128, d_ff = 4 d_model; vocab 50257 of GPT-2's tokenizer)",
        layers: 96,
        hidden: 12288,
        heads: 96,
        kv_heads: 96,
        ffn: 49152,
        vocab: 50257,
        max_positions: 2048,
        style: "gpt3",
    },
    // A tiny model with random weights that runs in the interpreter (tests, examples).
    Preset {
        name: "decoder",
        description: "a small decoder with the same structure (defaults: 2 layers, hidden 64, 4 heads, 2 key/value heads): \
            set layers, hidden, heads, kv_heads, ffn, vocab and style to describe any decoder",
        layers: 2,
        hidden: 64,
        heads: 4,
        kv_heads: 2,
        ffn: 128,
        vocab: 256,
        max_positions: 0,
        style: "llama",
    },
];

/// The context length preset `name` was trained for (`None` for `decoder` and unknown
/// names).
pub fn max_positions(name: &str) -> Option<usize> {
    PRESETS
        .iter()
        .find(|p| p.name == name)
        .map(|p| p.max_positions)
        .filter(|&n| n > 0)
}

pub(crate) fn defs() -> Vec<Def> {
    PRESETS
        .iter()
        .map(|p| Def {
            name: p.name,
            family: "llm",
            description: p.description,
            params: vec![
                spec("layers", p.layers, "decoder layers"),
                spec("hidden", p.hidden, "hidden size"),
                spec("heads", p.heads, "attention (query) heads; head_dim = hidden / heads"),
                spec("kv_heads", p.kv_heads, "key/value heads (fewer than heads: grouped-query attention; 1: multi-query)"),
                spec("ffn", p.ffn, "FFN inner size"),
                spec("vocab", p.vocab, "vocabulary size"),
                spec("style", p.style, "llama | gptj | opt | gpt3 (norm, positions, FFN, biases)"),
                spec("batch", 1, "sequences in the batch"),
                spec("seq", 1, "new tokens per sequence in this step (1: a decode step; the prompt length: prefill)"),
                spec("ctx", 15, "positions already in the KV cache (0: prefill)"),
            ],
            build: decoder,
            float: None,
        })
        .collect()
}

struct Dims {
    batch: usize,
    seq: usize,
    ctx: usize,
    hidden: usize,
    heads: usize,
    kvh: usize,
    hd: usize,
    ffn: usize,
    vocab: usize,
    style: &'static str,
}

fn dims(p: &Params) -> Result<Dims> {
    let hidden = p.size("hidden")?;
    let heads = p.size("heads")?;
    let kvh = p.size("kv_heads")?;
    if hidden % heads != 0 {
        return Err(p.invalid(format!("heads = {heads} does not divide hidden = {hidden}")));
    }
    if heads % kvh != 0 {
        return Err(p.invalid(format!(
            "kv_heads = {kvh} does not divide heads = {heads} (each key/value head serves heads/kv_heads query heads)"
        )));
    }
    let hd = hidden / heads;
    if hd % 2 != 0 {
        return Err(p.invalid(format!(
            "head_dim = hidden/heads = {hd} must be even for rotary embeddings"
        )));
    }
    Ok(Dims {
        batch: p.size("batch")?,
        seq: p.size("seq")?,
        ctx: p.count("ctx")?,
        hidden,
        heads,
        kvh,
        hd,
        ffn: p.size("ffn")?,
        vocab: p.size("vocab")?,
        style: p.choice("style", STYLES)?,
    })
}

/// A linear layer on [batch, seq, in]: MatMul with the [in, out] weight, plus a bias.
fn fc(b: &mut Builder, m: &str, x: ValueId, out: usize, bias: bool) -> Result<ValueId> {
    let inf = *b.g.ty(x).shape.last().unwrap_or(&1);
    let w = b.weight(&format!("{m}.weight"), &[inf, out], |r, n| {
        r.kaiming(n, inf, 1.0)
    });
    let y = b.node(m, Op::MatMul, &[x, w])?;
    if !bias {
        return Ok(y);
    }
    let bv = b.weight(&format!("{m}.bias"), &[out], |r, n| {
        r.uniform(n, -0.05, 0.05)
    });
    b.binary(&format!("{m}.add_bias"), BinaryOp::Add, y, bv)
}

fn norm(b: &mut Builder, m: &str, x: ValueId, d: &Dims) -> Result<ValueId> {
    if d.style == "llama" {
        return rmsnorm_layer(b, m, x, 1e-6);
    }
    let n = d.hidden;
    let s = b.weight(&format!("{m}.weight"), &[n], |r, k| r.uniform(k, 0.8, 1.2));
    let bias = b.weight(&format!("{m}.bias"), &[n], |r, k| r.uniform(k, -0.05, 0.05));
    b.node(
        m,
        Op::LayerNorm {
            axis: 2,
            epsilon: 1e-5,
        },
        &[x, s, bias],
    )
}

/// [batch, seq, n·hd] -> [batch, n, seq, hd].
fn split_heads(b: &mut Builder, m: &str, x: ValueId, n: usize, d: &Dims) -> Result<ValueId> {
    let r = b.reshape(&format!("{m}.view"), x, &[d.batch, d.seq, n, d.hd])?;
    b.node(
        &format!("{m}.transpose"),
        Op::Transpose {
            perm: vec![0, 2, 1, 3],
        },
        &[r],
    )
}

/// Rotary embedding (rotate_half) of [batch, n, seq, hd] at positions ctx..ctx+seq.
fn rope(b: &mut Builder, m: &str, x: ValueId, d: &Dims) -> Result<ValueId> {
    let (seq, hd, ctx) = (d.seq, d.hd, d.ctx);
    let table = |sin: bool| {
        move || {
            let mut v = Vec::with_capacity(seq * hd);
            for t in 0..seq {
                for i in 0..hd {
                    let k = (i % (hd / 2)) as f64;
                    let a = (ctx + t) as f64 * 10000f64.powf(-2.0 * k / hd as f64);
                    v.push(if sin { a.sin() } else { a.cos() } as f32);
                }
            }
            v
        }
    };
    let cos = b.constant(&format!("{m}.cos"), &[seq, hd], table(false));
    let sin = b.constant(&format!("{m}.sin"), &[seq, hd], table(true));
    let half = |b: &mut Builder, n: &str, lo: usize, hi: usize| {
        b.node(
            n,
            Op::Slice {
                axes: vec![SliceAxis {
                    axis: 3,
                    start: lo as i64,
                    end: hi as i64,
                    step: 1,
                }],
            },
            &[x],
        )
    };
    let x1 = half(b, &format!("{m}.x1"), 0, hd / 2)?;
    let x2 = half(b, &format!("{m}.x2"), hd / 2, hd)?;
    let nx2 = b.node(&format!("{m}.neg"), Op::Unary(UnaryOp::Neg), &[x2])?;
    let rot = b.node(
        &format!("{m}.rotate_half"),
        Op::Concat { axis: 3 },
        &[nx2, x1],
    )?;
    let a = b.binary(&format!("{m}.mul_cos"), BinaryOp::Mul, x, cos)?;
    let c = b.binary(&format!("{m}.mul_sin"), BinaryOp::Mul, rot, sin)?;
    b.binary(&format!("{m}.add"), BinaryOp::Add, a, c)
}

/// Key/value heads repeated for their query heads (grouped-query attention), as HF's
/// repeat_kv: [batch, kvh, L, hd] -> [batch, heads, L, hd].
fn repeat_kv(b: &mut Builder, m: &str, x: ValueId, len: usize, d: &Dims) -> Result<ValueId> {
    if d.kvh == d.heads {
        return Ok(x);
    }
    let g = d.heads / d.kvh;
    let u = b.reshape(
        &format!("{m}.unsqueeze"),
        x,
        &[d.batch, d.kvh, 1, len, d.hd],
    )?;
    let e = b.node(
        &format!("{m}.expand"),
        Op::Expand {
            shape: vec![d.batch, d.kvh, g, len, d.hd],
        },
        &[u],
    )?;
    b.reshape(&format!("{m}.merge"), e, &[d.batch, d.heads, len, d.hd])
}

/// Additive causal mask [seq, ctx+seq]: new token t sees positions 0..=ctx+t.
fn causal_mask(b: &mut Builder, d: &Dims) -> ValueId {
    let (seq, len, ctx) = (d.seq, d.ctx + d.seq, d.ctx);
    b.constant("causal_mask", &[seq, len], move || {
        (0..seq)
            .flat_map(|t| (0..len).map(move |j| if j <= ctx + t { 0.0 } else { f32::MIN }))
            .collect()
    })
}

fn layer(
    b: &mut Builder,
    i: usize,
    x: ValueId,
    mask: Option<ValueId>,
    d: &Dims,
) -> Result<(ValueId, ValueId, ValueId)> {
    let m = format!("layers.{i}");
    let bias = d.style != "llama";
    let xn = norm(b, &format!("{m}.input_layernorm"), x, d)?;
    let q = fc(
        b,
        &format!("{m}.self_attn.q_proj"),
        xn,
        d.heads * d.hd,
        bias && d.style != "gptj",
    )?;
    let k = fc(
        b,
        &format!("{m}.self_attn.k_proj"),
        xn,
        d.kvh * d.hd,
        bias && d.style != "gptj",
    )?;
    let v = fc(
        b,
        &format!("{m}.self_attn.v_proj"),
        xn,
        d.kvh * d.hd,
        bias && d.style != "gptj",
    )?;
    let mut q = split_heads(b, &format!("{m}.self_attn.q"), q, d.heads, d)?;
    let mut k = split_heads(b, &format!("{m}.self_attn.k"), k, d.kvh, d)?;
    let v = split_heads(b, &format!("{m}.self_attn.v"), v, d.kvh, d)?;
    if matches!(d.style, "llama" | "gptj") {
        q = rope(b, &format!("{m}.self_attn.rope_q"), q, d)?;
        k = rope(b, &format!("{m}.self_attn.rope_k"), k, d)?;
    }
    let cache = [d.batch, d.kvh, d.ctx, d.hd];
    let pk = b.input(&format!("past_key_values.{i}.key"), &cache);
    let pv = b.input(&format!("past_key_values.{i}.value"), &cache);
    let kk = b.node(
        &format!("present.{i}.key"),
        Op::Concat { axis: 2 },
        &[pk, k],
    )?;
    let vv = b.node(
        &format!("present.{i}.value"),
        Op::Concat { axis: 2 },
        &[pv, v],
    )?;
    let len = d.ctx + d.seq;
    let kr = repeat_kv(b, &format!("{m}.self_attn.repeat_k"), kk, len, d)?;
    let vr = repeat_kv(b, &format!("{m}.self_attn.repeat_v"), vv, len, d)?;
    let kt = b.node(
        &format!("{m}.self_attn.key_transpose"),
        Op::Transpose {
            perm: vec![0, 1, 3, 2],
        },
        &[kr],
    )?;
    let s = b.node(&format!("{m}.self_attn.qk"), Op::MatMul, &[q, kt])?;
    let c = b.scalar(
        &format!("{m}.self_attn.scaling"),
        1.0 / (d.hd as f32).sqrt(),
    );
    let mut s = b.binary(&format!("{m}.self_attn.mul_scale"), BinaryOp::Mul, s, c)?;
    if let Some(mask) = mask {
        s = b.binary(&format!("{m}.self_attn.add_mask"), BinaryOp::Add, s, mask)?;
    }
    let pr = b.node(
        &format!("{m}.self_attn.softmax"),
        Op::Softmax { axis: 3 },
        &[s],
    )?;
    let o = b.node(&format!("{m}.self_attn.pv"), Op::MatMul, &[pr, vr])?;
    let o = b.node(
        &format!("{m}.self_attn.merge_transpose"),
        Op::Transpose {
            perm: vec![0, 2, 1, 3],
        },
        &[o],
    )?;
    let o = b.reshape(
        &format!("{m}.self_attn.merge_heads"),
        o,
        &[d.batch, d.seq, d.hidden],
    )?;
    let o = fc(b, &format!("{m}.self_attn.o_proj"), o, d.hidden, bias)?;
    let h = b.binary(&format!("{m}.residual_attn"), BinaryOp::Add, x, o)?;
    let hn = norm(b, &format!("{m}.post_attention_layernorm"), h, d)?;
    let f = if d.style == "llama" {
        let g = fc(b, &format!("{m}.mlp.gate_proj"), hn, d.ffn, false)?;
        let sg = b.node(
            &format!("{m}.mlp.sigmoid"),
            Op::Unary(UnaryOp::Sigmoid),
            &[g],
        )?;
        let g = b.binary(&format!("{m}.mlp.silu"), BinaryOp::Mul, g, sg)?;
        let u = fc(b, &format!("{m}.mlp.up_proj"), hn, d.ffn, false)?;
        let gu = b.binary(&format!("{m}.mlp.gate_mul_up"), BinaryOp::Mul, g, u)?;
        fc(b, &format!("{m}.mlp.down_proj"), gu, d.hidden, false)?
    } else {
        let a = fc(b, &format!("{m}.mlp.fc_in"), hn, d.ffn, true)?;
        let act = if d.style == "opt" {
            UnaryOp::Relu
        } else {
            UnaryOp::Gelu { tanh: true }
        };
        let a = b.node(&format!("{m}.mlp.act"), Op::Unary(act), &[a])?;
        fc(b, &format!("{m}.mlp.fc_out"), a, d.hidden, true)?
    };
    let y = b.binary(&format!("{m}.residual_mlp"), BinaryOp::Add, h, f)?;
    Ok((y, kk, vv))
}

/// More layers than any published decoder (GPT-3: 96, MT-NLG: 105) by far; beyond it a
/// typo would build a graph of millions of nodes.
const MAX_LAYERS: usize = 4096;

fn decoder(p: &Params) -> Result<pimkit_ir::Graph> {
    let d = dims(p)?;
    let layers = p.size("layers")?;
    if layers > MAX_LAYERS {
        return Err(p.invalid(format!("layers = {layers}: use 1..={MAX_LAYERS}")));
    }
    let mut b = Builder::new(p.entry(), p)?;
    let ids_ty = TensorType::new(DType::I64, vec![d.batch, d.seq]);
    let ids_name = b.unique("input_ids");
    let ids = b.g.add_input(ids_name, ids_ty);
    let table = b.weight("embed_tokens.weight", &[d.vocab, d.hidden], |r, n| {
        r.uniform(n, -1.0, 1.0)
    });
    let mut x = b.node("embed_tokens", Op::Gather { axis: 0 }, &[table, ids])?;
    if matches!(d.style, "opt" | "gpt3") {
        // Learned positions ctx..ctx+seq, gathered from the position table at export.
        let pos = b.weight("embed_positions.rows", &[d.seq, d.hidden], |r, n| {
            r.uniform(n, -0.1, 0.1)
        });
        x = b.binary("add_positions", BinaryOp::Add, x, pos)?;
    }
    let mask = (d.seq > 1).then(|| causal_mask(&mut b, &d));
    let mut presents = Vec::with_capacity(2 * layers);
    for i in 0..layers {
        let (y, k, v) = layer(&mut b, i, x, mask, &d)?;
        x = y;
        presents.extend([k, v]);
    }
    let xn = norm(&mut b, "norm", x, &d)?;
    // lm_head; its output is the graph's `logits`, as in Hugging Face's exports.
    let hidden = d.hidden;
    let w = b.weight("lm_head.weight", &[hidden, d.vocab], |r, n| {
        r.kaiming(n, hidden, 1.0)
    });
    let logits = b.node("logits", Op::MatMul, &[xn, w])?;
    let mut outs = vec![logits];
    outs.extend(presents);
    b.finish(&outs)
}
