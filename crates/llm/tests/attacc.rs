//! AttAcc (ASPLOS 2024) reproduced: GPT-3 175B (zoo:gpt3_175b, shape-only) on DGX A100
//! (HBM3) with and without AttAcc, decode tokens/s and J/token against the outputs of
//! AttAcc's public simulator (scale-snu/attacc_simulator@c600051, run with its README's
//! flags: --gpu A100a --pim bank --powerlimit --ffopt --pipeopt; 2xDGX = --ngpu 16) at
//! the batch sizes its cached Ramulator results cover, and the abstract's headline ratios.
//! docs/llm.md has the table and the command that regenerates it.

use pimkit_engine::NoProgress;
use pimkit_llm::{LlmOptions, System, analyze, extract};

fn gpt3() -> pimkit_llm::Workload {
    let g = pimkit_zoo::build_spec("gpt3_175b?weights=none").unwrap();
    extract(&g).unwrap()
}

fn two_dgx() -> System {
    pimkit_llm::system::load("dgx-a100x2").unwrap()
}

/// (decode tokens/s, J/token) of `batch` after `lin` prompt tokens, `lout` generated.
fn run(w: &pimkit_llm::Workload, s: &System, lin: usize, lout: usize, batch: usize) -> (f64, f64) {
    let o = LlmOptions {
        prompt: lin,
        generate: lout,
        contexts: vec![lin],
        batches: vec![batch],
        ..Default::default()
    };
    let out = analyze(w, s, &s.name, &o, &mut NoProgress);
    let g = &out.generation[0];
    (g.decode_tokens_per_s, g.decode_j_per_token)
}

fn within(what: &str, got: f64, want: f64, tol: f64) {
    let rel = got / want - 1.0;
    assert!(
        rel.abs() <= tol,
        "{what}: pimkit {got:.4} vs AttAcc {want:.4} ({:+.1} %)",
        rel * 100.0
    );
}

#[test]
fn gpt3_decode_matches_attaccs_simulator_within_20_percent() {
    let w = gpt3();
    let attacc = pimkit_llm::system::load("dgx-a100-attacc").unwrap();
    let dgx2 = two_dgx();
    // (Lin, Lout, batch, AttAcc tok/s, J/token, 2xDGX tok/s, J/token): the simulator's outputs.
    let rows = [
        (2048, 128, 1, 58.55, 11.52, 31.27, 11.81),
        (2048, 2048, 54, 1786.7, 0.436, 1095.3, 0.865),
        (2048, 2048, 78, 2538.0, 0.374, 1273.0, 0.800),
        (2048, 128, 101, 2981.5, 0.325, 1700.7, 0.617),
        (128, 2048, 101, 2984.8, 0.304, 2083.0, 0.467),
        (512, 512, 213, 3553.6, 0.234, 3025.0, 0.346),
        (128, 128, 854, 4204.2, 0.179, 5283.1, 0.213),
    ];
    for (lin, lout, b, at, aj, dt, dj) in rows {
        let tag = format!("{lin}/{lout} batch {b}");
        let (t, j) = run(&w, &attacc, lin, lout, b);
        within(&format!("DGX+AttAcc {tag} tokens/s"), t, at, 0.20);
        within(&format!("DGX+AttAcc {tag} J/token"), j, aj, 0.20);
        let (t, j) = run(&w, &dgx2, lin, lout, b);
        within(&format!("2xDGX {tag} tokens/s"), t, dt, 0.20);
        within(&format!("2xDGX {tag} J/token"), j, dj, 0.20);
    }
}

#[test]
fn attacc_headline_ratios_within_25_percent() {
    // The abstract's "up to 2.81x throughput and 2.67x energy efficiency" for a 175B model;
    // AttAcc's own simulator comes closest at 2048/2048, batch 78, against one DGX (its
    // 2.71x / 2.11x); pimkit at the same point:
    let w = gpt3();
    let attacc = pimkit_llm::system::load("dgx-a100-attacc").unwrap();
    let dgx = pimkit_llm::system::load("dgx-a100").unwrap();
    let (ta, ja) = run(&w, &attacc, 2048, 2048, 78);
    let (td, jd) = run(&w, &dgx, 2048, 2048, 78);
    within("throughput ratio vs the paper's 2.81", ta / td, 2.81, 0.25);
    within(
        "energy-efficiency ratio vs the paper's 2.67",
        jd / ja,
        2.67,
        0.25,
    );
    within(
        "throughput ratio vs the simulator's 2.71",
        ta / td,
        2.71,
        0.10,
    );
    within(
        "energy-efficiency ratio vs the simulator's 2.11",
        jd / ja,
        2.11,
        0.10,
    );
}
