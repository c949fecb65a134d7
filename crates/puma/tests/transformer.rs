//! Transformer blocks on PUMA: a PyTorch-exported pre-norm encoder block (LayerNorm,
//! nn.MultiheadAttention, GELU MLP; tools/export_puma_models.py --fixture) and the
//! zoo's single-token decode layers at reduced size compile and simulate whole, within
//! the documented relative error (docs/puma.md "Transformer blocks"). The d = 512 block
//! and larger decode layers: `cargo test -p pimkit-puma --release --test transformer --
//! --ignored` (the d = 512 block needs `tools/export_puma_models.py /tmp/puma_models`).

use pimkit_puma::{Arch, CompileOptions, SimOptions, run_graph};

fn check(g: &pimkit_ir::Graph, tol: f64) -> pimkit_puma::PumaResult {
    let (res, _, _) = run_graph(
        g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    let rel = res.relative_error.unwrap();
    assert!(rel < tol, "{}: relative error {rel}", g.name);
    assert_eq!(res.stats.saturations, 0, "{}", g.name);
    res
}

#[test]
fn pytorch_prenorm_block_d64_matches_the_interpreter() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/prenorm_block_d64.onnx");
    let g = pimkit_onnx::load(&path).unwrap();
    let ops: Vec<&str> = g.nodes.iter().map(|n| n.op.name()).collect();
    for op in ["LayerNormalization", "Softmax", "Erf", "MatMul"] {
        assert!(ops.contains(&op), "the export has {op}");
    }
    let res = check(&g, 0.005);
    assert!(res.stats.mvm_ops > 0);
}

#[test]
fn zoo_decode_layers_at_reduced_size() {
    for spec in [
        "llama_decode?hidden=64&heads=2&ffn=128&ctx=7",
        "gptj_decode?hidden=64&heads=2&ffn=256&rotary=16&ctx=7",
    ] {
        let g = pimkit_zoo::build_spec(spec).unwrap();
        check(&g, 0.005);
    }
}

#[test]
#[ignore]
fn pytorch_prenorm_block_d512() {
    let g = pimkit_onnx::load(std::path::Path::new("/tmp/puma_models/prenorm_block.onnx")).unwrap();
    let res = check(&g, 0.005);
    eprintln!(
        "prenorm d512: {} cycles, {:.1} uJ, {} tiles, {} MVMUs, relative error {:.2e}",
        res.stats.cycles,
        res.stats.energy_nj / 1e3,
        res.stats.tiles,
        res.stats.mvmus,
        res.relative_error.unwrap()
    );
}

#[test]
#[ignore]
fn zoo_decode_layers_hidden_256() {
    for spec in [
        "llama_decode?hidden=256&heads=4&ffn=512&ctx=15",
        "gptj_decode?hidden=256&heads=4&ffn=1024&rotary=16&ctx=15",
    ] {
        let g = pimkit_zoo::build_spec(spec).unwrap();
        let res = check(&g, 0.005);
        eprintln!(
            "{spec}: {} cycles, {:.1} uJ, {} tiles, {} MVMUs, relative error {:.2e}",
            res.stats.cycles,
            res.stats.energy_nj / 1e3,
            res.stats.tiles,
            res.stats.mvmus,
            res.relative_error.unwrap()
        );
    }
}
