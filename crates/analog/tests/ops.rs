//! Every weighted op and operand layout: integer ops equal the interpreter exactly through a
//! lossless crossbar; float ops (their crossbar error re-entering the interpreter's result)
//! stay within the 16-bit quantization of a fine crossbar, including LSTM/GRU whose cell
//! runs step by step with the error in its biases.

mod common;

use common::plan;
use pimkit_analog::network::Network;
use pimkit_analog::rng::Stream;
use pimkit_analog::study::Study;
use pimkit_analog::{Config, Geometry};
use pimkit_ir::{ConvAttrs, DType, Graph, Op, RnnAttrs, RnnDirection, Tensor, TensorType, ValueId};

fn f32s(n: usize, seed: u64) -> Vec<f32> {
    let mut r = Stream::new(seed);
    (0..n).map(|_| (r.uniform() * 2.0 - 1.0) as f32).collect()
}

fn i8s(n: usize, seed: u64) -> Vec<i8> {
    let mut r = Stream::new(seed);
    (0..n)
        .map(|_| (r.uniform() * 255.0 - 127.0) as i8)
        .collect()
}

fn konst(g: &mut Graph, name: &str, t: Tensor) -> ValueId {
    g.add_const(name, t)
}

/// A lossless crossbar: 16-bit weights and inputs, a 24-bit ADC resolving every level of
/// 1-bit-DAC x 8-bit-cell partial sums (so the model runs, but exactly).
fn fine() -> Config {
    let mut c = Config::ideal(Geometry {
        rows: 64,
        weight_bits: 16,
        cell_bits: 8,
        input_bits: 16,
        dac_bits: 1,
        differential: true,
    });
    c.analog.adc_bits = 24;
    c
}

/// Largest relative output error of `g` under `cfg` against the interpreter (one input).
fn rel_err(g: &Graph, cfg: &Config) -> f64 {
    let net = Network::new(g, plan(g, cfg.geom.rows, 7), cfg.geom.clone()).unwrap();
    assert!(!net.layers.is_empty());
    let input = pimkit_interp::random_inputs(g, 3);
    let mut st = Study::new(net, vec![input], None).unwrap();
    let r = st.run(&[(vec![], cfg.clone())], 1, 1, &|| {}).unwrap();
    r[0].rel_error.max
}

fn finish(mut g: Graph, out: ValueId) -> Graph {
    g.outputs.push(out);
    pimkit_ir::verify(&g).unwrap();
    g
}

fn gemm(ta: bool, tb: bool, left: bool) -> Graph {
    let (m, k, n) = (5, 70, 9);
    let mut g = Graph::new("gemm");
    let sa = if ta { vec![k, m] } else { vec![m, k] };
    let sb = if tb { vec![n, k] } else { vec![k, n] };
    let (a, b) = if left {
        let a = konst(&mut g, "w", Tensor::from_f32(sa, f32s(m * k, 1)));
        (a, g.add_input("x", TensorType::new(DType::F32, sb)))
    } else {
        let a = g.add_input("x", TensorType::new(DType::F32, sa));
        (a, konst(&mut g, "w", Tensor::from_f32(sb, f32s(k * n, 2))))
    };
    let c = konst(&mut g, "c", Tensor::from_f32(vec![n], f32s(n, 3)));
    let y = g
        .op(
            "gemm",
            Op::Gemm {
                alpha: 0.7,
                beta: 1.3,
                trans_a: ta,
                trans_b: tb,
            },
            &[a, b, c],
        )
        .unwrap();
    finish(g, y)
}

