//! The generation workload and the serving model: published parameter counts of the zoo's
//! full-size decoders, coefficients that predict any other batch/tokens/context exactly,
//! grouped-query caches, 4-bit weights, monotone time, capacity, and the errors users see.

use pimkit_engine::NoProgress;
use pimkit_llm::sim::{self, Policy, Precision};
use pimkit_llm::workload::{OpClass, extract, graph_ops};
use pimkit_llm::{LlmOptions, analyze};

fn zoo(spec: &str) -> pimkit_ir::Graph {
    pimkit_zoo::build_spec(spec).unwrap()
}

fn fp16() -> Precision {
    LlmOptions::default().precision
}

#[test]
fn zoo_presets_have_their_published_parameter_counts() {
    // Hugging Face model cards / config-derived totals (embeddings, norms and LM head included).
    for (name, params) in [
        ("llama2_7b", 6_738_415_616.0),
        ("llama2_13b", 13_015_864_320.0),
        ("llama2_70b", 68_976_648_192.0),
        ("llama3_8b", 8_030_261_248.0),
        ("gptj_6b", 6_053_381_344.0),
    ] {
        let w = extract(&zoo(&format!("{name}?weights=none"))).unwrap();
        let rel = w.resident_elems / params - 1.0;
        assert!(
            rel.abs() < 0.005,
            "{name}: {} vs {params} ({:+.3} %)",
            w.resident_elems,
            rel * 100.0
        );
    }
    // GPT-3: 175B in Brown et al. (2020), 174.6B from its Table 2.1 shapes.
    let w = extract(&zoo("gpt3_175b?weights=none")).unwrap();
    assert!(
        (w.resident_elems / 174.6e9 - 1.0).abs() < 0.01,
        "{}",
        w.resident_elems
    );
}

#[test]
fn one_binding_predicts_every_other_exactly() {
    // Several new tokens, so that the causal mask's work is in the reference too (a
    // one-token step has no mask).
    let a = extract(&zoo("decoder?batch=1&seq=2&ctx=15")).unwrap();
    for (b, t, ctx) in [(3, 4, 9), (2, 3, 100), (5, 7, 1)] {
        let g = zoo(&format!("decoder?batch={b}&seq={t}&ctx={ctx}"));
        let direct = graph_ops(&g);
        let l = (ctx + t) as f64;
        let predicted = a.total_ops(b as f64, t as f64, l);
        assert!(
            (direct - predicted).abs() <= 1e-9 * direct,
            "({b},{t},{ctx}): {direct} vs {predicted}"
        );
        let other = extract(&g).unwrap();
        assert_eq!(other.kv_elems_per_position, a.kv_elems_per_position);
        assert_eq!(other.weight_elems, a.weight_elems);
        for c in OpClass::ALL {
            let (x, y) = (a.class(c), other.class(c));
            assert!(
                (x.ops_per_token - y.ops_per_token).abs() < 1e-6,
                "{c:?} ({b},{t},{ctx}) {x:?} {y:?}"
            );
            assert!(
                (x.ops_per_position - y.ops_per_position).abs() < 1e-6,
                "{c:?} ({b},{t},{ctx}) {x:?} {y:?}"
            );
        }
    }
}

#[test]
fn grouped_query_attention_shrinks_the_cache_not_the_attention() {
    let w = extract(&zoo("llama2_70b?weights=none")).unwrap();
    assert_eq!((w.layers, w.kv_heads, w.head_dim), (80, 8, 128));
    assert_eq!(w.kv_elems_per_position, (80 * 2 * 8 * 128) as f64);
    // The scores still cover all 64 query heads: 2 ops per head-dim element per position.
    assert_eq!(
        w.class(OpClass::AttnScore).ops_per_position,
        2.0 * 80.0 * 8192.0
    );
    assert_eq!(w.q_dim, 8192);
    let mha = extract(&zoo("llama2_70b?weights=none&kv_heads=64")).unwrap();
    assert_eq!(mha.kv_elems_per_position, 8.0 * w.kv_elems_per_position);
}

