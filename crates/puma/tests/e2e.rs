//! End-to-end: compile, simulate, compare with the reference interpreter.

mod common;
use common::*;
use pimkit_ir::UnaryOp;
use pimkit_puma::{Arch, CompileOptions, NumMode, SimOptions, run_graph};

#[test]
fn mlp_matches_interpreter_within_derived_bound() {
    let dims = [200, 300, 130, 10];
    let (g, ws) = mlp(&dims, UnaryOp::Sigmoid, 1);
    let arch = Arch::default();
    let (res, _, p) = run_graph(
        &g,
        &arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    // Inputs are in [-1, 1], sigmoid outputs in [0, 1].
    let mut e = U / 2.0;
    for (w, k, n) in &ws {
        e = dense_bound(w, *k, *n, e, 1.0, 0.25, 128);
    }
    let err = res.max_abs_error.unwrap();
    assert!(err <= e, "error {err} exceeds the derived bound {e}");
    assert!(err > 0.0, "fixed point cannot be exact here");
    // 2x3 + 3x2 + 2x1 = 14 MVMUs.
    assert_eq!(p.placement.mvmus_used, 2 * 3 + 3 * 2 + 2);
    assert!(
        res.stats.cycles >= 3 * arch.mvm_cycles(),
        "three dependent layers take at least 3 MVMs"
    );
    assert!(res.stats.energy_nj > 0.0);
    assert_eq!(res.stats.mvm_ops, 14);
}

#[test]
fn mlp_relu_tanh_and_bitserial_mode() {
    for act in [UnaryOp::Relu, UnaryOp::Tanh] {
        let (g, ws) = mlp(&[64, 40, 8], act, 7);
        let arch = Arch::default();
        let (res, _, _) = run_graph(
            &g,
            &arch,
            &CompileOptions::default(),
            &SimOptions::default(),
            None,
        )
        .unwrap();
        let mut e = U / 2.0;
        let mut xmax = 1.0;
        for (w, k, n) in &ws {
            e = dense_bound(w, *k, *n, e, xmax, 1.0, 128);
            xmax = 8.0;
        }
        assert!(
            res.max_abs_error.unwrap() <= e,
            "{act:?}: {} > {e}",
            res.max_abs_error.unwrap()
        );
    }
    // Bit-serial mode reproduces the original's per-stream rounding: much larger error.
    let (g, _) = mlp(&[64, 40, 8], UnaryOp::Tanh, 7);
    let so = SimOptions {
        mode: NumMode::BitSerial,
        ..Default::default()
    };
    let (res_b, _, _) =
        run_graph(&g, &Arch::default(), &CompileOptions::default(), &so, None).unwrap();
    let (res_e, _, _) = run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    assert!(res_b.max_abs_error.unwrap() > 10.0 * res_e.max_abs_error.unwrap());
    assert_eq!(
        res_b.stats.cycles, res_e.stats.cycles,
        "timing does not depend on the arithmetic mode"
    );
}

/// Generous but meaningful tolerance for deep nets: many u/2 roundings, each amplified
/// by at most the layer's row 1-norm (docs/puma.md gives the derivation).
fn check(g: &pimkit_ir::Graph, tol: f64) -> (pimkit_puma::PumaResult, pimkit_puma::Program) {
    let (res, _, p) = run_graph(
        g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    let e = res.max_abs_error.unwrap();
    assert!(e <= tol, "{}: error {e} > {tol}", g.name);
    (res, p)
}

#[test]
fn lstm_steps_match_interpreter() {
    // 3 steps, hidden 150 (two row blocks per gate), input 40.
    let (res, _) = check(&lstm_net(3, 40, 150, 3), 0.01);
    assert!(res.stats.mvm_ops > 0);
}

#[test]
fn gru_matches_interpreter() {
    check(&gru_net(2, 20, 30, 4), 0.01);
}

#[test]
fn small_cnn_matches_interpreter() {
    let (res, _) = check(&small_cnn(5), 0.02);
    assert!(res.stats.instructions["mvm"] > 0);
}

/// Grouped and depthwise convolutions map as block-diagonal matrices (several groups per
/// crossbar); HardSwish runs on the VFU. 8 channels: one matrix per conv; 300 channels:
/// the depthwise layer needs 3 packs of 128 groups (plus the grouped conv's 2 x 150 rows).
#[test]
fn grouped_and_depthwise_convs_match_interpreter() {
    let (res, _) = check(&grouped_cnn(3, 8, 9), 0.03);
    assert!(res.stats.mvm_ops > 0);
    let (_, p) = check(&grouped_cnn(4, 300, 4), 0.05);
    let packs = p
        .placement
        .matrices
        .iter()
        .filter(|m| m.node.starts_with("depthwise[groups"))
        .count();
    assert_eq!(packs, 3, "128 + 128 + 44 depthwise groups");
}

#[test]
fn report_section_has_energy_svg_mix_and_json() {
    let (g, _) = mlp(&[64, 32, 4], UnaryOp::Relu, 2);
    let (res, _, p) = run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    let s = pimkit_puma::report_section(&res, Some(&p));
    assert!(
        s.blocks
            .iter()
            .any(|b| matches!(b, pimkit_report::Block::Svg { svg, .. } if svg.contains("<svg")))
    );
    assert_eq!(s.json["cycles"], res.stats.cycles);
    for k in [
        "latency_ns",
        "energy_nj",
        "energy_breakdown_nj",
        "instructions",
        "tiles",
        "cores",
        "mvmus",
        "max_abs_error",
    ] {
        assert!(s.json.get(k).is_some(), "missing key {k}");
    }
}
