//! QDQ groups imported as onnxruntime's integer nodes (docs/onnx.md "QDQ models"); the
//! outputs themselves are checked against onnxruntime in the conformance suite
//! (tests/data/ort-models/qdq_*, bit for bit where onnxruntime leaves no float op).

mod common;

use common::*;
use pimkit_ir::{Graph, Op};
use pimkit_onnx::proto::TensorProto;
use pimkit_onnx::{LoadOptions, load_bytes, load_file_notes};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn suite_model(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/ort-models")
        .join(case)
        .join("model.onnx")
}

fn count(g: &Graph, name: &str) -> usize {
    g.nodes.iter().filter(|n| n.op.name() == name).count()
}

#[test]
fn every_group_onnxruntime_fuses_becomes_its_integer_node() {
    let path = suite_model("qdq_qops_perchannel");
    let l = load_file_notes(&path, &LoadOptions::default()).unwrap();
    let g = &l.graph;
    for (op, n) in [
        ("QLinearConv", 2),
        ("QLinearMatMul", 2),
        ("QGemm", 1),
        ("QLinearAdd", 1),
        ("QLinearMul", 1),
        ("QLinearConcat", 1),
        ("QLinearAveragePool", 1),
        ("QLinearGlobalAveragePool", 1),
        ("QLinearSigmoid", 1),
        ("QLinearLeakyRelu", 1),
        ("QLinearSoftmax", 1),
    ] {
        assert_eq!(count(g, op), n, "{op} in {:?}", g.nodes);
    }
    // Float compute is gone; the Qs left quantize the input, the DQs dequantize outputs.
    let float = ["Conv", "MatMul", "Gemm", "Add", "Mul", "Concat", "Softmax"];
    assert!(g.nodes.iter().all(|n| !float.contains(&n.op.name())));
    assert_eq!(count(g, "QuantizeLinear"), 1);
    assert_eq!(count(g, "DequantizeLinear"), g.outputs.len());
    let note = l.notes.iter().find(|n| n.contains("QDQ groups")).unwrap();
    assert!(
        note.contains("2 QLinearConv") && note.contains("--qdq-float"),
        "{note}"
    );
}

/// Every QDQ case of the suite: the integer nodes pimkit's import makes are exactly those
/// of onnxruntime's own optimized graph (ort_fused_ops.json, written by
/// tools/gen_model_vectors.py), u8 and s8 activations (x86 rules), per tensor and channel.
#[test]
fn the_integer_nodes_are_onnxruntimes_on_every_qdq_case() {
    let root = suite_model("x")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("ort_fused_ops.json")) else {
            continue;
        };
        let want: BTreeMap<String, usize> = serde_json::from_str(&text).unwrap();
        let g = pimkit_onnx::load(&dir.join("model.onnx")).unwrap();
        let mut got = BTreeMap::new();
        for n in &g.nodes {
            let name = n.op.name();
            if name.starts_with("QLinear") || name == "QGemm" {
                *got.entry(name.to_string()).or_insert(0) += 1;
            }
        }
        assert_eq!(got, want, "{}", dir.display());
        checked += 1;
    }
    assert!(
        checked >= 15,
        "only {checked} cases have ort_fused_ops.json"
    );
}

#[test]
fn qdq_float_keeps_the_float_ops() {
    let path = suite_model("qdq_qops_perchannel");
    let opts = LoadOptions {
        qdq_float: true,
        ..Default::default()
    };
    let l = load_file_notes(&path, &opts).unwrap();
    assert_eq!(count(&l.graph, "Conv"), 2);
    assert!(
        l.graph
            .nodes
            .iter()
            .all(|n| !n.op.name().starts_with("QLinear"))
    );
    assert!(l.notes.iter().all(|n| !n.contains("QDQ groups")));
}

#[test]
fn a_relu_in_front_of_a_q_that_clamps_at_zero_is_dropped() {
    let g = pimkit_onnx::load(&suite_model("qdq_cnn_resblock_relu_kept")).unwrap();
    assert_eq!(count(&g, "Relu"), 0);
    assert_eq!(count(&g, "Conv"), 0);
    assert_eq!(count(&g, "QLinearConv"), 4);
}

fn int8_init(name: &str, elem: i32, dims: &[i64], v: &[i32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(elem),
        int32_data: v.to_vec(),
        ..Default::default()
    }
}

