//! Weight replication (`--replicate`) and steady-state throughput.

use pimkit_puma::compile::replicate::{Budget, Replicate, original_mvmus};
use pimkit_puma::{Arch, CompileOptions, SimOptions, run_graph};

fn lenet(batch: usize) -> pimkit_ir::Graph {
    pimkit_zoo::build_spec(&format!("lenet5?batch={batch}")).unwrap()
}

/// The original maps LeNet-5 onto 56 MVMUs: one per kernel position for each conv
/// (25 + 25) and ⌈rows/128⌉·⌈cols/128⌉ per dense layer (4 + 1 + 1).
#[test]
fn lenet_with_the_originals_budget_is_ten_times_faster() {
    let arch = Arch::default();
    let g = lenet(1);
    assert_eq!(original_mvmus(&g, &arch), 56);
    let so = SimOptions::default();
    let (base, _, _) = run_graph(&g, &arch, &CompileOptions::default(), &so, None).unwrap();
    let opts = CompileOptions {
        replicate: Replicate::Auto(Budget::Original),
        ..Default::default()
    };
    let (rep, _, p) = run_graph(&g, &arch, &opts, &so, None).unwrap();
    let plan = p.placement.replication.as_ref().unwrap();
    assert!(
        plan.mvmus <= 56 && p.placement.mvmus_used <= 56,
        "{} MVMUs",
        p.placement.mvmus_used
    );
    let speedup = rep.stats.throughput_per_s / base.stats.throughput_per_s;
    assert!(speedup >= 10.0, "throughput x{speedup:.1}");
    assert!(rep.relative_error.unwrap() < 0.01);
    // Latency is one inference alone and does not shrink as much.
    assert!(rep.stats.latency_ns < base.stats.latency_ns);
}

/// The steady state (busiest resource per inference) bounds a batch: with the same
/// weight copies, each further inference of a batch takes at least one interval, and
/// the static schedule gets within a third of it (docs/puma.md "Replication").
#[test]
fn steady_state_predicts_batched_runs() {
    let arch = Arch::default();
    for copies in [1usize, 8] {
        let mut opts = CompileOptions::default();
        opts.replicas.insert("conv1".into(), copies);
        let so = SimOptions::default();
        let (one, _, _) = run_graph(&lenet(1), &arch, &opts, &so, None).unwrap();
        let (four, _, _) = run_graph(&lenet(4), &arch, &opts, &so, None).unwrap();
        let per = (four.stats.cycles - one.stats.cycles) as f64 / 3.0;
        let ii = one.stats.steady_state_cycles as f64;
        assert!(
            per >= 0.98 * ii && per <= 1.35 * ii,
            "copies {copies}: batch step {per:.0} vs interval {ii:.0}"
        );
    }
}

#[test]
fn copies_split_the_output_columns_and_compute_the_same() {
    let arch = Arch::default();
    let g = lenet(1);
    let opts = CompileOptions {
        replicate: Replicate::Factor(3),
        ..Default::default()
    };
    let (res, _, p) = run_graph(&g, &arch, &opts, &SimOptions::default(), None).unwrap();
    let copies = p
        .placement
        .matrices
        .iter()
        .filter(|m| m.node.starts_with("conv1[replica"))
        .count();
    assert_eq!(copies, 3);
    // Dense layers multiply one vector: one copy each.
    assert_eq!(
        p.placement
            .matrices
            .iter()
            .filter(|m| m.node.starts_with("fc1"))
            .count(),
        1
    );
    assert!(res.relative_error.unwrap() < 0.01);
}
