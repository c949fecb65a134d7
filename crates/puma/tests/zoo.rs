//! The PUMA benchmarks from the zoo: compile, simulate, compare with the interpreter.
//! Heavy ones are #[ignore]d: `cargo test -p pimkit-puma --release --test zoo -- --ignored`
//! (the whole 224x224 CNNs take 20 s to 5 min each; `-- --ignored cnn_224` for them,
//! `-- --ignored per_layer_every_conv` for the per-layer check).

use pimkit_puma::{Arch, CompileOptions, SimOptions, run_graph};

fn run(name: &str, params: &[(&str, &str)], tol: f64) -> pimkit_puma::PumaResult {
    run_on(name, params, tol, &Arch::default())
}

fn run_on(name: &str, params: &[(&str, &str)], tol: f64, arch: &Arch) -> pimkit_puma::PumaResult {
    let p: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let g = pimkit_zoo::build(name, &p).unwrap();
    let (res, _, prog) = run_graph(
        &g,
        arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    eprintln!(
        "{name}: cycles {} energy {:.1} nJ tiles {} mvmus {} err {:?} instr {}",
        res.stats.cycles,
        res.stats.energy_nj,
        prog.placement.tiles_used,
        prog.placement.mvmus_used,
        res.max_abs_error,
        res.stats.simulated_instructions
    );
    if let Some(e) = res.max_abs_error {
        assert!(e <= tol, "{name}: error {e} > {tol}");
    }
    res
}

#[test]
fn lenet5() {
    run("lenet5", &[], 0.05);
}

#[test]
fn puma_lstm_small() {
    run(
        "puma_lstm",
        &[("input", "64"), ("hidden", "64"), ("out", "32")],
        0.02,
    );
}

#[test]
#[ignore]
fn puma_mlp_l4() {
    let r = run("puma_mlp_l4", &[], 0.02);
    assert_eq!(
        r.stats.mvmus, 328,
        "reference §5.1: 64 + 128 + 128 + 8 MVMUs"
    );
}

#[test]
#[ignore]
fn puma_mlp_l5() {
    run("puma_mlp_l5", &[], 0.02);
}

#[test]
#[ignore]
fn puma_lstm_full() {
    run("puma_lstm", &[], 0.05);
}

#[test]
#[ignore]
fn vgg16_small_input() {
    run_on("vgg16", &[("res", "32")], 0.5, &Arch::default());
}

/// torchvision CNNs at 224x224 as one program on the default architecture: top-1 as
/// the interpreter's and the relative error within the documented bound (0.5 % of the
/// output range, docs/puma.md "Results").
fn cnn_224(name: &str) {
    let g = pimkit_zoo::build(name, &[]).unwrap();
    let (res, _, p) = run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    eprintln!(
        "{name} 224: {} cycles, {:.2} mJ, {} tiles ({} nodes), {} MVMUs, {:.1} inferences/s steady state, relative error {:.3} %",
        res.stats.cycles,
        res.stats.energy_nj / 1e6,
        res.stats.tiles,
        res.nodes,
        p.placement.mvmus_used,
        res.stats.throughput_per_s,
        100.0 * res.relative_error.unwrap()
    );
    assert_eq!(res.top1_agree, Some(true), "{name}");
    assert!(res.relative_error.unwrap() < 0.005, "{name}");
    assert_eq!(res.stats.saturations, 0, "{name}");
}

#[test]
#[ignore]
fn cnn_224_resnet18() {
    cnn_224("resnet18");
}

#[test]
#[ignore]
fn cnn_224_mobilenet_v2() {
    cnn_224("mobilenet_v2");
}

#[test]
#[ignore]
fn cnn_224_squeezenet1_1() {
    cnn_224("squeezenet1_1");
}

#[test]
#[ignore]
fn cnn_224_vgg16() {
    cnn_224("vgg16");
}

/// `--per-layer` simulates every convolution of the four torchvision CNNs at 224x224
/// on PUMA (none falls back to the host, none fails).
#[test]
#[ignore]
fn per_layer_every_conv() {
    for name in ["resnet18", "mobilenet_v2", "squeezenet1_1", "vgg16"] {
        let g = pimkit_zoo::build(name, &[]).unwrap();
        let r = pimkit_puma::run_per_layer(
            &g,
            &Arch::default(),
            &CompileOptions::default(),
            &SimOptions::default(),
            None,
        )
        .unwrap();
        let convs: Vec<&str> = g
            .nodes
            .iter()
            .filter(|n| matches!(n.op, pimkit_ir::Op::Conv(_)))
            .map(|n| n.name.as_str())
            .collect();
        for c in &convs {
            let l = r.layers.iter().find(|l| l.nodes.iter().any(|n| n == c));
            let l = l.unwrap_or_else(|| panic!("{name}: conv {c} not simulated"));
            assert!(l.cycles > 0 && l.max_abs_error.is_some(), "{name}: {c}");
        }
        eprintln!(
            "{name} per layer: {} convs, {} layers, {} cycles, {:.2} mJ, largest layer error {:.2e}, {} scaled",
            convs.len(),
            r.layers.len(),
            r.cycles,
            r.energy_nj / 1e6,
            r.max_abs_error.unwrap_or(0.0),
            r.layers.iter().filter(|l| l.scale != 1.0).count()
        );
    }
}
