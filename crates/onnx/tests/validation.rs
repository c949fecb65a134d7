//! Models that onnxruntime's loader (or onnx.checker, where onnxruntime only warns and
//! then silently picks one of two definitions) rejects are rejected here too, naming
//! the item at fault. The same cases as files: tools/make_invalid_models.py.

mod common;
use common::*;
use pimkit_onnx::proto::{GraphProto, TensorProto};
use pimkit_onnx::{LoadOptions, load_bytes};

fn err(m: &pimkit_onnx::proto::ModelProto) -> String {
    match load_bytes(&bytes(m), None, &LoadOptions::default()) {
        Ok(_) => panic!("invalid model accepted"),
        Err(e) => e.to_string(),
    }
}

fn relu_model() -> pimkit_onnx::proto::ModelProto {
    model(
        vec![node("Relu", "relu", &["x"], &["y"], vec![])],
        vec![vi_f32("x", &[1, 4])],
        &["y"],
        vec![],
        17,
    )
}

/// QLinearMatMul at `opset` with a's zero point `az`.
fn qmatmul(az: TensorProto, opset: i64) -> pimkit_onnx::proto::ModelProto {
    let u8s = |name: &str, dims: &[i64], v: &[i32]| TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(2),
        int32_data: v.to_vec(),
        ..Default::default()
    };
    let name = az.name().to_string();
    model(
        vec![node(
            "QLinearMatMul",
            "qmm",
            &["a", "as", &name, "b", "bs", "bz", "ys", "yz"],
            &["y"],
            vec![],
        )],
        vec![vi("a", 2, &[D::V(2), D::V(2)])],
        &["y"],
        vec![
            init_f32("as", &[], &[0.1]),
            az,
            u8s("b", &[2, 2], &[1, 2, 3, 4]),
            init_f32("bs", &[], &[0.1]),
            u8s("bz", &[], &[0]),
            init_f32("ys", &[], &[0.1]),
            u8s("yz", &[], &[0]),
        ],
        opset,
    )
}

fn zp(dtype: i32, v: i32) -> TensorProto {
    TensorProto {
        name: Some("az".into()),
        data_type: Some(dtype),
        int32_data: vec![v],
        ..Default::default()
    }
}