/// `adc_bits = 0` is "no ADC quantization", not "no crossbar": the weights and float
/// inputs are still quantized, so the point equals a lossless ADC (one level per code)
/// and sits on the DAC + weight floor, not on the reference.
#[test]
fn no_adc_keeps_the_dac_and_weight_floor() {
    let g = gemm(false, false, false);
    let mut coarse = fine();
    coarse.geom.weight_bits = 4;
    coarse.geom.input_bits = 4;
    let lossless = rel_err(&g, &coarse);
    coarse.analog.adc_bits = 0;
    let no_adc = rel_err(&g, &coarse);
    assert!(
        no_adc > 1e-3,
        "4-bit weights and inputs must show: {no_adc}"
    );
    assert_eq!(no_adc, lossless);
    assert_eq!(rel_err(&g, &Config::exact(coarse.geom)), 0.0);
}

#[test]
fn float_products_every_layout() {
    for ta in [false, true] {
        for tb in [false, true] {
            for left in [false, true] {
                let g = gemm(ta, tb, left);
                assert_eq!(rel_err(&g, &Config::exact(fine().geom)), 0.0);
                let e = rel_err(&g, &fine());
                assert!(e > 0.0 && e < 1e-3, "gemm ta {ta} tb {tb} left {left}: {e}");
            }
        }
    }
    // Batched MatMul with the weight on either side.
    for left in [false, true] {
        let mut g = Graph::new("mm");
        let (a, b) = if left {
            let w = konst(&mut g, "w", Tensor::from_f32(vec![6, 40], f32s(240, 4)));
            (
                w,
                g.add_input("x", TensorType::new(DType::F32, vec![2, 3, 40, 5])),
            )
        } else {
            let x = g.add_input("x", TensorType::new(DType::F32, vec![2, 3, 40]));
            (
                x,
                konst(&mut g, "w", Tensor::from_f32(vec![40, 6], f32s(240, 5))),
            )
        };
        let y = g.op("mm", Op::MatMul, &[a, b]).unwrap();
        let g = finish(g, y);
        let e = rel_err(&g, &fine());
        assert!(e > 0.0 && e < 1e-3, "matmul left {left}: {e}");
    }
}

#[test]
fn float_convolutions_in_one_two_and_three_dimensions() {
    for (spatial, kernel, group) in [
        (vec![30], vec![5], 1),
        (vec![9, 11], vec![3, 2], 2),
        (vec![5, 6, 4], vec![2, 3, 2], 1),
        (vec![8, 8], vec![3, 3], 4),
    ] {
        let r = spatial.len();
        let (c, m) = (4, if group == 4 { 4 } else { 6 });
        let mut g = Graph::new("conv");
        let mut xs = vec![2, c];
        xs.extend(&spatial);
        let x = g.add_input("x", TensorType::new(DType::F32, xs));
        let mut ws = vec![m, c / group];
        ws.extend(&kernel);
        let nw: usize = ws.iter().product();
        let w = konst(&mut g, "w", Tensor::from_f32(ws, f32s(nw, 6)));
        let b = konst(&mut g, "b", Tensor::from_f32(vec![m], f32s(m, 7)));
        let mut pads = vec![1; r];
        pads.extend(vec![0; r]);
        let a = ConvAttrs {
            kernel: kernel.clone(),
            strides: (0..r).map(|i| 1 + i % 2).collect(),
            pads,
            dilations: (0..r).map(|i| 1 + (i + 1) % 2).collect(),
            group,
        };
        let y = g.op("conv", Op::Conv(a), &[x, w, b]).unwrap();
        let g = finish(g, y);
        let e = rel_err(&g, &fine());
        assert!(e > 0.0 && e < 1e-3, "conv {spatial:?}: {e}");
    }
}

