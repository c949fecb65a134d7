//! CENT (ASPLOS 2025, GPU-free: 32 CXL devices of GDDR6-AiM) reproduced: Llama2-70B
//! decode throughput under pipeline parallelism against the results of CENT's artifact
//! (Yufeng98/CENT@8c79786, cent_simulation/processed_results.csv and
//! simulation_results.csv; Figure 13b's CENT bar is the PP=80 row). docs/llm.md has the
//! table, the differences and the commands that regenerate it.

use pimkit_engine::NoProgress;
use pimkit_llm::{LlmOptions, Policy, System, analyze, extract};

fn llama70b() -> pimkit_llm::Workload {
    let g = pimkit_zoo::build_spec("llama2_70b?weights=none").unwrap();
    extract(&g).unwrap()
}

fn cent() -> System {
    pimkit_llm::system::load("cent").unwrap()
}

/// CENT's setting: 512 prompt tokens, 3584 generated, one sequence per pipeline stage.
fn options(stages: usize, contexts: Vec<usize>) -> LlmOptions {
    LlmOptions {
        policy: Some(Policy::AllPim),
        prompt: 512,
        generate: 3584,
        contexts,
        batches: vec![stages],
        pipeline: stages,
        ..Default::default()
    }
}

fn within(what: &str, got: f64, want: f64, tol: f64) {
    let rel = got / want - 1.0;
    assert!(
        rel.abs() <= tol,
        "{what}: pimkit {got:.1} vs CENT {want:.1} ({:+.1} %)",
        rel * 100.0
    );
}

#[test]
fn llama2_70b_decode_throughput_within_25_percent_of_cents_simulator() {
    let (w, s) = (llama70b(), cent());
    // (pipeline stages, decoding tokens/s, prefill tokens/s; mJ per decoded token),
    // processed_results.csv rows "Llama2-70B,32,4096,PP,1,...".
    for (pp, decode, prefill, mj) in [
        (80, 1150.7837, 1425.6059, 698.665),
        (32, 1295.7508, 1648.4917, 743.648),
    ] {
        let out = analyze(&w, &s, "cent", &options(pp, vec![4096]), &mut NoProgress);
        let g = &out.generation[0];
        assert!(
            g.fits,
            "PP={pp}: 80 sequences of 4096 positions fit 512 GiB"
        );
        within(
            &format!("PP={pp} decoding tokens/s"),
            g.decode_tokens_per_s,
            decode,
            0.25,
        );
        let pre = (pp * 512) as f64 / g.prefill_s;
        within(&format!("PP={pp} prefill tokens/s"), pre, prefill, 0.25);
        // CENT's energy adds standby and refresh power, which pimkit does not model
        // (docs/llm.md): pimkit's is lower, by less than a third.
        let e = g.decode_j_per_token * 1e3;
        assert!(
            e < mj && e > mj * 0.67,
            "PP={pp}: {e:.1} mJ vs CENT {mj:.1} mJ"
        );
    }
}

#[test]
fn per_context_points_follow_cents_curve() {
    // simulation_results.csv, Llama2-70B PP=80 TP=1: tokens/s at one context length.
    let (w, s) = (llama70b(), cent());
    let out = analyze(
        &w,
        &s,
        "cent",
        &options(80, vec![128, 2048, 4096]),
        &mut NoProgress,
    );
    for (l, want) in [(128, 1459.9875), (2048, 1179.6385), (4096, 973.8062)] {
        let p = out.decode.iter().find(|p| p.context == l).unwrap();
        within(
            &format!("PP=80 context {l} tokens/s"),
            p.tokens_per_s,
            want,
            0.25,
        );
    }
}

#[test]
fn pipeline_of_one_stage_is_tensor_parallelism_and_stages_trade_latency_for_throughput() {
    let (w, s) = (llama70b(), cent());
    let p = LlmOptions::default().precision;
    let one = pimkit_llm::sim::step(&w, &s, Policy::AllPim, &p, 4, 1, 1024);
    let pp1 = pimkit_llm::sim::pipelined(&w, &s, 1, Policy::AllPim, &p, 4, 1, 1024);
    assert_eq!(one.time_s, pp1.time_s);
    // PIM streams the weights once per sequence either way: the energy of a batch is the
    // same under any pipeline, up to the stage hops and the all-reduce it saves.
    let pp8 = pimkit_llm::sim::pipelined(&w, &s, 8, Policy::AllPim, &p, 8, 1, 1024);
    let tp8 = pimkit_llm::sim::step(&w, &s, Policy::AllPim, &p, 8, 1, 1024);
    let pim = |c: &pimkit_llm::sim::StepCost| {
        c.classes
            .iter()
            .filter(|k| k.place == pimkit_llm::Place::Pim)
            .map(|k| k.energy_j)
            .sum::<f64>()
    };
    assert!((pim(&pp8) / pim(&tp8) - 1.0).abs() < 1e-9);
    // A lone sequence through 80 stages of a third of a device each takes longer than on
    // all 32 devices at once; 80 sequences in flight give more tokens/s than one.
    let lone = pimkit_llm::sim::pipelined(&w, &s, 80, Policy::AllPim, &p, 1, 1, 1024);
    let full = pimkit_llm::sim::pipelined(&w, &s, 80, Policy::AllPim, &p, 80, 1, 1024);
    assert!(lone.time_s > one.time_s);
    assert!(80.0 / full.time_s > 10.0 / lone.time_s);
    assert!(full.classes.iter().any(|c| c.class == "stage_hop"));
}