#[test]
fn a_valid_quantized_model_loads() {
    load_bytes(
        &bytes(&qmatmul(zp(2, 128), 13)),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
}

#[test]
fn duplicate_names_are_rejected() {
    let mut m = model(
        vec![node("MatMul", "fc", &["x", "W"], &["y"], vec![])],
        vec![vi_f32("x", &[1, 2])],
        &["y"],
        vec![
            init_f32("W", &[2, 2], &[1.0; 4]),
            init_f32("W", &[2, 2], &[0.0; 4]),
        ],
        17,
    );
    let e = err(&m);
    assert!(e.starts_with("tensor 'W': two initializers"), "{e}");

    let g = m.graph.as_mut().unwrap();
    g.initializer.pop();
    g.node
        .insert(0, node("Relu", "first", &["x"], &["h"], vec![]));
    g.node
        .insert(1, node("Neg", "second", &["x"], &["h"], vec![]));
    let e = err(&m);
    assert!(
        e.starts_with("node 'second' (Neg): output 'h' is defined twice (node 'first'"),
        "{e}"
    );

    // A node may not redefine a graph input or an initializer either.
    let m = model(
        vec![
            node("Relu", "r", &["x"], &["x"], vec![]),
            node("Neg", "n", &["x"], &["y"], vec![]),
        ],
        vec![vi_f32("x", &[1])],
        &["y"],
        vec![],
        17,
    );
    assert!(err(&m).contains("it is also a graph input"));

    let mut m = relu_model();
    let out = m.graph.as_ref().unwrap().output[0].clone();
    m.graph.as_mut().unwrap().output.push(out);
    assert!(err(&m).contains("graph output 'y' is listed twice"));
}

#[test]
fn duplicate_attributes_are_rejected() {
    let m = model(
        vec![node(
            "Transpose",
            "t",
            &["x"],
            &["y"],
            vec![attr_ints("perm", &[1, 0]), attr_ints("perm", &[0, 1])],
        )],
        vec![vi_f32("x", &[2, 3])],
        &["y"],
        vec![],
        17,
    );
    let e = err(&m);
    assert!(
        e.starts_with("node 't' (Transpose): attribute 'perm': given twice"),
        "{e}"
    );
}

#[test]
fn duplicates_inside_subgraphs_are_rejected() {
    let branch = |dup: bool| GraphProto {
        name: Some("b".into()),
        node: vec![node("Identity", "id", &["x"], &["o"], vec![])],
        output: vec![vi_f32("o", &[1]); if dup { 2 } else { 1 }],
        ..Default::default()
    };
    let attr = |name: &str, g: GraphProto| pimkit_onnx::proto::AttributeProto {
        name: Some(name.into()),
        r#type: Some(5),
        g: Some(g),
        ..Default::default()
    };
    let m = model(
        vec![node(
            "If",
            "cond",
            &["c"],
            &["y"],
            vec![
                attr("then_branch", branch(true)),
                attr("else_branch", branch(false)),
            ],
        )],
        vec![vi("c", 9, &[]), vi_f32("x", &[1])],
        &["y"],
        vec![],
        17,
    );
    let e = err(&m);
    assert!(
        e.contains("subgraph 'then_branch' of node 'cond': graph output 'o' is listed twice"),
        "{e}"
    );
}

#[test]
fn zero_points_must_have_their_inputs_type_and_range() {
    // int32 zero point on a u8 input: onnxruntime's type check refuses it.
    let e = err(&qmatmul(zp(6, 300), 13));
    assert!(
        e.contains("node 'qmm' (QLinearMatMul): input 2 has dtype i32, expected u8"),
        "{e}"
    );
    // A u8 zero point stored as 300 or -200: a corrupt tensor.
    for v in [300, -200] {
        let e = err(&qmatmul(zp(2, v), 13));
        assert!(
            e.starts_with(&format!(
                "tensor 'az': element 0 is {v}, outside the range of u8"
            )),
            "{e}"
        );
    }
    let e = err(&qmatmul(zp(3, -5), 13));
    assert!(e.contains("input 2 has dtype i8, expected u8"), "{e}");
}

#[test]
fn ops_need_an_opset_that_defines_them() {
    let e = err(&qmatmul(zp(2, 0), 9));
    assert!(
        e.contains("QLinearMatMul is defined from ai.onnx opset 10, but the model imports opset 9"),
        "{e}"
    );
    load_bytes(
        &bytes(&qmatmul(zp(2, 0), 10)),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
    // Without an ai.onnx import onnxruntime uses its newest opset: no check.
    let mut m = qmatmul(zp(2, 0), 10);
    m.opset_import.retain(|o| !o.domain().is_empty());
    load_bytes(&bytes(&m), None, &LoadOptions::default()).unwrap();
}

#[test]
fn ir_versions_outside_the_known_range_are_rejected() {
    for v in [0, -1, 15, 1 << 40] {
        let mut m = relu_model();
        m.ir_version = Some(v);
        let e = err(&m);
        assert!(
            e.contains(&format!(
                "ir_version {v} is not a valid ONNX IR version (1 to 14)"
            )),
            "{e}"
        );
    }
    for v in [1, 3, 14] {
        let mut m = relu_model();
        m.ir_version = Some(v);
        load_bytes(&bytes(&m), None, &LoadOptions::default()).unwrap();
    }
}

#[test]
fn decode_errors_give_the_byte_offset() {
    let mut b = bytes(&relu_model());
    let at = b.iter().position(|&c| c == b'R').unwrap();
    b[at] = 0xff; // "Relu" is no longer UTF-8
    let e = load_bytes(&b, None, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a valid ONNX model: at byte "), "{e}");
}