#[test]
fn four_bit_weights_quarter_the_streamed_bytes() {
    let w = extract(&zoo("llama2_7b?weights=none")).unwrap();
    // One GPU: no all-reduce latency hiding the weight stream.
    let s = pimkit_llm::system::load_str("[xpu]\ndevices = 1\n", "one-h100.toml").unwrap();
    let mut p4 = fp16();
    p4.weight_bits = 4.0;
    p4.weight_group = 128;
    let b16 = sim::class_bytes(&w, OpClass::Ffn, &fp16(), 1.0, 1.0, 1024.0);
    let b4 = sim::class_bytes(&w, OpClass::Ffn, &p4, 1.0, 1.0, 1024.0);
    let ffn = w.class(OpClass::Ffn).weight_elems;
    let act = b16 - 2.0 * ffn;
    assert!((b4 - act - (ffn * 0.5 + ffn / 128.0 * 2.0)).abs() < 1.0);
    // Batch-1 decode is weight-bandwidth bound: 4-bit weights make it ~3.5x faster.
    let t16 = sim::step(&w, &s, Policy::Xpu, &fp16(), 1, 1, 1024).time_s;
    let t4 = sim::step(&w, &s, Policy::Xpu, &p4, 1, 1, 1024).time_s;
    assert!(t16 / t4 > 2.0, "{t16} / {t4}");
}

#[test]
fn time_grows_with_context_and_batch_and_pim_wins_long_batched_attention() {
    let w = extract(&zoo("llama2_13b?weights=none")).unwrap();
    let s = pimkit_llm::system::load("dgx-h100-attacc-bank").unwrap();
    // Torch-PIM's rule is a heuristic: it can keep a class on the slower place at one
    // size and move it at the next, so its time is not monotone.
    for policy in Policy::ALL.into_iter().filter(|p| *p != Policy::TorchPim) {
        let mut last = 0.0;
        for l in [128, 1024, 8192, 32768] {
            let t = sim::step(&w, &s, policy, &fp16(), 16, 1, l).time_s;
            assert!(t >= last, "{policy:?} context {l}");
            last = t;
        }
        let mut last = 0.0;
        for b in [1, 8, 64, 512] {
            let t = sim::step(&w, &s, policy, &fp16(), b, 1, 4096).time_s;
            assert!(t >= last, "{policy:?} batch {b}");
            last = t;
        }
    }
    let x = sim::step(&w, &s, Policy::Xpu, &fp16(), 64, 1, 8192);
    let a = sim::step(&w, &s, Policy::AttnPim, &fp16(), 64, 1, 8192);
    assert!(a.time_s < 0.6 * x.time_s, "{} vs {}", a.time_s, x.time_s);
    assert!(a.energy_j < x.energy_j);
    // Auto never loses to either fixed placement by more than the overlap rules give.
    let auto = sim::step(&w, &s, Policy::Auto, &fp16(), 64, 1, 8192);
    assert!(auto.time_s <= x.time_s * 1.0001);
    // Energy per token falls with batch on the xPU (the weights are shared).
    let e = |b: usize| sim::step(&w, &s, Policy::Xpu, &fp16(), b, 1, 2048).energy_j / b as f64;
    assert!(e(64) < e(8) && e(8) < e(1));
}

#[test]
fn energy_is_linear_in_steps_and_the_batch_limit_is_the_capacity() {
    let w = extract(&zoo("llama2_70b?weights=none")).unwrap();
    let s = pimkit_llm::system::load("dgx-h100").unwrap();
    let o = LlmOptions {
        prompt: 4096,
        generate: 4,
        contexts: vec![4096],
        batches: vec![1, 2],
        ..Default::default()
    };
    let out = analyze(&w, &s, "dgx-h100", &o, &mut NoProgress);
    let kv = out.memory.kv_bytes_per_position;
    assert_eq!(kv, (80 * 2 * 8 * 128 * 2) as f64);
    let free = out.memory.kv_capacity - out.memory.weight_bytes;
    assert_eq!(
        out.memory.max_batch,
        (free / (kv * 4100.0)).floor() as usize
    );
    let o8 = LlmOptions { generate: 8, ..o };
    let out8 = analyze(&w, &s, "dgx-h100", &o8, &mut NoProgress);
    // Decode energy of 8 steps = the 4 of the shorter run + 4 more at longer context:
    // more than twice nothing, less than twice plus the growth of the cache.
    let (d4, d8) = (out.generation[0].decode_s, out8.generation[0].decode_s);
    assert!(d8 > 2.0 * d4 && d8 < 2.0 * d4 * 1.01, "{d4} {d8}");
}

#[test]
fn a_graph_without_a_cache_is_refused_with_what_to_do() {
    let e = extract(&zoo("mlp")).unwrap_err().to_string();
    assert!(
        e.contains("no KV cache found") && e.contains("past key/values"),
        "{e}"
    );
}

