//! Nest counts per Torch-PIM zoo operator equal the paper's (torch-pim.txt §4.2 and
//! Table 4) and the list.

use pimkit_loops::lower;

fn build(name: &str, n: usize) -> pimkit_ir::Graph {
    let mut params = vec![("n".to_string(), n.to_string())];
    if name == "depthwise_conv" {
        params.push(("c".into(), "4".into()));
    }
    pimkit_zoo::build(name, &params).unwrap_or_else(|e| panic!("zoo {name}: {e}"))
}

#[test]
fn nest_counts_match_the_paper() {
    let expected = [
        ("softmax", 8),
        ("attention", 14),
        ("layernorm", 12),
        ("rmsnorm", 8),
        ("mlp", 7),
        ("mac", 3),
        ("gemv", 2),
        ("depthwise_conv", 3),
        ("matmul", 2),
        ("relu", 1),
        ("ew_add", 1),
        ("gelu", 1),
        ("silu", 2),
        ("tanh", 1),
        ("copying", 1),
        ("scale", 1),
        ("zeroing", 1),
    ];
    let mut bad = vec![];
    for (name, want) in expected {
        let p = lower(&build(name, 16)).unwrap_or_else(|e| panic!("lower {name}: {e}"));
        if p.nests.len() != want {
            bad.push(format!(
                "{name}: {} nests, expected {want}\n{}",
                p.nests.len(),
                p.dump()
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn counts_do_not_depend_on_size() {
    for name in ["softmax", "attention", "layernorm", "rmsnorm", "mlp"] {
        let a = lower(&build(name, 8)).unwrap().nests.len();
        let b = lower(&build(name, 32)).unwrap().nests.len();
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn constant_gather_indices_out_of_range_are_errors() {
    // The native code clamps indices (memory safety), so a bad constant index would only
    // give wrong data silently: the lowering refuses it.
    use pimkit_ir::{DType, Graph, Op, Tensor, TensorType};
    let mut g = Graph::new("g");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![2, 3]));
    let i = g.add_const("i", Tensor::from_i64(vec![2], vec![1, 5]));
    let y = g.op("take", Op::Gather { axis: 0 }, &[x, i]).unwrap();
    g.outputs = vec![y];
    let e = lower(&g).unwrap_err().to_string();
    assert!(e.contains("'take'") && e.contains("index 5"), "{e}");
    // In range, negative counted from the end: fine.
    let mut g = Graph::new("g");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![2, 3]));
    let i = g.add_const("i", Tensor::from_i64(vec![2], vec![1, -2]));
    let y = g.op("take", Op::Gather { axis: 0 }, &[x, i]).unwrap();
    g.outputs = vec![y];
    assert!(lower(&g).is_ok());
}
