//! Bufferization: in-place reuse, aliasing through views, and what must not be reused.

use pimkit_ir::{BinaryOp, DType, Graph, Op, TensorType, UnaryOp};
use pimkit_loops::{AllocKind, Program, Role, analyze, lower};

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

fn alloc_of(p: &Program, name: &str) -> usize {
    let t = p
        .tensors
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tensor {name}"));
    t.alloc.expect("memory tensor")
}

#[test]
fn dead_elementwise_input_is_reused_in_place() {
    let mut g = Graph::new("chain");
    let x = g.add_input("x", f32t(&[8, 16]));
    let a = g.op("a", Op::Unary(UnaryOp::Exp), &[x]).unwrap();
    let b = g.op("b", Op::Unary(UnaryOp::Tanh), &[a]).unwrap();
    let c = g.op("c", Op::Binary(BinaryOp::Mul), &[b, b]).unwrap();
    g.outputs = vec![c];
    let p = lower(&g).unwrap();
    // x is a graph input: never written in place.
    assert_ne!(alloc_of(&p, "x"), alloc_of(&p, "a"));
    // a dies at b, b dies at c: one buffer for all three.
    assert_eq!(alloc_of(&p, "a"), alloc_of(&p, "b"));
    assert_eq!(alloc_of(&p, "b"), alloc_of(&p, "c"));
    assert_eq!(p.allocs.len(), 2);
    assert!(p.allocs[alloc_of(&p, "c")].holds_output);
    // b*b: one operand, read once; the in-place write hits the same allocation.
    let n = &p.nests[2];
    assert_eq!(n.operands.len(), 2);
    let s = analyze(&p, n);
    assert_eq!(s.reads.len(), 1);
    assert_eq!(s.reads[0].alloc, s.writes[0].alloc);
    assert_eq!(s.read_bytes, 8 * 16 * 4);
}

#[test]
fn live_input_is_not_overwritten() {
    let mut g = Graph::new("fanout");
    let x = g.add_input("x", f32t(&[4, 4]));
    let a = g.op("a", Op::Unary(UnaryOp::Exp), &[x]).unwrap();
    let b = g.op("b", Op::Unary(UnaryOp::Neg), &[a]).unwrap();
    let c = g.op("c", Op::Binary(BinaryOp::Add), &[a, b]).unwrap();
    g.outputs = vec![c];
    let p = lower(&g).unwrap();
    // a is still needed by c when b is computed.
    assert_ne!(alloc_of(&p, "a"), alloc_of(&p, "b"));
    // c may take over a or b (both die at c).
    let ca = alloc_of(&p, "c");
    assert!(ca == alloc_of(&p, "a") || ca == alloc_of(&p, "b"));
}

#[test]
fn graph_outputs_and_broadcast_inputs_are_not_reused() {
    let mut g = Graph::new("outs");
    let x = g.add_input("x", f32t(&[4, 4]));
    let r = g.add_input("r", f32t(&[4]));
    let a = g.op("a", Op::Unary(UnaryOp::Exp), &[x]).unwrap();
    let b = g.op("b", Op::Unary(UnaryOp::Neg), &[a]).unwrap();
    let s = g.op("s", Op::Unary(UnaryOp::Exp), &[r]).unwrap();
    // s is broadcast into a [4,4] result: shapes differ, no reuse.
    let c = g.op("c", Op::Binary(BinaryOp::Add), &[b, s]).unwrap();
    g.outputs = vec![a, c];
    let p = lower(&g).unwrap();
    assert_ne!(alloc_of(&p, "a"), alloc_of(&p, "b"), "a is a graph output");
    assert_ne!(alloc_of(&p, "s"), alloc_of(&p, "c"));
    assert_eq!(alloc_of(&p, "b"), alloc_of(&p, "c"));
}

#[test]
fn views_alias_their_root_buffer() {
    let mut g = Graph::new("views");
    let x = g.add_input("x", f32t(&[2, 3, 4]));
    let y = g.op("y", Op::Unary(UnaryOp::Exp), &[x]).unwrap();
    let r = g.op("r", Op::Reshape { shape: vec![6, 4] }, &[y]).unwrap();
    let parts = g
        .add_node(
            "sp",
            Op::Split {
                axis: 1,
                sizes: vec![1, 3],
            },
            vec![Some(r)],
        )
        .unwrap();
    let z = g
        .op("z", Op::Binary(BinaryOp::Mul), &[parts[1], parts[1]])
        .unwrap();
    g.outputs = vec![z, parts[0]];
    let p = lower(&g).unwrap();
    // Reshape and split emit no nest and share y's buffer.
    assert_eq!(p.nests.len(), 2);
    let ya = alloc_of(&p, "y");
    assert_eq!(alloc_of(&p, "r"), ya);
    assert_eq!(alloc_of(&p, "sp:0"), ya);
    assert_eq!(alloc_of(&p, "sp:1"), ya);
    // z reads a strided view: not contiguous, so no in-place reuse.
    assert_ne!(alloc_of(&p, "z"), ya);
    let t = p.tensors.iter().find(|t| t.name == "sp:1").unwrap();
    assert_eq!((t.offset, t.strides.clone()), (1, vec![4, 1]));
    // The bytes read are the view's, not the whole buffer's.
    let s = analyze(&p, &p.nests[1]);
    assert_eq!(s.read_bytes, 6 * 3 * 4);
}

#[test]
fn reductions_accumulate_in_their_fill_buffer() {
    let mut g = Graph::new("red");
    let x = g.add_input("x", f32t(&[8, 32]));
    let m = g
        .op(
            "m",
            Op::Reduce {
                kind: pimkit_ir::ReduceKind::Mean,
                axes: vec![1],
                keepdims: true,
            },
            &[x],
        )
        .unwrap();
    g.outputs = vec![m];
    let p = lower(&g).unwrap();
    assert_eq!(p.nests.len(), 3);
    // fill, sum (inout on the fill's buffer), divide in place: one temp buffer.
    let temps: Vec<_> = p
        .allocs
        .iter()
        .filter(|a| a.kind == AllocKind::Temp)
        .collect();
    assert_eq!(temps.len(), 1, "{}", p.dump());
    let sum = &p.nests[1];
    assert!(sum.operands.iter().any(|o| o.role == Role::InOut));
    let s = analyze(&p, sum);
    assert_eq!((s.n_iter, s.n_total), (8, 8 * 32));
    assert_eq!(s.read_bytes, 8 * 32 * 4 + 8 * 4);
    assert_eq!(s.write_bytes, 8 * 4);
}
