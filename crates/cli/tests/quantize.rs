//! `pimkit quantize` against onnxruntime's quantize_static on the same float model and
//! calibration samples (tools/make_quantize_fixtures.py): every parameter onnxruntime
//! writes exists under the same name; zero points, quantized weights and biases are equal;
//! activation scales agree to 2 ulp (the calibration ranges come from pimkit's float
//! interpreter, whose GlobalAveragePool and Gemm sums may differ from onnxruntime's in the
//! last bit; the weight scales, computed from the weights alone, are exact).

use pimkit_ir::{Graph, Tensor, ValueDef};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/quantize")
        .join(name)
}

fn consts(g: &Graph) -> HashMap<String, Tensor> {
    g.values
        .iter()
        .filter_map(|v| match &v.def {
            ValueDef::Const(Some(t)) => Some((v.name.clone(), t.clone())),
            _ => None,
        })
        .collect()
}

fn ulps(a: f32, b: f32) -> u32 {
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
}

#[test]
fn matches_onnxruntime_quantize_static() {
    let dir = tempfile::tempdir().unwrap();
    for (act, pc) in [("u8", false), ("u8", true), ("i8", false), ("i8", true)] {
        let tag = format!("{act}_{}", if pc { "pc" } else { "pt" });
        let out = dir.path().join(format!("{tag}.onnx"));
        let mut args = vec![
            "quantize".to_string(),
            fixture("float.onnx").display().to_string(),
            "-o".into(),
            out.display().to_string(),
            "--calib".into(),
            fixture("calib").display().to_string(),
            "--act".into(),
            act.into(),
        ];
        if pc {
            args.push("--per-channel".into());
        }
        let o = Command::new(env!("CARGO_BIN_EXE_pimkit"))
            .args(&args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let ours = consts(&pimkit_onnx::load(&out).unwrap());
        let ort = consts(&pimkit_onnx::load(&fixture(&format!("ort_{tag}.onnx"))).unwrap());
        let mut checked = 0;
        for (name, want) in &ort {
            let params = ["_scale", "_zero_point", "_quantized"];
            if !params.iter().any(|s| name.ends_with(s)) {
                continue;
            }
            let got = ours
                .get(name)
                .unwrap_or_else(|| panic!("{tag}: '{name}' is missing"));
            assert_eq!(got.shape, want.shape, "{tag}: {name}");
            if name.ends_with("_scale") {
                let worst = got
                    .to_f32_vec()
                    .iter()
                    .zip(want.to_f32_vec())
                    .map(|(&a, b)| ulps(a, b))
                    .max()
                    .unwrap_or(0);
                assert!(worst <= 2, "{tag}: {name} differs by {worst} ulp");
            } else {
                assert_eq!(got, want, "{tag}: {name}");
            }
            checked += 1;
        }
        assert!(checked >= 30, "{tag}: only {checked} parameters compared");
    }
}

#[test]
fn quantized_model_runs_on_the_vpu_and_bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.onnx");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pimkit"))
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&[
        "quantize",
        "zoo:mlp?n=16",
        "-o",
        out.to_str().unwrap(),
        "--random",
        "4",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["vpu", "run", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&[
        "quantize",
        "zoo:mlp?n=16",
        "-o",
        out.to_str().unwrap(),
        "--act",
        "u4",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[
        "quantize",
        "zoo:mlp?n=16",
        "-o",
        out.to_str().unwrap(),
        "--calib",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(2));
}