#[test]
fn integer_ops_are_exact_through_a_lossless_crossbar() {
    let mut cfg = fine();
    cfg.geom.weight_bits = 8;
    cfg.geom.input_bits = 8;
    let check = |g: Graph| {
        assert_eq!(rel_err(&g, &cfg), 0.0, "{}", g.name);
        // A lossy ADC changes the result (the crossbar is really in the loop).
        let mut lossy = cfg.clone();
        lossy.analog.adc_bits = 3;
        assert!(rel_err(&g, &lossy) > 0.0, "{}", g.name);
    };
    // ConvInteger, grouped, u8 input with zero point, per-channel weight zero points.
    let mut g = Graph::new("convint");
    let x = g.add_input("x", TensorType::new(DType::U8, vec![1, 4, 7, 7]));
    let w = konst(&mut g, "w", Tensor::from_i8(vec![6, 2, 3, 3], i8s(108, 8)));
    let xz = konst(&mut g, "xz", Tensor::from_u8(vec![], vec![9]));
    let wz = konst(
        &mut g,
        "wz",
        Tensor::from_i8(vec![6], vec![0, 1, -2, 0, 3, 0]),
    );
    let y = g
        .op(
            "ci",
            Op::ConvInteger(ConvAttrs::simple(vec![3, 3], 2, 1, 2)),
            &[x, w, xz, wz],
        )
        .unwrap();
    check(finish(g, y));
    // MatMulInteger with the weight on each side, i8 activations.
    for left in [false, true] {
        let mut g = Graph::new(if left { "mmi-left" } else { "mmi-right" });
        let (a, b) = if left {
            let w = konst(&mut g, "w", Tensor::from_i8(vec![5, 30], i8s(150, 9)));
            (
                w,
                g.add_input("x", TensorType::new(DType::I8, vec![2, 30, 3])),
            )
        } else {
            let x = g.add_input("x", TensorType::new(DType::I8, vec![4, 30]));
            (
                x,
                konst(&mut g, "w", Tensor::from_i8(vec![30, 5], i8s(150, 10))),
            )
        };
        let az = konst(&mut g, "az", Tensor::from_i8(vec![], vec![-3]));
        let bz = konst(&mut g, "bz", Tensor::from_i8(vec![], vec![2]));
        let y = g.op("mmi", Op::MatMulInteger, &[a, b, az, bz]).unwrap();
        check(finish(g, y));
    }
    // QLinearMatMul with the weight on each side, per-output weight scales.
    for left in [false, true] {
        let mut g = Graph::new(if left { "qlmm-left" } else { "qlmm-right" });
        let act = g.add_input(
            "x",
            TensorType::new(DType::U8, if left { vec![30, 3] } else { vec![4, 30] }),
        );
        let wt = konst(
            &mut g,
            "w",
            Tensor::from_i8(if left { vec![5, 30] } else { vec![30, 5] }, i8s(150, 11)),
        );
        let xs = konst(&mut g, "xs", Tensor::from_f32(vec![], vec![0.02]));
        let xz = konst(&mut g, "xz", Tensor::from_u8(vec![], vec![128]));
        // Per output: a column of B's scale on the right, a row of A's ([5, 1]) on the left.
        let wsv = vec![0.01, 0.02, 0.015, 0.03, 0.01];
        let ws = konst(
            &mut g,
            "ws",
            Tensor::from_f32(if left { vec![5, 1] } else { vec![5] }, wsv),
        );
        let wz = konst(&mut g, "wz", Tensor::from_i8(vec![], vec![0]));
        let ys = konst(&mut g, "ys", Tensor::from_f32(vec![], vec![0.05]));
        let yz = konst(&mut g, "yz", Tensor::from_u8(vec![], vec![100]));
        let ins = if left {
            [wt, ws, wz, act, xs, xz, ys, yz]
        } else {
            [act, xs, xz, wt, ws, wz, ys, yz]
        };
        match g.op("qlmm", Op::QLinearMatMul, &ins) {
            Ok(y) => check(finish(g, y)),
            Err(e) => panic!("{e}"),
        }
    }
    // QGemm with transB, int32 C, with and without a y_scale.
    for quant_out in [true, false] {
        let mut g = Graph::new("qgemm");
        let x = g.add_input("x", TensorType::new(DType::U8, vec![3, 40]));
        let xs = konst(&mut g, "xs", Tensor::from_f32(vec![], vec![0.02]));
        let xz = konst(&mut g, "xz", Tensor::from_u8(vec![], vec![120]));
        let w = konst(&mut g, "w", Tensor::from_i8(vec![7, 40], i8s(280, 12)));
        let ws = konst(&mut g, "ws", Tensor::from_f32(vec![7], vec![0.01; 7]));
        let wz = konst(&mut g, "wz", Tensor::from_i8(vec![], vec![0]));
        let c = konst(
            &mut g,
            "c",
            Tensor::from_i32(vec![7], (0..7).map(|i| i * 100 - 300).collect()),
        );
        let mut ins = vec![
            Some(x),
            Some(xs),
            Some(xz),
            Some(w),
            Some(ws),
            Some(wz),
            Some(c),
        ];
        if quant_out {
            ins.push(Some(konst(
                &mut g,
                "ys",
                Tensor::from_f32(vec![], vec![0.3]),
            )));
            ins.push(Some(konst(
                &mut g,
                "yz",
                Tensor::from_u8(vec![], vec![128]),
            )));
        }
        let y = g
            .add_node(
                "qg",
                Op::QGemm {
                    alpha: 0.9,
                    trans_a: false,
                    trans_b: true,
                },
                ins,
            )
            .unwrap()[0];
        check(finish(g, y));
    }
}

