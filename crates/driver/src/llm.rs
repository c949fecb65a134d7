//! Decoders for `pimkit llm` and `pimkit.llm`: a model loaded at one decode step's
//! binding (a zoo decoder shape-only, a file with its symbolic batch/sequence/past dims
//! bound from its input names), and greedy generation driving the importer or the zoo
//! step by step.

use crate::model::{LoadError, load};
use pimkit_engine::EngineError;
use pimkit_ir::Graph;
use pimkit_llm::generate::{Generation, StepShapes, generate, step_inputs};
use pimkit_onnx::LoadOptions;

/// Cached positions of the step a decoder is read at: any value works (the work is
/// scaled to every context), one that differs from the model's sizes keeps score-shaped
/// element-wise work apart from per-token work.
pub const PROBE_CTX: usize = 7;

fn no_fixed(o: &LoadOptions) -> bool {
    o.dims.is_empty() && o.input_shapes.is_empty() && o.bind.is_empty()
}

/// `spec` loaded as one decode step: a transformers `config.json` as the zoo decoder of
/// its shape ([`zoo_spec_of_config`]); zoo decoders shape-only (`weights=none`); files at
/// the user's dims, or, when none are given, one new token after [`PROBE_CTX`] cached
/// positions (batch 1).
pub fn load_decoder(
    spec: &str,
    opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Graph, LoadError> {
    if spec.ends_with(".json") {
        let z = zoo_spec_of_config(spec).map_err(EngineError::input)?;
        notes.push(format!("read as {z}"));
        return load(&z, &[], &LoadOptions::default(), notes);
    }
    if spec.starts_with("zoo:") {
        let extra = [("weights".to_string(), "none".to_string())];
        return load(spec, &extra, opts, notes);
    }
    if !no_fixed(opts) {
        return load(spec, &[], opts, notes);
    }
    let mut probe_notes = Vec::new();
    let probe = load(spec, &[], opts, &mut probe_notes)?;
    let shapes = step_inputs(&probe, 1, PROBE_CTX)
        .map_err(|e| EngineError::input(format!("{spec}: {e}")))?;
    let o = LoadOptions {
        input_shapes: shapes,
        ..opts.clone()
    };
    load(spec, &[], &o, notes)
}

/// Greedy generation of `steps` tokens after `prompt` with the reference interpreter:
/// a file is re-imported at each step's shapes, a zoo decoder rebuilt with its `seq` and
/// `ctx` (same seed, same weights).
pub fn generate_tokens(
    spec: &str,
    prompt: &[i64],
    steps: usize,
) -> Result<Generation, EngineError> {
    let mut load_step = |s: &StepShapes| -> Result<Graph, String> {
        let mut notes = Vec::new();
        if let Some(rest) = spec.strip_prefix("zoo:") {
            let sep = if rest.contains('?') { '&' } else { '?' };
            let z = format!("{spec}{sep}batch=1&seq={}&ctx={}", s.tokens, s.ctx);
            return load(&z, &[], &LoadOptions::default(), &mut notes).map_err(|e| e.to_string());
        }
        let o = LoadOptions {
            input_shapes: s.inputs.clone(),
            ..Default::default()
        };
        load(spec, &[], &o, &mut notes).map_err(|e| e.to_string())
    };
    generate(&mut load_step, prompt, steps).map_err(|e| EngineError::input(format!("{spec}: {e}")))
}

/// `pimkit llm` / `pimkit.llm.analyze`: every model (read once at a decode step) on every
/// system (a built-in name or a TOML file), in parallel over the pairs. Import notes are
/// pushed on `notes` as "spec: note".
pub fn analyze(
    models: &[String],
    systems: &[String],
    opts: &pimkit_llm::LlmOptions,
    load_opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<pimkit_llm::LlmOutput>, EngineError> {
    pimkit_llm::check_options(opts).map_err(EngineError::input)?;
    if models.is_empty() || systems.is_empty() {
        return Err(EngineError::input("give at least one model and one system"));
    }
    let sys = systems
        .iter()
        .map(|s| pimkit_llm::system::load(s).map(|x| (s.clone(), x)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(EngineError::input)?;
    let mut workloads = Vec::new();
    for m in models {
        let mut n = Vec::new();
        let g = load_decoder(m, load_opts, &mut n);
        notes.extend(n.into_iter().map(|x| format!("{m}: {x}")));
        let g = g?;
        let mut w = pimkit_llm::extract(&g).map_err(|e| EngineError::input(format!("{m}: {e}")))?;
        w.model = m.clone();
        if let Some(max) = declared_max_context(m) {
            w.max_context = Some(max);
        }
        w.weight_quant = matmul_nbits_quant(m);
        pimkit_llm::check_workload(opts, &w).map_err(EngineError::input)?;
        workloads.push(w);
    }
    let outs = pimkit_llm::analysis::sweep(&workloads, &sys, opts);
    for o in &outs {
        pimkit_llm::check_fit(o).map_err(EngineError::input)?;
    }
    Ok(outs)
}

/// How an .onnx export stores its weights when its FC layers are MatMulNBits (the most
/// common bits and block size among them; the importer dequantizes them).
fn matmul_nbits_quant(model: &str) -> Option<pimkit_llm::WeightQuant> {
    if !model.ends_with(".onnx") {
        return None;
    }
    let layers = pimkit_onnx::matmul_nbits_layers(std::path::Path::new(model));
    let mut counts: std::collections::BTreeMap<(i64, i64), usize> = Default::default();
    for l in &layers {
        *counts.entry(*l).or_default() += 1;
    }
    let ((bits, block), _) = counts.into_iter().max_by_key(|(_, c)| *c)?;
    Some(pimkit_llm::WeightQuant {
        bits: bits as f64,
        group: block.max(0) as usize,
        layers: layers.len(),
    })
}

/// The positions a model was made for, where its name or files say: a zoo preset's
/// published context, a config.json's `max_position_embeddings` (`n_positions`, `n_ctx`),
/// for an .onnx export the config.json beside it (Hugging Face exports ship one).
fn declared_max_context(model: &str) -> Option<usize> {
    if let Some(z) = model.strip_prefix("zoo:") {
        return pimkit_zoo::max_positions(z.split('?').next().unwrap_or(z));
    }
    let config = if model.ends_with(".json") {
        std::path::PathBuf::from(model)
    } else {
        std::path::Path::new(model).parent()?.join("config.json")
    };
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(config).ok()?).ok()?;
    ["max_position_embeddings", "n_positions", "n_ctx"]
        .iter()
        .find_map(|k| v.get(*k)?.as_u64())
        .map(|n| n as usize)
}

/// A Hugging Face `config.json` as the zoo decoder of that shape (shape-only): the keys
/// of LLaMA/Mistral/Qwen2 (`num_hidden_layers`, `hidden_size`, `num_attention_heads`,
/// `num_key_value_heads`, `intermediate_size`), GPT-2/GPT-J (`n_layer`, `n_embd`,
/// `n_head`, `n_inner`) and OPT (`ffn_dim`); `model_type` picks the style.
pub fn zoo_spec_of_config(path: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{path}: cannot read it ({e}); give a transformers config.json"))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{path}: not JSON ({e}); give a transformers config.json"))?;
    let num = |keys: &[&str]| -> Option<u64> {
        keys.iter().find_map(|k| v.get(*k).and_then(|x| x.as_u64()))
    };
    let need = |keys: &[&str]| -> Result<u64, String> {
        num(keys).ok_or_else(|| {
            format!(
                "{path}: no '{}' (a positive integer); is this a decoder's config.json?",
                keys[0]
            )
        })
    };
    let model_type = v
        .get("model_type")
        .and_then(|m| m.as_str())
        .unwrap_or("llama");
    let style = match model_type {
        "gptj" => "gptj",
        "opt" => "opt",
        "gpt2" | "gpt_neox" | "gpt_bigcode" | "bloom" | "falcon" => "gpt3",
        _ => "llama",
    };
    let layers = need(&["num_hidden_layers", "n_layer", "num_layers"])?;
    let hidden = need(&["hidden_size", "n_embd", "d_model"])?;
    let heads = need(&["num_attention_heads", "n_head"])?;
    let kv = num(&["num_key_value_heads", "multi_query_group_num"]).unwrap_or(heads);
    let ffn = num(&["intermediate_size", "n_inner", "ffn_dim"]).unwrap_or(4 * hidden);
    let vocab = need(&["vocab_size"])?;
    Ok(format!(
        "zoo:decoder?layers={layers}&hidden={hidden}&heads={heads}&kv_heads={kv}&ffn={ffn}&vocab={vocab}&style={style}&weights=none&ctx=7"
    ))
}
