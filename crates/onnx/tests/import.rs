//! Importer behaviour on hand-built models: folding of PyTorch-style shape sub-graphs,
//! operand folding into attributes, external data, old-style inputs, opset differences.

mod common;
use common::*;
use pimkit_ir::{BinaryOp, Op, ValueDef, dump};
use pimkit_onnx::{LoadOptions, load, load_bytes, load_with};

fn load_m(m: &pimkit_onnx::proto::ModelProto) -> pimkit_ir::Graph {
    load_bytes(&bytes(m), None, &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn folds_pytorch_shape_subgraph() {
    // x.view(x.size(0), -1) as torch.onnx.export writes it.
    let nodes = vec![
        node("Shape", "/Shape", &["x"], &["/Shape_output_0"], vec![]),
        node(
            "Constant",
            "/Constant",
            &[],
            &["/Constant_output_0"],
            vec![attr_tensor("value", init_i64("", &[], &[0]))],
        ),
        node(
            "Gather",
            "/Gather",
            &["/Shape_output_0", "/Constant_output_0"],
            &["/Gather_output_0"],
            vec![attr_int("axis", 0)],
        ),
        node(
            "Constant",
            "/Constant_1",
            &[],
            &["/Constant_1_output_0"],
            vec![attr_tensor("value", init_i64("", &[1], &[0]))],
        ),
        node(
            "Unsqueeze",
            "/Unsqueeze",
            &["/Gather_output_0", "/Constant_1_output_0"],
            &["/Unsqueeze_output_0"],
            vec![],
        ),
        node(
            "Constant",
            "/Constant_2",
            &[],
            &["/Constant_2_output_0"],
            vec![attr_tensor("value", init_i64("", &[1], &[-1]))],
        ),
        node(
            "Concat",
            "/Concat",
            &["/Unsqueeze_output_0", "/Constant_2_output_0"],
            &["/Concat_output_0"],
            vec![attr_int("axis", 0)],
        ),
        node(
            "Reshape",
            "/Reshape",
            &["x", "/Concat_output_0"],
            &["y"],
            vec![],
        ),
    ];
    let m = model(nodes, vec![vi_f32("x", &[2, 3, 4])], &["y"], vec![], 17);
    let g = load_m(&m);
    assert_eq!(g.nodes.len(), 1, "{}", dump(&g));
    assert_eq!(g.nodes[0].name, "/Reshape");
    assert_eq!(g.nodes[0].op, Op::Reshape { shape: vec![2, 12] });
    assert!(
        g.values
            .iter()
            .all(|v| !matches!(v.def, ValueDef::Const(_))),
        "no leftover constants"
    );
    assert_eq!(g.value(g.outputs[0]).name, "y");
}

#[test]
fn folds_constant_of_shape_expand_where_chain() {
    // mask = Where(Equal(ConstantOfShape(shape), 1), -1, shape) -> Expand(x, mask-derived)
    let nodes = vec![
        node("Shape", "s", &["x"], &["shape"], vec![attr_int("start", 1)]),
        node(
            "ConstantOfShape",
            "cos",
            &["two"],
            &["ones"],
            vec![attr_tensor("value", init_i64("", &[1], &[1]))],
        ),
        node("Equal", "eq", &["ones", "one"], &["isone"], vec![]),
        node("Where", "wh", &["isone", "shape", "ones"], &["tgt"], vec![]),
        node(
            "Cast",
            "cast",
            &["tgt"],
            &["tgt64"],
            vec![attr_int("to", 7)],
        ),
        node("Range", "rg", &["zero", "three", "one_s"], &["r"], vec![]),
        node("Mul", "mul", &["r", "one_s"], &["r2"], vec![]),
        node("Expand", "ex", &["y", "tgt64"], &["out"], vec![]),
        node("Add", "add", &["out", "x"], &["z"], vec![]),
        node(
            "Gather",
            "g",
            &["x", "r2"],
            &["w"],
            vec![attr_int("axis", 2)],
        ),
    ];
    let inits = vec![
        init_i64("two", &[1], &[2]),
        init_i64("one", &[], &[1]),
        init_i64("zero", &[], &[0]),
        init_i64("three", &[], &[3]),
        init_i64("one_s", &[], &[1]),
    ];
    let m = model(
        nodes,
        vec![vi_f32("x", &[5, 3, 4]), vi_f32("y", &[3, 1])],
        &["z", "w"],
        inits,
        17,
    );
    let g = load_m(&m);
    let ops: Vec<&str> = g.nodes.iter().map(|n| n.op.name()).collect();
    assert_eq!(ops, ["Expand", "Add", "Gather"], "{}", dump(&g));
    assert_eq!(g.nodes[0].op, Op::Expand { shape: vec![3, 4] });
    // The folded Range*1 feeds Gather as a tensor: it enters the IR as an i64 constant.
    let r2 = g.nodes[2].inputs[1].unwrap();
    assert_eq!(g.const_data(r2).unwrap().as_i64(), Some(&[0i64, 1, 2][..]));
}

#[test]
fn folds_operands_into_attributes() {
    let i64max = i64::MAX;
    let nodes = vec![
        node("Unsqueeze", "unsq", &["x", "ax0"], &["a"], vec![]),
        node("Squeeze", "sq", &["a", "ax0"], &["b"], vec![]),
        node(
            "Slice",
            "sl",
            &["b", "starts", "ends", "axes"],
            &["c"],
            vec![],
        ),
        node("Flatten", "fl", &["c"], &["d"], vec![attr_int("axis", 2)]),
        node("Pad", "pad", &["d", "pads", "pv"], &["e"], vec![]),
        node("Clip", "clip", &["e", "", "six"], &["f"], vec![]),
        node(
            "ReduceMean",
            "rm",
            &["f", "ax_last"],
            &["g"],
            vec![attr_int("keepdims", 0)],
        ),
        node(
            "Split",
            "split",
            &["x", "sizes"],
            &["s0", "s1"],
            vec![attr_int("axis", 1)],
        ),
        node("Tile", "tile", &["s0", "reps"], &["t"], vec![]),
    ];
    let inits = vec![
        init_i64("ax0", &[1], &[0]),
        init_i64("starts", &[2], &[1, -3]),
        init_i64("ends", &[2], &[i64max, 100]),
        init_i64("axes", &[2], &[0, -1]),
        init_i64("pads", &[4], &[0, 1, 0, 2]),
        init_f32("pv", &[], &[0.5]),
        init_f32("six", &[], &[6.0]),
        init_i64("ax_last", &[1], &[-1]),
        init_i64("sizes", &[2], &[1, 2]),
        init_i64("reps", &[3], &[2, 1, 1]),
    ];
    let m = model(
        nodes,
        vec![vi_f32("x", &[2, 3, 4])],
        &["g", "s1", "t"],
        inits,
        18,
    );
    let g = load_m(&m);
    let get = |name: &str| g.nodes.iter().find(|n| n.name == name).unwrap().op.clone();
    assert_eq!(
        get("unsq"),
        Op::Reshape {
            shape: vec![1, 2, 3, 4]
        }
    );
    assert_eq!(
        get("sq"),
        Op::Reshape {
            shape: vec![2, 3, 4]
        }
    );
    let Op::Slice { axes } = get("sl") else {
        panic!()
    };
    assert_eq!((axes[0].axis, axes[0].start, axes[0].end), (0, 1, 2));
    assert_eq!((axes[1].axis, axes[1].start, axes[1].end), (2, 1, 4));
    assert_eq!(get("fl"), Op::Reshape { shape: vec![3, 3] });
    assert_eq!(
        get("pad"),
        Op::Pad {
            pads: vec![0, 1, 0, 2],
            mode: pimkit_ir::PadMode::Constant,
            value: 0.5
        }
    );
    assert_eq!(
        get("clip"),
        Op::Clip {
            min: None,
            max: Some(6.0)
        }
    );
    let Op::Reduce { axes, keepdims, .. } = get("rm") else {
        panic!()
    };
    assert_eq!((axes, keepdims), (vec![1], false));
    assert_eq!(
        get("split"),
        Op::Split {
            axis: 1,
            sizes: vec![1, 2]
        }
    );
    assert_eq!(
        get("tile"),
        Op::Tile {
            repeats: vec![2, 1, 1]
        }
    );
    // Folded operands do not become IR constants.
    assert!(
        g.values
            .iter()
            .all(|v| !matches!(v.def, ValueDef::Const(_))),
        "{}",
        dump(&g)
    );
}

#[test]
fn old_opset_attributes_and_auto_pad() {
    let nodes = vec![
        node(
            "Conv",
            "conv",
            &["x", "w"],
            &["c"],
            vec![
                attr_str("auto_pad", "SAME_UPPER"),
                attr_ints("strides", &[2, 2]),
            ],
        ),
        node(
            "Reshape",
            "rs",
            &["c"],
            &["r"],
            vec![attr_ints("shape", &[1, -1])],
        ),
        node("Softmax", "sm", &["r"], &["s"], vec![]),
        node("Sum", "sum", &["s", "s", "s"], &["sum3"], vec![]),
        node("Mean", "mean", &["s", "s"], &["m"], vec![]),
        node("Dropout", "drop", &["m"], &["dm"], vec![]),
    ];
    let w: Vec<f32> = vec![0.5; 2 * 3 * 3];
    let m = model(
        nodes,
        vec![vi_f32("x", &[1, 1, 5, 5])],
        &["sum3", "dm"],
        vec![init_f32("w", &[2, 1, 3, 3], &w)],
        4,
    );
    let g = load_m(&m);
    let Op::Conv(a) = &g.nodes[0].op else {
        panic!()
    };
    assert_eq!(a.pads, vec![1, 1, 1, 1]);
    assert_eq!(g.ty(g.nodes[0].outputs[0]).shape, vec![1, 2, 3, 3]);
    assert_eq!(g.nodes[1].op, Op::Reshape { shape: vec![1, 18] });
    assert_eq!(g.nodes[2].op, Op::Softmax { axis: 1 });
    let adds = g
        .nodes
        .iter()
        .filter(|n| n.op == Op::Binary(BinaryOp::Add))
        .count();
    assert_eq!(
        adds,
        3,
        "Sum of 3 -> 2 Adds, Mean of 2 -> 1 Add + Div: {}",
        dump(&g)
    );
    assert!(
        g.nodes
            .iter()
            .any(|n| n.name == "mean" && n.op == Op::Binary(BinaryOp::Div))
    );
    assert!(
        g.nodes
            .iter()
            .any(|n| n.name == "drop" && n.op == Op::Identity)
    );
}

#[test]
fn initializers_listed_as_inputs_are_constants() {
    let nodes = vec![node("MatMul", "mm", &["x", "w"], &["y"], vec![])];
    let inputs = vec![vi_f32("x", &[1, 2]), vi_f32("w", &[2, 2])];
    let m = model(
        nodes,
        inputs,
        &["y"],
        vec![init_f32("w", &[2, 2], &[1.0, 2.0, 3.0, 4.0])],
        9,
    );
    let g = load_m(&m);
    assert_eq!(g.inputs.len(), 1);
    assert_eq!(g.value(g.inputs[0]).name, "x");
    let w = g.find_value("w").unwrap();
    assert_eq!(
        g.const_data(w).unwrap().as_f32(),
        Some(&[1.0f32, 2.0, 3.0, 4.0][..])
    );
}

#[test]
fn symbolic_dims_and_io_outputs() {
    use common::D;
    let nodes = vec![node("Relu", "", &["x"], &["y"], vec![])];
    let inputs = vec![vi("x", 1, &[D::P("batch"), D::V(3), D::P("seq")])];
    let m = model(
        nodes,
        inputs,
        &["y", "x", "c"],
        vec![init_f32("c", &[1], &[2.0])],
        13,
    );
    let mut opts = LoadOptions::default();
    opts.dims.insert("batch".into(), 4);
    let g = load_bytes(&bytes(&m), None, &opts).unwrap();
    assert_eq!(g.ty(g.inputs[0]).shape, vec![4, 3, 1]);
    assert_eq!(g.nodes[0].name, "Relu_0");
    // Outputs that are a graph input or a constant get an Identity node.
    assert_eq!(g.outputs.len(), 3);
    for &o in &g.outputs {
        assert!(matches!(g.value(o).def, ValueDef::Node { .. }));
    }
    assert_eq!(g.value(g.outputs[2]).name, "c");
}

#[test]
fn paddles_repeated_question_mark_dims_are_independent() {
    // paddle2onnx writes "?" for every unknown dim; onnxruntime binds each on its own.
    use common::D;
    let nodes = vec![
        node("Relu", "", &["x"], &["y"], vec![]),
        node("Relu", "", &["s"], &["t"], vec![]),
    ];
    let inputs = vec![
        vi("x", 1, &[D::P("?"), D::V(3), D::P("?"), D::P("?")]),
        vi("s", 1, &[D::P("?"), D::V(2)]),
    ];
    let m = model(nodes, inputs, &["y", "t"], vec![], 13);
    let mut opts = LoadOptions::default();
    opts.input_shapes.insert("x".into(), vec![1, 3, 320, 240]);
    opts.input_shapes.insert("s".into(), vec![1, 2]);
    let g = load_bytes(&bytes(&m), None, &opts).unwrap();
    assert_eq!(g.ty(g.inputs[0]).shape, vec![1, 3, 320, 240]);
    assert_eq!(g.ty(g.inputs[1]).shape, vec![1, 2]);
}

#[test]
fn external_data_and_shape_only() {
    let dir = tempfile::tempdir().unwrap();
    let w: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let mut blob = vec![0u8; 16]; // leading padding exercises the offset
    blob.extend(w.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.path().join("weights.bin"), &blob).unwrap();
    let kv = |k: &str, v: &str| pimkit_onnx::proto::StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v.into()),
    };
    let ext = pimkit_onnx::proto::TensorProto {
        name: Some("w".into()),
        dims: vec![3, 2],
        data_type: Some(1),
        data_location: Some(1),
        external_data: vec![
            kv("location", "weights.bin"),
            kv("offset", "16"),
            kv("length", "24"),
        ],
        ..Default::default()
    };
    let nodes = vec![node("MatMul", "mm", &["x", "w"], &["y"], vec![])];
    let m = model(nodes, vec![vi_f32("x", &[1, 3])], &["y"], vec![ext], 13);
    let path = dir.path().join("model.onnx");
    std::fs::write(&path, bytes(&m)).unwrap();
    let g = load(&path).unwrap();
    let wid = g.find_value("w").unwrap();
    assert_eq!(g.const_data(wid).unwrap().as_f32(), Some(&w[..]));

    // Shape-only never opens the data file.
    std::fs::remove_file(dir.path().join("weights.bin")).unwrap();
    let opts = LoadOptions {
        shape_only: true,
        ..Default::default()
    };
    let g = load_with(&path, &opts).unwrap();
    assert!(g.is_shape_only());
    assert_eq!(g.ty(g.find_value("w").unwrap()).shape, vec![3, 2]);
    let e = pimkit_onnx::export(&g).unwrap_err().to_string();
    assert!(e.contains("cannot export a shape-only graph"), "{e}");

    let e = load(&path).unwrap_err().to_string();
    assert!(e.contains("weights.bin") && e.contains("'w'"), "{e}");
}

