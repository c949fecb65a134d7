//! LSTM / GRU unrolled over the sequence: native execution matches the interpreter
//! (float tolerance of tests/common).

mod common;
use common::*;
use pimkit_ir::{DType, Graph, Op, RnnAttrs, RnnDirection, Tensor, TensorType};

#[test]
fn puma_lstm_matches_interpreter() {
    for params in [
        vec![("input", "12"), ("hidden", "8"), ("out", "5")],
        vec![
            ("input", "6"),
            ("hidden", "5"),
            ("out", "3"),
            ("seq", "3"),
            ("batch", "2"),
        ],
    ] {
        let g = zoo("puma_lstm", &params);
        check_graph(&g, 5).unwrap();
    }
}

fn rand(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let v = (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed * 977)
                % 1000;
            v as f32 / 1000.0 - 0.5
        })
        .collect()
}

/// One recurrent node with constant weights; X (and the initial state) are inputs.
fn rnn_graph(gru: bool, dir: RnnDirection, lbr: bool, batch_first: bool) -> Graph {
    let (seq, batch, inp, hid) = (3, 2, 4, 3);
    let gates = if gru { 3 } else { 4 };
    let dirs = dir.num_directions();
    let mut g = Graph::new(if gru { "gru" } else { "lstm" });
    let xs = if batch_first {
        vec![batch, seq, inp]
    } else {
        vec![seq, batch, inp]
    };
    let x = g.add_input("x", TensorType::new(DType::F32, xs));
    let hs = if batch_first {
        vec![batch, dirs, hid]
    } else {
        vec![dirs, batch, hid]
    };
    let h0 = g.add_input("h0", TensorType::new(DType::F32, hs));
    let c = |g: &mut Graph, name: &str, shape: Vec<usize>, seed| {
        let n = shape.iter().product();
        g.add_const(name, Tensor::from_f32(shape, rand(n, seed)))
    };
    let w = c(&mut g, "w", vec![dirs, gates * hid, inp], 1);
    let r = c(&mut g, "r", vec![dirs, gates * hid, hid], 2);
    let b = c(&mut g, "b", vec![dirs, 2 * gates * hid], 3);
    let attrs = RnnAttrs {
        hidden_size: hid,
        direction: dir,
        linear_before_reset: lbr,
        batch_first,
    };
    let op = if gru { Op::Gru(attrs) } else { Op::Lstm(attrs) };
    let outs = g
        .add_node(
            "rnn",
            op,
            vec![Some(x), Some(w), Some(r), Some(b), None, Some(h0)],
        )
        .unwrap();
    g.outputs = outs;
    g
}

#[test]
fn gru_and_lstm_variants_match_interpreter() {
    let mut bad = vec![];
    for gru in [false, true] {
        for dir in [
            RnnDirection::Forward,
            RnnDirection::Reverse,
            RnnDirection::Bidirectional,
        ] {
            for (lbr, bf) in [(false, false), (true, false), (true, true)] {
                let g = rnn_graph(gru, dir, lbr, bf);
                if let Err(e) = check_graph(&g, 9) {
                    bad.push(format!("gru {gru} {dir:?} lbr {lbr} batch_first {bf}: {e}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