/// x -> Q -> DQ -> MatMul(DQ(W)) -> [between] -> Q(ys, yz) -> DQ -> y, and optionally the
/// MatMul's float output as a second graph output.
fn qdq_matmul(between: Option<&str>, yz: i32, mm_is_output: bool) -> Graph {
    const U8: i32 = 2;
    const I8: i32 = 3;
    let mut nodes = vec![
        node("QuantizeLinear", "xq", &["x", "xs", "xz"], &["x_q"], vec![]),
        node(
            "DequantizeLinear",
            "xdq",
            &["x_q", "xs", "xz"],
            &["x_dq"],
            vec![],
        ),
        node(
            "DequantizeLinear",
            "wdq",
            &["w", "ws", "wz"],
            &["w_dq"],
            vec![],
        ),
        node("MatMul", "fc", &["x_dq", "w_dq"], &["mm"], vec![]),
    ];
    let mut q_in = "mm";
    if let Some(op) = between {
        nodes.push(node(op, "act", &["mm"], &["act"], vec![]));
        q_in = "act";
    }
    nodes.push(node(
        "QuantizeLinear",
        "yq",
        &[q_in, "ys", "yz"],
        &["y_q"],
        vec![],
    ));
    nodes.push(node(
        "DequantizeLinear",
        "ydq",
        &["y_q", "ys", "yz"],
        &["y"],
        vec![],
    ));
    let inits = vec![
        init_f32("xs", &[], &[0.05]),
        int8_init("xz", U8, &[], &[128]),
        int8_init(
            "w",
            I8,
            &[4, 3],
            &[3, -7, 12, 25, -60, 1, 0, 9, -14, 33, 8, -2],
        ),
        init_f32("ws", &[], &[0.02]),
        int8_init("wz", I8, &[], &[0]),
        init_f32("ys", &[], &[0.01]),
        int8_init("yz", U8, &[], &[yz]),
    ];
    let outs: &[&str] = if mm_is_output { &["y", "mm"] } else { &["y"] };
    let m = model(nodes, vec![vi_f32("x", &[1, 4])], outs, inits, 17);
    load_bytes(&bytes(&m), None, &LoadOptions::default()).unwrap()
}

#[test]
fn a_matmul_group_fuses_and_a_relu_before_a_zero_point_0_q_goes() {
    let g = qdq_matmul(None, 128, false);
    assert_eq!((count(&g, "QLinearMatMul"), count(&g, "MatMul")), (1, 0));
    let g = qdq_matmul(Some("Relu"), 0, false);
    assert_eq!((count(&g, "QLinearMatMul"), count(&g, "Relu")), (1, 0));
}

#[test]
fn groups_onnxruntime_leaves_in_float_stay_float() {
    // Relu before a Q whose zero point is mid-range clamps values the Q would keep.
    let g = qdq_matmul(Some("Relu"), 128, false);
    assert_eq!((count(&g, "MatMul"), count(&g, "Relu")), (1, 1));
    assert_eq!(count(&g, "QLinearMatMul"), 0);
    // The float product is a graph output too: it must stay a float value.
    let g = qdq_matmul(None, 128, true);
    assert_eq!((count(&g, "MatMul"), count(&g, "QLinearMatMul")), (1, 0));
    // A Sqrt has no integer form: nothing happens.
    let g = qdq_matmul(Some("Sqrt"), 0, false);
    assert_eq!(count(&g, "MatMul"), 1);
    assert!(g.nodes.iter().any(|n| matches!(n.op, Op::Unary(_))));
}

/// x -> Q(s1) -> DQ(s1) -> Reshape -> Q(s2, z2) -> DQ -> y.
fn qdq_reshape(s2: f32, z2: i32) -> Graph {
    const U8: i32 = 2;
    let nodes = vec![
        node("QuantizeLinear", "xq", &["x", "s1", "z1"], &["x_q"], vec![]),
        node(
            "DequantizeLinear",
            "xdq",
            &["x_q", "s1", "z1"],
            &["x_dq"],
            vec![],
        ),
        node("Reshape", "r", &["x_dq", "shape"], &["r"], vec![]),
        node("QuantizeLinear", "rq", &["r", "s2", "z2"], &["r_q"], vec![]),
        node(
            "DequantizeLinear",
            "rdq",
            &["r_q", "s2", "z2"],
            &["y"],
            vec![],
        ),
    ];
    let inits = vec![
        init_f32("s1", &[], &[0.1]),
        int8_init("z1", U8, &[], &[7]),
        init_f32("s2", &[], &[s2]),
        int8_init("z2", U8, &[], &[z2]),
        init_i64("shape", &[2], &[3, 2]),
    ];
    let m = model(nodes, vec![vi_f32("x", &[2, 3])], &["y"], inits, 17);
    load_bytes(&bytes(&m), None, &LoadOptions::default()).unwrap()
}

#[test]
fn data_movement_runs_on_the_codes_only_when_the_q_repeats_the_dq() {
    let g = qdq_reshape(0.1, 7);
    let r = g.nodes.iter().find(|n| n.op.name() == "Reshape").unwrap();
    assert_eq!(g.ty(r.outputs[0]).dtype, pimkit_ir::DType::U8);
    assert_eq!(count(&g, "QuantizeLinear"), 1);
    for (s2, z2) in [(0.2, 7), (0.1, 8)] {
        let g = qdq_reshape(s2, z2);
        let r = g.nodes.iter().find(|n| n.op.name() == "Reshape").unwrap();
        assert_eq!(g.ty(r.outputs[0]).dtype, pimkit_ir::DType::F32, "{s2} {z2}");
        assert_eq!(count(&g, "QuantizeLinear"), 2);
    }
}
