//! Tensors too large to exist are errors naming the value or node, and static costs of
//! huge graphs saturate instead of wrapping.

use pimkit_ir::{DType, Graph, GraphStats, Op, TensorType, checked_bytes, verify};

#[test]
fn byte_sizes_are_checked() {
    assert_eq!(checked_bytes(&[2, 3], 4), Some(24));
    assert_eq!(checked_bytes(&[1 << 23, 1 << 23], 4), Some(1 << 48));
    assert_eq!(checked_bytes(&[1 << 23, 1 << 23], 8), None);
    // The product overflows 64 bits: still None, never a small wrapped number.
    assert_eq!(checked_bytes(&[1 << 40, 1 << 40, 1 << 40], 4), None);
}

#[test]
fn oversized_values_and_node_outputs_are_errors() {
    let mut g = Graph::new("huge");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1 << 30, 1 << 30]));
    let e = verify(&g).unwrap_err().to_string();
    assert!(e.contains("'x'") && e.contains("2^48"), "{e}");

    let mut g = Graph::new("grow");
    let a = g.add_input("a", TensorType::new(DType::F32, vec![1 << 24, 1]));
    let b = g.add_input("b", TensorType::new(DType::F32, vec![1, 1 << 24]));
    let e = g.op("outer", Op::MatMul, &[a, b]).unwrap_err().to_string();
    assert!(e.contains("'outer'") && e.contains("2^48"), "{e}");
    let _ = x;
}

#[test]
fn mac_counts_saturate() {
    let mut g = Graph::new("macs");
    let a = g.add_input("a", TensorType::new(DType::F32, vec![1 << 21, 1 << 21]));
    let b = g.add_input("b", TensorType::new(DType::F32, vec![1 << 21, 1 << 21]));
    let y = g.op("mm", Op::MatMul, &[a, b]).unwrap();
    g.outputs = vec![y];
    // 2^63 MACs per product; two of them would wrap to 0.
    let y2 = g.op("mm2", Op::MatMul, &[a, b]).unwrap();
    g.outputs.push(y2);
    assert_eq!(GraphStats::of(&g).macs, u64::MAX);
}

/// A per-axis scale must have one entry per element of the axis: an empty one is a
/// shape error at the node (exit 2 from the CLI), not an interpreter failure later.
#[test]
fn empty_per_axis_scales_are_rejected() {
    for dq in [true, false] {
        let mut g = Graph::new("q");
        let (xt, op) = if dq {
            (DType::U8, Op::DequantizeLinear { axis: 1 })
        } else {
            (
                DType::F32,
                Op::QuantizeLinear {
                    axis: 1,
                    to: DType::U8,
                },
            )
        };
        let x = g.add_input("x", TensorType::new(xt, vec![2, 3]));
        let s = g.add_input("s", TensorType::new(DType::F32, vec![0]));
        let e = g.op("q", op, &[x, s]).unwrap_err().to_string();
        assert!(e.contains("'q'") && e.contains("per-axis scale"), "{e}");
    }
}

/// Engines take a graph without control flow as it is: its weights are not copied (a
/// model whose weights fill the memory would otherwise need twice that).
#[test]
fn a_static_graph_is_taken_without_copying_its_weights() {
    let mut g = Graph::new("w");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 4]));
    let w = g.add_const("w", pimkit_ir::Tensor::from_f32(vec![4, 2], vec![0.5; 8]));
    let y = g.op("mm", Op::MatMul, &[x, w]).unwrap();
    g.outputs.push(y);
    let ptr = |g: &Graph| match &g.value(w).def {
        pimkit_ir::ValueDef::Const(Some(t)) => t.as_f32().unwrap().as_ptr(),
        _ => panic!("w is a constant"),
    };
    let before = ptr(&g);
    let h = pimkit_ir::into_static(g).unwrap();
    assert_eq!(ptr(&h), before);
}
