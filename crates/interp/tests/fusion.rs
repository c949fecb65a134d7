//! Activation fusion: a Conv whose only reader is a Clip or Relu applies it as it writes
//! its output (`Session::run`); an observed run executes every node on its own. Both
//! must give the same bits, NaN and infinities included.

mod common;

use common::rand_f32;
use pimkit_interp::Session;
use pimkit_ir::{ConvAttrs, DType, Graph, Op, Tensor, TensorType, UnaryOp, ValueId};
use std::collections::HashMap;

fn konst(g: &mut Graph, name: &str, shape: Vec<usize>, seed: u64) -> ValueId {
    let n = shape.iter().product();
    let mut v = rand_f32(n, seed);
    // Products of 4 with the inputs' 3e38 overflow to infinity (and inf * 0 is NaN).
    v[n / 2] = 4.0;
    v[n / 3] = 0.0;
    g.add_const(name, Tensor::from_f32(shape, v))
}

fn conv(g: &mut Graph, name: &str, x: ValueId, w: ValueId, b: ValueId, a: ConvAttrs) -> ValueId {
    g.op(name, Op::Conv(a), &[x, w, b]).unwrap()
}

fn clip(g: &mut Graph, name: &str, x: ValueId, min: Option<f32>, max: Option<f32>) -> ValueId {
    g.op(name, Op::Clip { min, max }, &[x]).unwrap()
}

/// 3x3 Conv -> Clip(0, 6) -> depthwise 3x3 stride 2 -> Relu -> 1x1 Conv -> Clip(max
/// only) -> 3x3 stride-2 Conv read twice (not fused) -> Relu, plus a Conv -> Clip whose
/// Conv output is also a graph output (not fused) and a Clip(min only) graph output.
fn graph() -> Graph {
    let mut g = Graph::new("fusion");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 5, 13, 11]));
    let (w1, b1) = (
        konst(&mut g, "w1", vec![16, 5, 3, 3], 1),
        konst(&mut g, "b1", vec![16], 2),
    );
    let c1 = conv(
        &mut g,
        "c1",
        x,
        w1,
        b1,
        ConvAttrs::simple(vec![3, 3], 1, 1, 1),
    );
    let r1 = clip(&mut g, "r1", c1, Some(0.0), Some(6.0));
    let (w2, b2) = (
        konst(&mut g, "w2", vec![16, 1, 3, 3], 3),
        konst(&mut g, "b2", vec![16], 4),
    );
    let c2 = conv(
        &mut g,
        "c2",
        r1,
        w2,
        b2,
        ConvAttrs::simple(vec![3, 3], 2, 1, 16),
    );
    let r2 = g.op("r2", Op::Unary(UnaryOp::Relu), &[c2]).unwrap();
    let (w3, b3) = (
        konst(&mut g, "w3", vec![40, 16, 1, 1], 5),
        konst(&mut g, "b3", vec![40], 6),
    );
    let c3 = conv(
        &mut g,
        "c3",
        r2,
        w3,
        b3,
        ConvAttrs::simple(vec![1, 1], 1, 0, 1),
    );
    let r3 = clip(&mut g, "r3", c3, None, Some(0.25));
    let (w4, b4) = (
        konst(&mut g, "w4", vec![8, 40, 3, 3], 7),
        konst(&mut g, "b4", vec![8], 8),
    );
    let c4 = conv(
        &mut g,
        "c4",
        r3,
        w4,
        b4,
        ConvAttrs::simple(vec![3, 3], 2, 1, 1),
    );
    let r4 = g.op("r4", Op::Unary(UnaryOp::Relu), &[c4]).unwrap();
    let s4 = g
        .op("s4", Op::Binary(pimkit_ir::BinaryOp::Add), &[c4, r4])
        .unwrap();
    let (w5, b5) = (
        konst(&mut g, "w5", vec![6, 40, 1, 1], 9),
        konst(&mut g, "b5", vec![6], 10),
    );
    let c5 = conv(
        &mut g,
        "c5",
        r3,
        w5,
        b5,
        ConvAttrs::simple(vec![1, 1], 1, 0, 1),
    );
    let r5 = clip(&mut g, "r5", c5, Some(-0.5), None);
    g.outputs = vec![s4, r5, c5];
    g
}

#[test]
fn fused_runs_give_the_bits_of_unfused_ones() {
    let g = graph();
    let mut xv = rand_f32(5 * 13 * 11, 11);
    for (i, v) in xv.iter_mut().enumerate() {
        match i % 37 {
            0 => *v = f32::NAN,
            1 => *v = f32::INFINITY,
            2 => *v = -3e38,
            3 => *v = 3e38,
            4 => *v = -0.0,
            _ => *v *= 8.0,
        }
    }
    let inputs = HashMap::from([("x".to_string(), Tensor::from_f32(vec![1, 5, 13, 11], xv))]);
    let s = Session::new(&g);
    let (mut nodes, mut nan, mut inf) = (0, false, false);
    let want = s
        .run_observed(&inputs, &mut |id, outs| {
            nodes += 1;
            // The first Conv's output reaches the special cases the Clip sees.
            if id.0 == 0 {
                let v = outs[0].as_f32().unwrap();
                nan = v.iter().any(|v| v.is_nan());
                inf = v.iter().any(|v| v.is_infinite());
            }
        })
        .unwrap();
    assert_eq!(nodes, g.nodes.len());
    assert!(nan && inf, "the inputs reach NaN and infinities");
    let bits = |t: &Tensor| {
        let v = t.as_f32().unwrap();
        v.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    };
    for _ in 0..2 {
        let got = s.run(&inputs).unwrap();
        for (a, b) in got.iter().zip(&want) {
            assert_eq!(bits(a), bits(b));
        }
    }
}
