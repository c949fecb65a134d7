//! A `Session` keeps the packed constant weights of Conv, MatMul, Gemm, LSTM and GRU
//! nodes between runs: every run gives the bits of a plain `run`, the observer sees every node, and
//! products with a constant operand match an f64 reference.

use pimkit_interp::{Session, random_inputs, run, run_observed};
use pimkit_ir::{ConvAttrs, DType, Graph, Op, RnnAttrs, RnnDirection, Tensor, TensorType};
use std::collections::HashMap;

fn weights(shape: Vec<usize>, seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_f32(
        shape,
        (0..n)
            .map(|i| ((i * 37 + seed * 101 + 11) % 255) as f32 / 255.0 - 0.5)
            .collect(),
    )
}

/// x [2,6,11,9] -> Conv (groups 2, stride 2, pad 1, bias) -> Conv 1x1 -> Reshape-free
/// MatMul over the last axis with a constant [5, 13] -> Gemm (transB) on y [7, 40].
fn graph() -> Graph {
    let mut g = Graph::new("session");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![2, 6, 11, 9]));
    let w1 = g.add_const("w1", weights(vec![10, 3, 3, 3], 1));
    let b1 = g.add_const("b1", weights(vec![10], 2));
    let c1 = g
        .op(
            "c1",
            Op::Conv(ConvAttrs::simple(vec![3, 3], 2, 1, 2)),
            &[x, w1, b1],
        )
        .unwrap();
    let w2 = g.add_const("w2", weights(vec![4, 10, 1, 1], 3));
    let c2 = g
        .op(
            "c2",
            Op::Conv(ConvAttrs::simple(vec![1, 1], 1, 0, 1)),
            &[c1, w2],
        )
        .unwrap();
    let bm = g.add_const("bm", weights(vec![5, 13], 4));
    let mm = g.op("mm", Op::MatMul, &[c2, bm]).unwrap();
    let y = g.add_input("y", TensorType::new(DType::F32, vec![7, 40]));
    let bg = g.add_const("bg", weights(vec![33, 40], 5));
    let cg = g.add_const("cg", weights(vec![33], 6));
    let gm = g
        .op(
            "gm",
            Op::Gemm {
                alpha: 0.5,
                beta: 2.0,
                trans_a: false,
                trans_b: true,
            },
            &[y, bg, cg],
        )
        .unwrap();
    g.outputs = vec![mm, gm];
    g
}

#[test]
fn session_runs_give_the_bits_of_run() {
    let g = graph();
    let inputs = random_inputs(&g, 3);
    let want = run(&g, &inputs).unwrap();
    let s = Session::new(&g);
    for _ in 0..3 {
        let mut seen = 0;
        let got = s.run_observed(&inputs, &mut |_, _| seen += 1).unwrap();
        assert_eq!(seen, g.nodes.len());
        for (a, b) in got.iter().zip(&want) {
            assert_eq!(a.as_f32().unwrap(), b.as_f32().unwrap());
        }
    }
    // Other inputs through the same session: the packed weights are input-independent.
    let other = random_inputs(&g, 4);
    let a = s.run(&other).unwrap();
    let b = run_observed(&g, &other, &mut |_, _| {}).unwrap();
    assert_eq!(a[0].as_f32().unwrap(), b[0].as_f32().unwrap());
    assert_eq!(a[1].as_f32().unwrap(), b[1].as_f32().unwrap());
}

#[test]
fn constant_operand_products_match_f64() {
    let g = graph();
    let inputs = random_inputs(&g, 9);
    let s = Session::new(&g);
    s.run(&inputs).unwrap();
    let out = s.run(&inputs).unwrap();
    // Gemm: 0.5 * y * bg^T + 2 * cg.
    let y = inputs["y"].as_f32().unwrap();
    let bg = weights(vec![33, 40], 5);
    let cg = weights(vec![33], 6);
    let (bg, cg) = (bg.as_f32().unwrap(), cg.as_f32().unwrap());
    let got = out[1].as_f32().unwrap();
    for i in 0..7 {
        for j in 0..33 {
            let mut acc = 0f64;
            for k in 0..40 {
                acc += y[i * 40 + k] as f64 * bg[j * 40 + k] as f64;
            }
            let want = 0.5 * acc + 2.0 * cg[j] as f64;
            assert!(
                (got[i * 33 + j] as f64 - want).abs() < 1e-5,
                "gemm [{i},{j}]"
            );
        }
    }
    assert_eq!(out[0].shape, vec![2, 4, 6, 13]);
}

/// x [6, 2, 5] -> bidirectional LSTM (hidden 7, biases), whose Y_h [2, 2, 7] a GRU
/// (hidden 4, linear_before_reset) reads as a 2-step sequence. With `consts` the W and R
/// operands are constants of the graph (prepared once per session), otherwise graph
/// inputs (prepared at every call).
fn rnn_graph(consts: bool) -> (Graph, HashMap<String, Tensor>) {
    let mut g = Graph::new("rnn-session");
    let mut feeds = HashMap::new();
    let x = g.add_input("x", TensorType::new(DType::F32, vec![6, 2, 5]));
    feeds.insert("x".to_string(), weights(vec![6, 2, 5], 7));
    let mut operand = |g: &mut Graph, name: &str, t: Tensor| {
        if consts {
            g.add_const(name, t)
        } else {
            feeds.insert(name.to_string(), t.clone());
            g.add_input(name, TensorType::new(DType::F32, t.shape.clone()))
        }
    };
    let w = operand(&mut g, "w", weights(vec![2, 28, 5], 8));
    let r = operand(&mut g, "r", weights(vec![2, 28, 7], 9));
    let b = g.add_const("b", weights(vec![2, 56], 10));
    let attrs = |hid, dir, lbr| RnnAttrs {
        hidden_size: hid,
        direction: dir,
        linear_before_reset: lbr,
        batch_first: false,
    };
    let lstm = Op::Lstm(attrs(7, RnnDirection::Bidirectional, false));
    let ins = vec![Some(x), Some(w), Some(r), Some(b)];
    let lo = g.add_node("lstm", lstm, ins).unwrap();
    let gw = operand(&mut g, "gw", weights(vec![1, 12, 7], 11));
    let gr = operand(&mut g, "gr", weights(vec![1, 12, 4], 12));
    let gru = Op::Gru(attrs(4, RnnDirection::Forward, true));
    let go = g
        .add_node("gru", gru, vec![Some(lo[1]), Some(gw), Some(gr)])
        .unwrap();
    g.outputs = vec![lo[0], lo[2], go[0]];
    (g, feeds)
}

#[test]
fn rnn_weights_prepared_once_give_the_bits_of_per_call_weights() {
    let (gc, fc) = rnn_graph(true);
    let (gi, fi) = rnn_graph(false);
    let want = run(&gi, &fi).unwrap();
    let s = Session::new(&gc);
    for _ in 0..3 {
        let got = s.run(&fc).unwrap();
        assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            assert_eq!(a.shape, b.shape);
            assert_eq!(a.as_f32().unwrap(), b.as_f32().unwrap());
        }
    }
}
