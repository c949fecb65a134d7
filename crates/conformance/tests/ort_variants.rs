//! onnxruntime's CPU kernel variants (tools/ort_variants.py, tests/data/ort-variants):
//! every case runs under every variant (`pimkit_interp::set_ort_kernels`) and must equal
//! that variant's golden output bit for bit. The variant this machine's onnxruntime runs
//! was checked against onnxruntime when the data was generated; the others come from
//! bit-exact models of MLAS's kernels. The loop-nest lowering (generated C) must agree
//! with the interpreter for the x86 variants, except for the `avx2` variant's u8 x s8
//! pair saturation (the `u8s8_*` cases): the loop nests model hardware that sums
//! exactly, so there they must equal the exact (`avx2-vnni`) output.
//!
//! The variant is a process-wide setting, so everything runs in one test, in order.

use pimkit_interp::{OrtKernels, set_ort_kernels};
use pimkit_ir::Tensor;
use std::collections::HashMap;
use std::path::PathBuf;

fn suite() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/ort-variants")
}

#[test]
fn every_case_matches_every_variant() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(suite())
        .expect("tests/data/ort-variants")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 10, "expected the generated cases");
    let mut failures = vec![];
    let mut differing = 0;
    for dir in &cases {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let g = pimkit_onnx::load(&dir.join("model.onnx")).unwrap();
        let inputs: Vec<Tensor> = (0..g.inputs.len())
            .map(|k| pimkit_ir::npy::read_npy(&dir.join(format!("input_{k}.npy"))).unwrap())
            .collect();
        let feeds: HashMap<String, Tensor> = g
            .inputs
            .iter()
            .zip(&inputs)
            .map(|(&v, t)| (g.value(v).name.clone(), t.clone()))
            .collect();
        let mut outs = vec![];
        for k in OrtKernels::ALL {
            set_ort_kernels(Some(k));
            let want = pimkit_ir::npy::read_npy(&dir.join(format!("{}.npy", k.name()))).unwrap();
            let got = pimkit_interp::run(&g, &feeds).unwrap().remove(0);
            if got != want {
                failures.push(format!("{name} [{}]: interpreter differs", k.name()));
            }
            if k != OrtKernels::Neon {
                let want = if name.starts_with("u8s8_") {
                    pimkit_ir::npy::read_npy(&dir.join("avx2-vnni.npy")).unwrap()
                } else {
                    want.clone()
                };
                let p = pimkit_loops::lower(&g).unwrap();
                let native =
                    pimkit_loops::run(&p, &inputs, &pimkit_loops::NativeOptions::default());
                match native {
                    Ok(n) if n[0] == want => {}
                    Ok(_) => failures.push(format!("{name} [{}]: loop nests differ", k.name())),
                    Err(e) => failures.push(format!("{name} [{}]: loop nests: {e}", k.name())),
                }
            }
            outs.push(want);
        }
        if outs.windows(2).any(|w| w[0] != w[1]) {
            differing += 1;
        }
    }
    set_ort_kernels(None);
    assert!(failures.is_empty(), "{failures:#?}");
    // The data must be able to tell the variants apart.
    assert!(
        differing * 2 >= cases.len(),
        "only {differing} cases discriminate"
    );
}
