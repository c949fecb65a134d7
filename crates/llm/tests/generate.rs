//! The functional check: real decoder exports (a GPT-2 and a grouped-query LLaMA from
//! `transformers`, tools/make_decoder_kv.py) generate greedily with pimkit's interpreter,
//! feeding their own KV cache back, and the tokens equal onnxruntime's (recorded in
//! tests/data/llm-decoders/*/generate.json). Every step's work, read from that step's own
//! graph, equals the work predicted from the first step's coefficients, and the cache the
//! interpreter returns is the size the model predicts.

use pimkit_llm::generate::{StepShapes, generate};
use pimkit_llm::workload::{OpClass, extract};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/llm-decoders")
        .join(name)
}

fn expected(name: &str) -> (Vec<i64>, Vec<i64>, serde_json::Value) {
    let text = std::fs::read_to_string(data(name).join("generate.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let ids = |k: &str| -> Vec<i64> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect()
    };
    (ids("prompt"), ids("tokens"), v)
}

fn check(name: &str) {
    let (prompt, tokens, meta) = expected(name);
    let path = data(name).join("model.onnx");
    let mut load = |s: &StepShapes| -> Result<pimkit_ir::Graph, String> {
        let opts = pimkit_onnx::LoadOptions {
            input_shapes: s.inputs.clone(),
            ..Default::default()
        };
        pimkit_onnx::load_file_notes(&path, &opts)
            .map(|l| l.graph)
            .map_err(|e| e.to_string())
    };
    let g = generate(&mut load, &prompt, tokens.len() - 1).unwrap();
    assert_eq!(
        g.tokens, tokens,
        "{name}: pimkit's greedy tokens vs onnxruntime's"
    );
    for s in &g.steps {
        let rel = (s.ops - s.ops_predicted).abs() / s.ops_predicted;
        assert!(
            rel < 1e-9,
            "{name} ctx {}: ops {} vs predicted {}",
            s.ctx,
            s.ops,
            s.ops_predicted
        );
        assert_eq!(s.kv_bytes, s.kv_bytes_predicted, "{name} ctx {}", s.ctx);
    }
    // The structure read from the graph is the model's configuration.
    let mut opts = pimkit_onnx::LoadOptions::default();
    opts.dims.insert("batch".into(), 1);
    opts.dims.insert("sequence".into(), 1);
    opts.dims.insert("past_sequence".into(), 7);
    opts.dims.insert("total_sequence".into(), 8);
    let graph = pimkit_onnx::load_file_notes(&path, &opts).unwrap().graph;
    let w = extract(&graph).unwrap();
    let n = |k: &str| meta[k].as_u64().unwrap() as usize;
    assert_eq!(w.layers, n("layers"));
    assert_eq!(w.kv_heads, n("kv_heads"));
    assert_eq!(w.head_dim, n("head_dim"));
    assert_eq!(w.hidden, n("hidden"));
    assert_eq!(w.q_dim, n("heads") * n("head_dim"));
    let (h, f, v, kv) = (
        n("hidden") as f64,
        n("ffn") as f64,
        n("vocab") as f64,
        (n("kv_heads") * n("head_dim")) as f64,
    );
    // Q, K, V projections: hidden x (hidden + 2 kv); output hidden x hidden; head vocab.
    let qkv = w.class(OpClass::Qkv).ops_per_token;
    let bias = if name == "gpt2" { h + 2.0 * kv } else { 0.0 };
    let _ = bias;
    assert!(
        (qkv - 2.0 * w.layers as f64 * h * (h + 2.0 * kv)).abs() < 1e-6,
        "{name}: qkv {qkv}"
    );
    assert_eq!(
        w.class(OpClass::LmHead).ops_per_token,
        2.0 * h * v,
        "{name}"
    );
    let ffn_mats = if name == "llama" { 3.0 } else { 2.0 };
    assert_eq!(
        w.class(OpClass::Ffn).ops_per_token,
        2.0 * w.layers as f64 * ffn_mats * h * f,
        "{name}"
    );
    assert_eq!(
        w.class(OpClass::OutProj).ops_per_token,
        2.0 * w.layers as f64 * h * h
    );
    // Attention: 2 MACs per head-dim element per position for scores and context.
    assert_eq!(
        w.class(OpClass::AttnScore).ops_per_position,
        2.0 * w.layers as f64 * h
    );
    assert_eq!(
        w.class(OpClass::AttnContext).ops_per_position,
        2.0 * w.layers as f64 * h
    );
    assert_eq!(w.kv_elems_per_position, 2.0 * w.layers as f64 * kv);
}

#[test]
fn gpt2_generates_onnxruntimes_tokens_with_its_own_cache() {
    check("gpt2");
}

#[test]
fn llama_gqa_generates_onnxruntimes_tokens_with_its_own_cache() {
    check("llama");
}

/// The first decode step's outputs (logits and the grown cache) against onnxruntime's,
/// on the exact inputs it was given.
fn step1_matches(name: &str) {
    let dir = data(name);
    let mut inputs = std::collections::HashMap::new();
    let mut shapes = std::collections::HashMap::new();
    for e in std::fs::read_dir(dir.join("step1_inputs")).unwrap() {
        let p = e.unwrap().path();
        let t = pimkit_ir::npy::read_npy(&p).unwrap();
        let n = p.file_stem().unwrap().to_string_lossy().to_string();
        shapes.insert(n.clone(), t.shape.clone());
        inputs.insert(n, t);
    }
    let opts = pimkit_onnx::LoadOptions {
        input_shapes: shapes,
        ..Default::default()
    };
    let g = pimkit_onnx::load_file_notes(&dir.join("model.onnx"), &opts)
        .unwrap()
        .graph;
    let outs = pimkit_interp::run(&g, &inputs).unwrap();
    for (o, t) in g.outputs.iter().zip(outs) {
        let n = &g.value(*o).name;
        let want =
            pimkit_ir::npy::read_npy(&dir.join("step1_outputs").join(format!("{n}.npy"))).unwrap();
        assert_eq!(t.shape, want.shape, "{name} {n}");
        let (a, b) = (t.to_f32_vec(), want.to_f32_vec());
        let err = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-4, "{name} {n}: max |pimkit - onnxruntime| = {err}");
    }
}

#[test]
fn first_decode_step_equals_onnxruntime_on_its_inputs() {
    step1_matches("gpt2");
    step1_matches("llama");
}
