//! Property test: random small graphs (broadcast elementwise, reductions, softmax,
//! matmul, transpose, slice/reshape views) run natively equal the interpreter. Few
//! cases: each one compiles C.

mod common;
use common::check_graph;
use pimkit_ir::{BinaryOp, DType, Graph, Op, ReduceKind, SliceAxis, TensorType, UnaryOp};
use proptest::prelude::*;

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

fn graph(m: usize, k: usize, n: usize, axis: usize, perm: bool, bcast: bool, cut: usize) -> Graph {
    let mut g = Graph::new("random");
    let a = g.add_input("a", f32t(&[m, k]));
    let b = g.add_input("b", f32t(&[k, n]));
    let cs = if bcast { vec![1, n] } else { vec![m, n] };
    let c = g.add_input("c", f32t(&cs));
    let mm = g.op("mm", Op::MatMul, &[a, b]).unwrap();
    let t = g.op("t", Op::Binary(BinaryOp::Sub), &[mm, c]).unwrap();
    let s = g
        .op("s", Op::Unary(UnaryOp::Gelu { tanh: true }), &[t])
        .unwrap();
    let sm = g.op("sm", Op::Softmax { axis }, &[s]).unwrap();
    let tr = if perm {
        g.op("tr", Op::Transpose { perm: vec![1, 0] }, &[sm])
            .unwrap()
    } else {
        sm
    };
    let rows = g.ty(tr).shape[0];
    let sl = g
        .op(
            "sl",
            Op::Slice {
                axes: vec![SliceAxis {
                    axis: 0,
                    start: (cut % rows) as i64,
                    end: rows as i64,
                    step: 1,
                }],
            },
            &[tr],
        )
        .unwrap();
    let r = g
        .op(
            "r",
            Op::Reduce {
                kind: ReduceKind::Max,
                axes: vec![1],
                keepdims: false,
            },
            &[sl],
        )
        .unwrap();
    let cols = g.ty(sl).shape[1];
    let numel = g.ty(sl).shape[0] * cols;
    let rs = g
        .op("rs", Op::Reshape { shape: vec![numel] }, &[sl])
        .unwrap();
    g.outputs = vec![r, rs, mm];
    g
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    #[test]
    fn random_graphs_match_interpreter(
        m in 1usize..9, k in 1usize..13, n in 1usize..11, axis in 0usize..2,
        perm: bool, bcast: bool, cut in 0usize..5, seed in 0u64..1000,
    ) {
        let g = graph(m, k, n, axis, perm, bcast, cut);
        let r = check_graph(&g, seed);
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}

/// ArgMax with tied maxima (rounded inputs): first and last index (select_last_index).
#[test]
fn argmax_first_and_last_with_ties() {
    let mut g = Graph::new("argmax_ties");
    let x = g.add_input("x", f32t(&[5, 7]));
    let two = g.add_const("two", pimkit_ir::Tensor::from_f32(vec![], vec![2.0]));
    let s = g.op("s", Op::Binary(BinaryOp::Mul), &[x, two]).unwrap();
    let r = g.op("r", Op::Unary(UnaryOp::Round), &[s]).unwrap();
    for (name, last) in [("first", false), ("last", true)] {
        let a = g
            .op(
                name,
                Op::ArgMax {
                    axis: 1,
                    keepdims: false,
                    select_last: last,
                },
                &[r],
            )
            .unwrap();
        g.outputs.push(a);
    }
    check_graph(&g, 11).unwrap();
    let outs = pimkit_interp::run(&g, &pimkit_interp::random_inputs(&g, 11)).unwrap();
    assert_ne!(outs[0], outs[1], "the rounded rows have ties");
}

/// Pad in every mode, including wrap with pads longer than the axis (periodic).
#[test]
fn pad_modes_match_interpreter() {
    use pimkit_ir::PadMode;
    let mut g = Graph::new("pads");
    let x = g.add_input("x", f32t(&[3, 4]));
    for (name, mode, pads) in [
        ("constant", PadMode::Constant, vec![1, 2, 2, 1]),
        ("reflect", PadMode::Reflect, vec![2, 3, 1, 2]),
        ("edge", PadMode::Edge, vec![2, 0, 3, 5]),
        ("wrap", PadMode::Wrap, vec![4, 5, 7, 1]),
    ] {
        let y = g
            .op(
                name,
                Op::Pad {
                    pads,
                    mode,
                    value: 0.5,
                },
                &[x],
            )
            .unwrap();
        g.outputs.push(y);
    }
    check_graph(&g, 5).unwrap();
}

/// ReduceMax / ReduceMin on bool (any / all, opset 20).
#[test]
fn bool_max_min_reductions_match_interpreter() {
    let mut g = Graph::new("bool_reduce");
    let x = g.add_input("x", f32t(&[4, 6]));
    let zero = g.add_const("zero", pimkit_ir::Tensor::from_f32(vec![], vec![0.6]));
    let b = g
        .op("b", Op::Binary(BinaryOp::Greater), &[x, zero])
        .unwrap();
    for (name, kind) in [("any", ReduceKind::Max), ("all", ReduceKind::Min)] {
        let y = g
            .op(
                name,
                Op::Reduce {
                    kind,
                    axes: vec![1],
                    keepdims: false,
                },
                &[b],
            )
            .unwrap();
        g.outputs.push(y);
    }
    check_graph(&g, 2).unwrap();
}
