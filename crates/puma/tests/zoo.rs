//! The PUMA benchmarks from the zoo: compile, simulate, compare with the interpreter.
//! Heavy ones are #[ignore]d: `cargo test -p pimkit-puma --release --test zoo -- --ignored`.

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
    // Feature maps live in shared memory: use the original's CNN configuration size
    // (2048 KB per tile, reference §2.2) instead of 64 KB.
    let mut arch = Arch::default();
    arch.tile.shared_mem_words = 1 << 20;
    run_on("vgg16", &[("res", "32")], 0.5, &arch);
}
