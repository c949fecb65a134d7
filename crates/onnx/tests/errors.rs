//! Error handling: bad bytes never panic, and messages name the op, node, opset or
//! attribute at fault.

mod common;
use common::*;
use pimkit_onnx::{LoadOptions, OnnxError, load, load_bytes};
use rand::{RngExt, SeedableRng};

fn try_load(m: &pimkit_onnx::proto::ModelProto) -> Result<pimkit_ir::Graph, OnnxError> {
    load_bytes(&bytes(m), None, &LoadOptions::default())
}

fn small_model() -> pimkit_onnx::proto::ModelProto {
    let nodes = vec![
        node(
            "Conv",
            "conv",
            &["x", "w"],
            &["c"],
            vec![attr_ints("pads", &[1, 1, 1, 1])],
        ),
        node("Shape", "shape", &["c"], &["s"], vec![]),
        node("Reshape", "rs", &["c", "s"], &["r"], vec![]),
        node("Relu", "relu", &["r"], &["y"], vec![]),
    ];
    let w: Vec<f32> = (0..18).map(|i| i as f32 * 0.1).collect();
    model(
        nodes,
        vec![vi_f32("x", &[1, 2, 4, 4])],
        &["y"],
        vec![init_f32("w", &[1, 2, 3, 3], &w)],
        13,
    )
}

#[test]
fn truncated_and_random_bytes_never_panic() {
    let good = bytes(&small_model());
    assert!(load_bytes(&good, None, &LoadOptions::default()).is_ok());
    let check = |b: &[u8]| {
        if let Err(OnnxError::Internal(m)) = load_bytes(b, None, &LoadOptions::default()) {
            panic!("importer panicked on {} bytes: {m}", b.len());
        }
    };
    // prost writes fields in tag order (ir_version, graph, opset_import): every cut
    // before the opset list leaves the graph incomplete and must be rejected. Cuts
    // between whole opset entries are valid protobuf and may load.
    let mut no_opsets = small_model();
    no_opsets.opset_import.clear();
    let graph_end = bytes(&no_opsets).len();
    for cut in 0..good.len() {
        let r = load_bytes(&good[..cut], None, &LoadOptions::default());
        if cut < graph_end {
            assert!(r.is_err(), "truncated at {cut} of {} accepted", good.len());
        }
        check(&good[..cut]);
    }
    let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
    for _ in 0..3000 {
        let len = rng.random_range(0..300);
        let b: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        check(&b);
        // Mutate a valid model: flipped bytes keep most of the structure parseable.
        let mut m = good.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..m.len());
            m[i] = rng.random();
        }
        check(&m);
    }
}