#[test]
fn bad_system_files_name_file_field_value_and_range() {
    let e = pimkit_llm::system::load_str("[xpu]\ndevices = 0\n", "my.toml")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "my.toml: xpu.devices = 0: use 1..=4096");
    let e = pimkit_llm::system::load_str("base = \"nope\"\n", "my.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("my.toml: base = nope: no such system; use one of dgx-a100"),
        "{e}"
    );
    let e = pimkit_llm::system::load_str("[pim]\nplacement = \"row\"\n", "my.toml")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("my.toml: pim"), "{e}");
    let e = pimkit_llm::system::load("no/such/file.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such file and no such system"), "{e}");
}

#[test]
fn every_built_in_system_loads_and_gemv_pim_helps_batch_one() {
    for (name, _, _) in pimkit_llm::system::SYSTEMS {
        let s = pimkit_llm::system::load(name).unwrap();
        assert_eq!(s.name, name);
    }
    // AiM's per-bank MACs stream a 7B model's weights faster and cheaper than the GPUs'
    // HBM at batch 1 (what GEMV PIM is for); at batch 16 the GPUs reuse the weights.
    let w = extract(&zoo("llama2_7b?weights=none")).unwrap();
    let s = pimkit_llm::system::load("dgx-h100-aim").unwrap();
    let x = sim::step(&w, &s, Policy::Xpu, &fp16(), 1, 1, 2048);
    let f = sim::step(&w, &s, Policy::FcPim, &fp16(), 1, 1, 2048);
    assert!(f.time_s < x.time_s && f.energy_j < 0.5 * x.energy_j);
    let x16 = sim::step(&w, &s, Policy::Xpu, &fp16(), 16, 1, 2048);
    let f16 = sim::step(&w, &s, Policy::FcPim, &fp16(), 16, 1, 2048);
    assert!(f16.energy_j / 16.0 > x16.energy_j / 16.0);
}

#[test]
fn torch_pim_rule_offloads_small_batch_gemvs_and_keeps_large_batch_fc_on_the_xpu() {
    let w = extract(&zoo("llama2_7b?weights=none")).unwrap();
    let s = pimkit_llm::system::load("dgx-h100-attacc-bank").unwrap();
    let place = |st: &sim::StepCost, class: &str| {
        st.classes.iter().find(|c| c.class == class).unwrap().place
    };
    // Batch 1: every FC layer is a GEMV the xPU runs at its memory bandwidth: offloaded.
    let one = sim::step(&w, &s, Policy::TorchPim, &fp16(), 1, 1, 4096);
    for c in ["qkv", "out_proj", "ffn", "attn_score", "attn_context"] {
        assert_eq!(place(&one, c), sim::Place::Pim, "batch 1 {c}");
    }
    // Batch 256: the xPU reuses the weights 256 times and beats PIM's compute (C1 fails).
    let big = sim::step(&w, &s, Policy::TorchPim, &fp16(), 256, 1, 4096);
    for c in ["qkv", "out_proj", "ffn"] {
        assert_eq!(place(&big, c), sim::Place::Xpu, "batch 256 {c}");
        let d = big.rule.iter().find(|r| r.class == c).unwrap().decision;
        assert!(!d.c1 && d.rejected_at == 1, "{c}: {d:?}");
    }
    // Each decision is the offload engine's rule on the class's facts, and the facts are
    // the class's cost on the xPUs (the `xpu` policy's, before any fixed kernel time).
    let on_xpu = sim::step(&w, &s, Policy::Xpu, &fp16(), 256, 1, 4096);
    for r in &big.rule {
        let again = pimkit_engine::offload_rule::decide(&r.facts, r.units, &r.params);
        assert_eq!(again, r.decision, "{}", r.class);
        if r.class != "vector" {
            let x = on_xpu.classes.iter().find(|c| c.class == r.class).unwrap();
            assert!(
                (r.facts.t_cpu_ns / (x.time_s * 1e9) - 1.0).abs() < 1e-12,
                "{}",
                r.class
            );
            assert_eq!(r.facts.read_bytes, x.bytes, "{}", r.class);
        }
    }
    // Without PIM the rule has nothing to decide.
    let h = pimkit_llm::system::load("dgx-h100").unwrap();
    let xo = sim::step(&w, &h, Policy::TorchPim, &fp16(), 1, 1, 4096);
    assert!(xo.rule.is_empty() && xo.classes.iter().all(|c| c.place != sim::Place::Pim));
}
