//! One small model per class of real-export failure (tools/make_class_fixtures.py, exported
//! with torch / written with onnx, outputs from onnxruntime 1.32): each imports with its
//! inputs' shapes bound and matches onnxruntime through the interpreter.

use pimkit_ir::Tensor;
use pimkit_onnx::{LoadOptions, load_file_collect};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn case_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/classes")
        .join(name)
}

fn npys(dir: &Path, prefix: &str) -> Vec<Tensor> {
    (0..)
        .map(|i| dir.join(format!("{prefix}_{i}.npy")))
        .take_while(|p| p.exists())
        .map(|p| pimkit_ir::npy::read_npy(&p).unwrap())
        .collect()
}

/// Import with the inputs' shapes bound, run, compare with onnxruntime.
fn matches_onnxruntime(name: &str) {
    let dir = case_dir(name);
    let inputs = npys(&dir, "input");
    let expected = npys(&dir, "output");
    let mut opts = LoadOptions::default();
    if let [only] = inputs.as_slice() {
        opts.input_shapes.insert(String::new(), only.shape.clone());
    }
    let mut notes = vec![];
    let g = load_file_collect(&dir.join("model.onnx"), &opts, &mut notes)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(notes.is_empty(), "{name}: every dim is bound: {notes:?}");
    let feeds: HashMap<String, Tensor> = g
        .inputs
        .iter()
        .zip(inputs)
        .map(|(&v, t)| (g.value(v).name.clone(), t))
        .collect();
    let outs = pimkit_interp::run(&g, &feeds).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(outs.len(), expected.len());
    for (o, e) in outs.iter().zip(&expected) {
        assert_eq!(o.shape, e.shape, "{name}");
        let err = o
            .to_f32_vec()
            .iter()
            .zip(e.to_f32_vec())
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-4, "{name}: max error {err}");
    }
}

#[test]
fn symbolic_batch_height_width_bind_from_the_input() {
    matches_onnxruntime("symbolic_cnn");
}

#[test]
fn f_pad_with_computed_pads_folds() {
    matches_onnxruntime("fpad_computed");
}

#[test]
fn paddle_minus_one_dim_is_unknown() {
    matches_onnxruntime("paddle_minus1");
}

#[test]
fn unbound_symbolic_dims_leave_notes_before_the_error() {
    let mut notes = vec![];
    let e = load_file_collect(
        &case_dir("symbolic_cnn").join("model.onnx"),
        &LoadOptions::default(),
        &mut notes,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("MaxPool"), "{e}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("symbolic dim 'height' set to 1")),
        "{notes:?}"
    );
}

#[test]
fn dims_shapes_and_conflicts() {
    let path = case_dir("symbolic_cnn").join("model.onnx");
    let mut opts = LoadOptions {
        dims: [("batch", 2), ("height", 24), ("width", 16)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        ..Default::default()
    };
    let g = load_file_collect(&path, &opts, &mut vec![]).unwrap();
    assert_eq!(g.ty(g.inputs[0]).shape, vec![2, 3, 24, 16]);
    assert_eq!(g.ty(g.outputs[0]).shape, vec![2, 5]);
    // A given shape must agree with the declared static dims and with --dim.
    opts.input_shapes.insert("x".into(), vec![2, 4, 24, 16]);
    let e = load_file_collect(&path, &opts, &mut vec![])
        .unwrap_err()
        .to_string();
    assert!(e.contains("dim 1 must be 3"), "{e}");
    opts.input_shapes.insert("x".into(), vec![3, 3, 24, 16]);
    let e = load_file_collect(&path, &opts, &mut vec![])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("'batch' is 3") && e.contains("--dim batch=2"),
        "{e}"
    );
    let mut opts = LoadOptions::default();
    opts.input_shapes.insert("nope".into(), vec![1]);
    let e = load_file_collect(&path, &opts, &mut vec![])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no such input") && e.contains("inputs: x"),
        "{e}"
    );
}

#[test]
fn if_on_an_input_runs_and_folds_when_bound() {
    matches_onnxruntime("if_mode");
    let path = case_dir("if_mode").join("model.onnx");
    let g = load_file_collect(&path, &LoadOptions::default(), &mut vec![]).unwrap();
    assert!(g.nodes.iter().any(|n| n.op.name() == "If"));
    // Unbound, the engines are told which input to bind.
    let e = pimkit_ir::require_static(&g).unwrap_err().to_string();
    assert!(
        e.contains("depends on input mode") && e.contains("--bind mode="),
        "{e}"
    );
    // Bound, the If is gone and the chosen branch (mode 0: else, a 1x1 conv) remains.
    let mut opts = LoadOptions::default();
    opts.bind
        .insert("mode".into(), Tensor::from_i64(vec![1], vec![0]));
    let g = load_file_collect(&path, &opts, &mut vec![]).unwrap();
    assert!(!pimkit_ir::has_control_flow(&g));
    assert_eq!(g.inputs.len(), 1);
    assert!(
        g.nodes.iter().any(|n| n.op.name() == "Sigmoid"),
        "{}",
        pimkit_ir::dump(&g)
    );
}

#[test]
fn loop_and_scan_run_flatten_and_round_trip() {
    matches_onnxruntime("loop_scan");
    let dir = case_dir("loop_scan");
    let g = load_file_collect(
        &dir.join("model.onnx"),
        &LoadOptions::default(),
        &mut vec![],
    )
    .unwrap();
    let feeds: HashMap<String, Tensor> = g
        .inputs
        .iter()
        .zip(npys(&dir, "input"))
        .map(|(&v, t)| (g.value(v).name.clone(), t))
        .collect();
    let want = pimkit_interp::run(&g, &feeds).unwrap();
    // Unrolled for the engines: same numbers, no control flow left.
    let flat = pimkit_ir::require_static(&g).unwrap();
    assert!(!pimkit_ir::has_control_flow(&flat));
    assert_eq!(pimkit_interp::run(&flat, &feeds).unwrap(), want);
    // Export writes the bodies as ONNX subgraphs (captures by outer name) and reads back.
    let back = pimkit_onnx::load_bytes(
        &pimkit_onnx::export(&g).unwrap(),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(pimkit_ir::dump(&back), pimkit_ir::dump(&g));
}