#[test]
fn parse_error_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("broken.onnx");
    let good = bytes(&small_model());
    std::fs::write(&p, &good[..good.len() / 2]).unwrap();
    let e = load(&p).unwrap_err().to_string();
    assert!(
        e.starts_with(&p.display().to_string()) && e.contains("not a valid ONNX model: at byte "),
        "{e}"
    );
    let e = load(&dir.path().join("missing.onnx"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.onnx"), "{e}");
}

#[test]
fn unknown_op_names_op_node_domain_and_opset() {
    let nodes = vec![node("FancyOp", "my_node", &["x"], &["y"], vec![])];
    let m = model(nodes, vec![vi_f32("x", &[2])], &["y"], vec![], 13);
    let e = try_load(&m).unwrap_err();
    assert!(matches!(e, OnnxError::UnsupportedOp { .. }));
    let s = e.to_string();
    assert!(
        s.starts_with(
            "node 'my_node': unsupported operator 'FancyOp' (domain '', opset 13); pimkit supports "
        ),
        "{s}"
    );
    assert!(s.contains("docs/onnx.md"), "{s}");
    // A misspelt op gets the nearest supported names.
    let m = model(
        vec![node("Rleu", "n", &["x"], &["y"], vec![])],
        vec![vi_f32("x", &[2])],
        &["y"],
        vec![],
        13,
    );
    let s = try_load(&m).unwrap_err().to_string();
    assert!(s.contains("(similar: ") && s.contains("Relu"), "{s}");
    let e = try_load(&model(
        // PRelu and Einsum became supported; ImageDecoder is a real ONNX op pimkit lacks.
        vec![node("ImageDecoder", "p", &["x"], &["y"], vec![])],
        vec![vi_f32("x", &[2])],
        &["y"],
        vec![],
        20,
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("'ImageDecoder'") && e.contains("opset 20"),
        "{e}"
    );
}

#[test]
fn bad_attributes_are_reported() {
    let cases = [
        (
            node(
                "Conv",
                "c",
                &["x", "w"],
                &["y"],
                vec![attr_str("auto_pad", "SIDEWAYS")],
            ),
            "auto_pad",
        ),
        (
            node(
                "Conv",
                "c",
                &["x", "w"],
                &["y"],
                vec![attr_int("strides", 2)],
            ),
            "strides",
        ),
        (
            node("Cast", "c", &["x"], &["y"], vec![attr_int("to", 8)]),
            "to",
        ),
        (
            node(
                "Gelu",
                "c",
                &["x"],
                &["y"],
                vec![attr_str("approximate", "cubic")],
            ),
            "approximate",
        ),
    ];
    let w: Vec<f32> = vec![0.0; 9];
    for (n, attr) in cases {
        let m = model(
            vec![n],
            vec![vi_f32("x", &[1, 1, 4, 4])],
            &["y"],
            vec![init_f32("w", &[1, 1, 3, 3], &w)],
            20,
        );
        let e = try_load(&m).unwrap_err();
        assert!(matches!(e, OnnxError::Attribute { .. }), "{e}");
        let s = e.to_string();
        assert!(
            s.contains("node 'c'") && s.contains(&format!("attribute '{attr}'")),
            "{s}"
        );
    }
}

#[test]
fn unsupported_semantics_are_errors_naming_the_node() {
    let x = || vec![vi_f32("x", &[2, 3, 4])];
    // Opset < 13 Softmax coerces to 2-D: only the last axis is supported.
    let m = model(
        vec![node(
            "Softmax",
            "sm",
            &["x"],
            &["y"],
            vec![attr_int("axis", 1)],
        )],
        x(),
        &["y"],
        vec![],
        11,
    );
    let e = try_load(&m).unwrap_err().to_string();
    assert!(e.contains("'sm'") && e.contains("opset 11"), "{e}");
    let m = model(
        vec![node(
            "Softmax",
            "sm",
            &["x"],
            &["y"],
            vec![attr_int("axis", 2)],
        )],
        x(),
        &["y"],
        vec![],
        11,
    );
    assert!(try_load(&m).is_ok());

    // LSTM with non-default activations.
    let w = init_f32("w", &[1, 8, 4], &[0.0; 32]);
    let r = init_f32("r", &[1, 8, 2], &[0.0; 16]);
    let acts = attr_strs("activations", &["Sigmoid", "Relu", "Tanh"]);
    let n = node(
        "LSTM",
        "lstm1",
        &["x", "w", "r"],
        &["y"],
        vec![attr_int("hidden_size", 2), acts],
    );
    let e = try_load(&model(vec![n], x(), &["y"], vec![w, r], 14))
        .unwrap_err()
        .to_string();
    assert!(e.contains("lstm1") && e.contains("activations"), "{e}");

    // LayerNormalization's mean output used downstream.
    let n = vec![
        node(
            "LayerNormalization",
            "ln",
            &["x", "s"],
            &["y", "mean"],
            vec![],
        ),
        node("Relu", "r", &["mean"], &["z"], vec![]),
    ];
    let e = try_load(&model(
        n,
        x(),
        &["y", "z"],
        vec![init_f32("s", &[4], &[1.0; 4])],
        17,
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("'ln'") && e.contains("mean"), "{e}");

    // A Reshape whose shape is computed at run time.
    let n = vec![node("Reshape", "rs", &["x", "x"], &["y"], vec![])];
    let e = try_load(&model(n, x(), &["y"], vec![], 13))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'rs'") && e.contains("constant"), "{e}");

    // Shape errors from the IR carry the node name.
    let n = vec![node("MatMul", "mm", &["x", "x"], &["y"], vec![])];
    let e = try_load(&model(n, x(), &["y"], vec![], 13)).unwrap_err();
    assert!(
        matches!(e, OnnxError::Ir { .. }) && e.to_string().contains("'mm'"),
        "{e}"
    );

    // Undefined input.
    let n = vec![node("Relu", "r", &["nope"], &["y"], vec![])];
    let e = try_load(&model(n, x(), &["y"], vec![], 13))
        .unwrap_err()
        .to_string();
    assert!(e.contains("'nope'"), "{e}");
}

fn load_notes(m: &pimkit_onnx::proto::ModelProto) -> Result<pimkit_onnx::Loaded, OnnxError> {
    let dir = std::env::temp_dir().join(format!("pimkit-onnx-notes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("m.onnx");
    std::fs::write(&p, bytes(m)).unwrap();
    let r = pimkit_onnx::load_file_notes(&p, &LoadOptions::default());
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[test]
fn malformed_graphs_are_errors_or_notes() {
    let relu = || vec![node("Relu", "r", &["x"], &["y"], vec![])];
    // No outputs: nothing would be computed.
    let e = try_load(&model(relu(), vec![vi_f32("x", &[2, 3])], &[], vec![], 13))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no outputs"), "{e}");

    // A declared output shape that disagrees with the computed one is a note.
    let mut m = model(relu(), vec![vi_f32("x", &[2, 3])], &[], vec![], 13);
    m.graph.as_mut().unwrap().output = vec![vi_f32("y", &[7, 7])];
    let l = load_notes(&m).unwrap();
    assert_eq!(l.graph.ty(l.graph.outputs[0]).shape, vec![2, 3]);
    assert!(
        l.notes
            .iter()
            .any(|n| n.contains("[7, 7]") && n.contains("[2, 3]")),
        "{:?}",
        l.notes
    );

    // An opset newer than pimkit knows is read with the newest semantics, and said so.
    let l = load_notes(&model(
        relu(),
        vec![vi_f32("x", &[2, 3])],
        &["y"],
        vec![],
        999,
    ))
    .unwrap();
    assert!(
        l.notes.iter().any(|n| n.contains("opset 999")),
        "{:?}",
        l.notes
    );

    // Zero or NaN quantization scales would turn every value into 0 or a saturated code.
    for s in [0.0f32, f32::NAN] {
        let n = vec![node("QuantizeLinear", "q", &["x", "s"], &["y"], vec![])];
        let e = try_load(&model(
            n,
            vec![vi_f32("x", &[2, 3])],
            &["y"],
            vec![init_f32("s", &[], &[s])],
            13,
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("'q'") && e.contains("scale"), "{e}");
    }

    // LSTM hidden_size 0.
    let n = vec![node(
        "LSTM",
        "lstm",
        &["x", "w", "r"],
        &["y"],
        vec![attr_int("hidden_size", 0)],
    )];
    let e = try_load(&model(
        n,
        vec![vi_f32("x", &[1, 1, 3])],
        &["y"],
        vec![
            init_f32("w", &[1, 0, 3], &[]),
            init_f32("r", &[1, 0, 0], &[]),
        ],
        13,
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("hidden_size"), "{e}");
}

#[test]
fn devices_and_directories_are_not_read() {
    for p in ["/dev/zero", "/tmp"] {
        if std::path::Path::new(p).exists() {
            let e = load(std::path::Path::new(p)).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{p}: {e}");
        }
    }
}

#[test]
fn data_dependent_output_on_runtime_data_names_the_node() {
    for (op, ins) in [
        ("NonZero", vec!["x"]),
        ("Unique", vec!["x"]),
        ("Compress", vec!["x", "x"]),
        ("NonMaxSuppression", vec!["x", "x"]),
    ] {
        let e = try_load(&model(
            vec![node(op, "dd", &ins, &["y"], vec![])],
            vec![vi_f32("x", &[2, 2])],
            &["y"],
            vec![],
            13,
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("'dd'") && e.contains(op) && e.contains("depends on run-time data"),
            "{op}: {e}"
        );
    }
}