fn rnn(lstm: bool, dir: RnnDirection, lbr: bool, bf: bool) -> Graph {
    let (seq, batch, feat, h) = (4, 2, 12, 6);
    let dirs = dir.num_directions();
    let gates = if lstm { 4 } else { 3 };
    let mut g = Graph::new("rnn");
    let xs = if bf {
        vec![batch, seq, feat]
    } else {
        vec![seq, batch, feat]
    };
    let x = g.add_input("x", TensorType::new(DType::F32, xs));
    let w = konst(
        &mut g,
        "w",
        Tensor::from_f32(
            vec![dirs, gates * h, feat],
            f32s(dirs * gates * h * feat, 13),
        ),
    );
    let r = konst(
        &mut g,
        "r",
        Tensor::from_f32(vec![dirs, gates * h, h], f32s(dirs * gates * h * h, 14)),
    );
    let b = konst(
        &mut g,
        "b",
        Tensor::from_f32(vec![dirs, 2 * gates * h], f32s(dirs * 2 * gates * h, 15)),
    );
    let hs = if bf {
        vec![batch, dirs, h]
    } else {
        vec![dirs, batch, h]
    };
    let h0 = konst(
        &mut g,
        "h0",
        Tensor::from_f32(hs.clone(), f32s(dirs * batch * h, 16)),
    );
    let a = RnnAttrs {
        hidden_size: h,
        direction: dir,
        linear_before_reset: lbr,
        batch_first: bf,
    };
    let mut ins = vec![Some(x), Some(w), Some(r), Some(b), None, Some(h0)];
    let op = if lstm {
        ins.push(Some(konst(
            &mut g,
            "c0",
            Tensor::from_f32(hs, f32s(dirs * batch * h, 17)),
        )));
        Op::Lstm(a)
    } else {
        Op::Gru(a)
    };
    let outs = g.add_node("rnn", op, ins).unwrap();
    for &o in &outs {
        g.outputs.push(o);
    }
    pimkit_ir::verify(&g).unwrap();
    g
}

#[test]
fn recurrent_cells_step_with_their_errors_in_the_biases() {
    for (lstm, dir, lbr, bf) in [
        (true, RnnDirection::Forward, false, false),
        (true, RnnDirection::Bidirectional, false, true),
        (false, RnnDirection::Reverse, true, false),
        (false, RnnDirection::Bidirectional, true, true),
        (false, RnnDirection::Forward, false, false),
    ] {
        let g = rnn(lstm, dir, lbr, bf);
        assert_eq!(rel_err(&g, &Config::exact(fine().geom)), 0.0);
        let e = rel_err(&g, &fine());
        assert!(
            e > 0.0 && e < 1e-3,
            "lstm {lstm} {dir:?} lbr {lbr} batch_first {bf}: {e}"
        );
    }
}
