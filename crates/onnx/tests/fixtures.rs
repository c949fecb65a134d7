//! Real files written by onnx / onnxruntime (tools/make_onnx_fixtures.py).

use pimkit_ir::{DType, Op, ValueDef, dump};
use pimkit_onnx::{LoadOptions, export, load, load_bytes, load_with};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn ops(g: &pimkit_ir::Graph) -> Vec<&'static str> {
    g.nodes.iter().map(|n| n.op.name()).collect()
}

fn round_trips(g: &pimkit_ir::Graph, tag: &str) {
    let bytes = export(g).unwrap();
    if let Ok(dir) = std::env::var("PIMKIT_EXPORT_DIR") {
        std::fs::write(format!("{dir}/fixture_{tag}.onnx"), &bytes).unwrap();
    }
    let back = load_bytes(&bytes, None, &LoadOptions::default()).unwrap();
    assert_eq!(dump(&back), dump(g));
}

#[test]
fn onnxruntime_qoperator_model() {
    let g = load(&fixture("qop_cnn.onnx")).unwrap();
    assert_eq!(
        ops(&g),
        [
            "QuantizeLinear",
            "QLinearConv",
            "QLinearConv",
            "QLinearAdd",
            "QLinearGlobalAveragePool",
            "Reshape",
            "QGemm",
            "DequantizeLinear"
        ],
        "{}",
        dump(&g)
    );
    let Op::QLinearConv(a) = &g.nodes[2].op else {
        panic!()
    };
    assert_eq!((a.group, a.pads.clone()), (4, vec![1, 1, 1, 1]));
    // Per-channel weight scales were kept.
    let ws = g.nodes[1].inputs[4].unwrap();
    assert_eq!(g.ty(ws).shape, vec![4]);
    assert_eq!(g.ty(g.outputs[0]).dtype, DType::F32);
    assert_eq!(g.ty(g.outputs[0]).shape, vec![1, 5]);
    round_trips(&g, "qop_cnn");
}

#[test]
fn torch_style_model_with_symbolic_batch() {
    let mut opts = LoadOptions::default();
    opts.dims.insert("batch".into(), 2);
    let g = load_with(&fixture("torch_style.onnx"), &opts).unwrap();
    assert_eq!(
        ops(&g),
        ["Reshape", "MatMul", "Add", "LayerNormalization", "Softmax"]
    );
    assert_eq!(g.nodes[0].op, Op::Reshape { shape: vec![2, 12] });
    assert_eq!(g.ty(g.outputs[0]).shape, vec![2, 6]);
    assert_eq!(
        g.nodes[3].op,
        Op::LayerNorm {
            axis: 1,
            epsilon: 1e-5
        }
    );
    round_trips(&g, "torch_style");
}

#[test]
fn external_data_model() {
    let g = load(&fixture("external.onnx")).unwrap();
    let consts = g
        .values
        .iter()
        .filter(|v| matches!(v.def, ValueDef::Const(Some(_))))
        .count();
    assert_eq!(consts, 6);
    let shape_only = load_with(
        &fixture("external.onnx"),
        &LoadOptions {
            shape_only: true,
            ..Default::default()
        },
    )
    .unwrap();
    let mut stripped = g.clone();
    stripped.strip_weights();
    assert_eq!(dump(&shape_only), dump(&stripped));
    // The external file holds the same weights onnx wrote.
    let w = g.const_data(g.find_value("w1").unwrap()).unwrap();
    assert_eq!(w.shape, vec![4, 3, 3, 3]);
    assert!(w.to_f32_vec().iter().any(|&v| v != 0.0));
    round_trips(&g, "external");
}