#[test]
fn quantize_linear_defaults_to_u8_and_ms_ops_import() {
    let nodes = vec![
        node("QuantizeLinear", "q", &["x", "s"], &["xq"], vec![]),
        NodeProto {
            domain: Some("com.microsoft".into()),
            ..node(
                "QLinearSigmoid",
                "qs",
                &["xq", "s", "z", "s", "z"],
                &["ys"],
                vec![],
            )
        },
        node("DequantizeLinear", "dq", &["ys", "s", "z"], &["y"], vec![]),
    ];
    let z = pimkit_onnx::proto::TensorProto {
        name: Some("z".into()),
        data_type: Some(2),
        int32_data: vec![128],
        ..Default::default()
    };
    let m = model(
        nodes,
        vec![vi_f32("x", &[2, 3])],
        &["y"],
        vec![init_f32("s", &[], &[0.1]), z],
        13,
    );
    let g = load_m(&m);
    assert_eq!(
        g.nodes[0].op,
        Op::QuantizeLinear {
            axis: 1,
            to: pimkit_ir::DType::U8
        }
    );
    assert_eq!(g.nodes[1].op, Op::QLinearSigmoid);
    assert_eq!(g.ty(g.outputs[0]).dtype, pimkit_ir::DType::F32);
}

use pimkit_onnx::proto::NodeProto;

