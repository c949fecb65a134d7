//! The committed onnxruntime golden vectors (tests/data/ort-quant, quantized cases of
//! tests/data/ort-models) run end to end on the simulated system, with every dataflow:
//! outputs must equal onnxruntime's bit for bit, and the QLinear* nodes must have run
//! as VPU kernels where a kernel exists.

use pimkit_vpu::network::{DataflowChoice, KernelKind, NetOptions, run_network};
use pimkit_vpu::{Arch, Dataflow};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn cases(suite: &str, prefix: &[&str]) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(suite);
    let manifest = std::fs::read_to_string(dir.join("manifest.toml")).unwrap_or_default();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|r| r.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        p.join("model.onnx").exists()
            && prefix.iter().any(|x| name.starts_with(x))
            && manifest.contains(&format!("[case.{name}]\nstatus = \"pass\""))
    });
    v.sort();
    v
}

fn run_case(dir: &Path, arch: &Arch) -> Vec<KernelKind> {
    let g = pimkit_onnx::load(&dir.join("model.onnx"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut inputs = HashMap::new();
    for (i, &v) in g.inputs.iter().enumerate() {
        let t = pimkit_ir::npy::read_npy(&dir.join(format!("input_{i}.npy"))).unwrap();
        inputs.insert(g.value(v).name.clone(), t);
    }
    let mut kinds = vec![];
    for c in [
        DataflowChoice::Auto,
        DataflowChoice::Fixed(Dataflow::Os),
        DataflowChoice::Fixed(Dataflow::Is),
        DataflowChoice::Fixed(Dataflow::Ws),
    ] {
        let r = run_network(
            &g,
            &inputs,
            arch,
            &NetOptions {
                dataflow: c,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{} {c:?}: {e}", dir.display()));
        for (i, out) in r.outputs.iter().enumerate() {
            let want = pimkit_ir::npy::read_npy(&dir.join(format!("output_{i}.npy"))).unwrap();
            assert_eq!(out.shape, want.shape, "{}", dir.display());
            if out.dtype().is_float() {
                // Float tails (softmax, dequantize) follow the interpreter, which matches
                // onnxruntime to float rounding; every integer value is exact.
                for (a, b) in out.to_f32_vec().iter().zip(want.to_f32_vec()) {
                    assert!(
                        (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                        "{} output {i}: {a} vs {b} ({c:?})",
                        dir.display()
                    );
                }
            } else {
                assert_eq!(
                    out.data,
                    want.data,
                    "{} output {i} differs from onnxruntime ({c:?})",
                    dir.display()
                );
            }
        }
        kinds = r.layers.iter().map(|l| l.kernel).collect();
        // A QLinear/QGemm layer left on the host says why (batch, float output, ...).
        for l in &r.layers {
            if l.kernel == KernelKind::Host
                && ["QLinearConv", "QLinearMatMul", "QGemm"].contains(&l.op.as_str())
            {
                assert!(
                    r.notes.iter().any(|n| n.contains(&format!("`{}`", l.name))),
                    "{}: {} ran on the host without a note ({:?})",
                    dir.display(),
                    l.name,
                    r.notes
                );
            }
        }
    }
    kinds
}

#[test]
fn ort_quant_kernel_vectors_bit_exact() {
    let list = cases("ort-quant", &["qlmm_", "qlconv", "qgemm_"]);
    if list.is_empty() {
        eprintln!("tests/data/ort-quant not present: skipped");
        return;
    }
    let mut on_vpu = 0;
    for vpus in [1, 4] {
        for d in &list {
            let kinds = run_case(d, &Arch::default().with(vpus, 1.2));
            on_vpu += kinds.iter().filter(|k| **k != KernelKind::Host).count();
        }
    }
    assert!(
        on_vpu >= list.len(),
        "most cases must exercise a VPU kernel ({on_vpu} of {})",
        list.len()
    );
}

#[test]
fn ort_quantized_models_bit_exact() {
    let list = cases("ort-models", &["q_"]);
    for d in &list {
        let kinds = run_case(d, &Arch::default().with(2, 0.8));
        assert!(
            kinds.iter().any(|k| *k != KernelKind::Host),
            "{}: no VPU kernel ran",
            d.display()
        );
    }
}