#[test]
fn folds_slice_with_negative_step_concat_and_cast() {
    let data: Vec<i64> = (0..12).collect();
    let nodes = vec![
        node(
            "Constant",
            "k",
            &[],
            &["m"],
            vec![attr_tensor("value", init_i64("", &[3, 4], &data))],
        ),
        node(
            "Slice",
            "sl",
            &["m", "st", "en", "ax", "sp"],
            &["s"],
            vec![],
        ),
        node(
            "Concat",
            "cat",
            &["s", "s"],
            &["cc"],
            vec![attr_int("axis", 0)],
        ),
        node("Squeeze", "sq", &["one"], &["one_sq"], vec![]),
        node("Sub", "sub", &["cc", "one_sq"], &["d"], vec![]),
        node("Cast", "cast", &["d"], &["df"], vec![attr_int("to", 1)]),
        node("Add", "add", &["x", "df"], &["y"], vec![]),
    ];
    let inits = vec![
        init_i64("st", &[1], &[-1]),
        init_i64("en", &[1], &[i64::MIN]),
        init_i64("ax", &[1], &[1]),
        init_i64("sp", &[1], &[-2]),
        init_i64("one", &[1], &[1]),
    ];
    let m = model(nodes, vec![vi_f32("x", &[6, 2])], &["y"], inits, 13);
    let g = load_m(&m);
    assert_eq!(g.nodes.len(), 1, "{}", dump(&g));
    let c = g.nodes[0].inputs[1].unwrap();
    assert_eq!(g.value(c).name, "df");
    let want: Vec<f32> = [3, 1, 7, 5, 11, 9, 3, 1, 7, 5, 11, 9]
        .iter()
        .map(|&v| (v - 1) as f32)
        .collect();
    assert_eq!(g.const_data(c).unwrap().as_f32(), Some(&want[..]));
    assert_eq!(g.ty(c).shape, vec![6, 2]);
}

#[test]
fn identity_on_weights_aliases_the_constant() {
    let w: Vec<f32> = (0..70_000).map(|i| i as f32).collect();
    let nodes = vec![
        node("Identity", "id", &["w"], &["w2"], vec![]),
        node("Add", "add", &["x", "w2"], &["y"], vec![]),
    ];
    let m = model(
        nodes,
        vec![vi_f32("x", &[70_000])],
        &["y"],
        vec![init_f32("w", &[70_000], &w)],
        13,
    );
    let g = load_m(&m);
    assert_eq!(g.nodes.len(), 1);
    let c = g.nodes[0].inputs[1].unwrap();
    assert_eq!(g.value(c).name, "w2");
    assert_eq!(g.const_data(c).unwrap().as_f32(), Some(&w[..]));
}

/// PyTorch's dynamo exporter names each node's FX node in `metadata_props`; the nodes of
/// one call (F.silu -> Sigmoid, Mul) become parts of one operator, and the exporter keeps it.
#[test]
fn framework_operator_from_node_metadata_survives_export() {
    use pimkit_onnx::proto::StringStringEntryProto;
    let meta = |k: &str, v: &str| StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v.into()),
    };
    let fx = "%silu : [num_users=1] = call_function[target=torch.ops.aten.silu.default](args = (%x,), kwargs = {})";
    let nodes = vec![
        NodeProto {
            metadata_props: vec![
                meta("namespace", ": aten.silu.default"),
                meta("pkg.torch.onnx.fx_node", fx),
            ],
            ..node("Sigmoid", "node_Sigmoid_0", &["x"], &["s"], vec![])
        },
        NodeProto {
            metadata_props: vec![meta("pkg.torch.onnx.fx_node", fx)],
            ..node("Mul", "node_Mul_1", &["x", "s"], &["y"], vec![])
        },
        NodeProto {
            metadata_props: vec![meta("namespace", "__main__.M/relu: aten.relu.default")],
            ..node("Relu", "node_Relu_2", &["y"], &["r"], vec![])
        },
        node("Neg", "plain", &["r"], &["z"], vec![]),
    ];
    let m = model(nodes, vec![vi_f32("x", &[2, 3])], &["z"], vec![], 18);
    let g = load_m(&m);
    let sources: Vec<_> = g.nodes.iter().map(|n| n.source.as_deref()).collect();
    assert_eq!(
        sources,
        [Some("silu"), Some("silu"), Some("__main__.M/relu"), None]
    );
    assert_eq!(g.nodes[3].operator(), "plain");
    assert!(dump(&g).contains("# from silu"));
    let back = load_bytes(
        &pimkit_onnx::export(&g).unwrap(),
        None,
        &LoadOptions::default(),
    )
    .unwrap();
    let again: Vec<_> = back.nodes.iter().map(|n| n.source.as_deref()).collect();
    assert_eq!(again, sources);
}
