//! Quantized entries: the QOperator structure onnxruntime emits (op counts from
//! quinn.md §5.2), ORT's parameter rules, and outputs close to the float model's when both
//! run in the reference interpreter.

mod common;

use common::{count_ops, kv, with};
use pimkit_ir::{DType, Graph, Op};
use pimkit_zoo::build;
use pimkit_zoo::quantize;

/// Seed of the first calibration input set (entry seed 0 + 1000): inputs inside the
/// calibrated ranges, so differences are rounding, not saturation.
const CALIB0: u64 = 1000;

fn run(g: &Graph, seed: u64) -> Vec<f32> {
    let inputs = pimkit_interp::random_inputs(g, seed);
    pimkit_interp::with_exact_products(|| pimkit_interp::run(g, &inputs)).unwrap()[0].to_f32_vec()
}

/// max |a - b| relative to max |a|.
fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    let m = a.iter().fold(0f32, |m, x| m.max(x.abs())).max(1e-6);
    a.iter().zip(b).fold(0f32, |e, (x, y)| e.max((x - y).abs())) / m
}

fn small_net() -> Vec<(String, String)> {
    kv(&[("res", "32"), ("classes", "10"), ("calib", "2")])
}

#[test]
fn q_mobilenet_v2_structure() {
    let g = build("q_mobilenet_v2", &small_net()).unwrap();
    assert_eq!(count_ops(&g, "QuantizeLinear"), 1);
    assert_eq!(count_ops(&g, "QLinearConv"), 52);
    assert_eq!(count_ops(&g, "QLinearAdd"), 10);
    assert_eq!(count_ops(&g, "QLinearGlobalAveragePool"), 1);
    assert_eq!(count_ops(&g, "QGemm"), 1);
    assert_eq!(count_ops(&g, "DequantizeLinear"), 1);
    assert_eq!(
        count_ops(&g, "Clip"),
        0,
        "ReLU6 must fold into the conv output range"
    );
    let dw = g
        .nodes
        .iter()
        .filter(|n| matches!(&n.op, Op::QLinearConv(a) if a.group > 1))
        .count();
    assert_eq!(dw, 17);
}

#[test]
fn q_resnet18_structure() {
    let g = build("q_resnet18", &small_net()).unwrap();
    assert_eq!(count_ops(&g, "QLinearConv"), 20);
    assert_eq!(count_ops(&g, "QLinearAdd"), 8);
    assert_eq!(count_ops(&g, "Relu"), 0);
    let mp = g.nodes.iter().find(|n| n.op.name() == "MaxPool").unwrap();
    assert_eq!(g.ty(mp.outputs[0]).dtype, DType::U8, "MaxPool runs on u8");
    assert_eq!(count_ops(&g, "QGemm"), 1);
    assert_eq!(count_ops(&g, "QLinearGlobalAveragePool"), 1);
}

#[test]
fn q_squeezenet_and_mobilenet_v3_structure() {
    let g = build("q_squeezenet1_1", &small_net()).unwrap();
    assert_eq!(count_ops(&g, "QLinearConv"), 26);
    assert_eq!(count_ops(&g, "QLinearConcat"), 8);
    assert_eq!(count_ops(&g, "Relu"), 0);
    assert_eq!(count_ops(&g, "MaxPool"), 3);
    let g = build("q_mobilenet_v3_small", &small_net()).unwrap();
    assert_eq!(count_ops(&g, "QLinearConv"), 52);
    assert_eq!(count_ops(&g, "QLinearMul"), 9);
    assert_eq!(count_ops(&g, "QLinearAdd"), 6);
    assert_eq!(count_ops(&g, "QGemm"), 2);
    // No QLinear form in ORT: float between DequantizeLinear and QuantizeLinear.
    assert_eq!(count_ops(&g, "HardSwish"), 19);
    assert_eq!(count_ops(&g, "HardSigmoid"), 9);
    assert_eq!(count_ops(&g, "Relu"), 0);
}

/// Weights symmetric i8 in [-127, 127] with zero point 0; biases i32; activation zero
/// points make 0.0 exactly representable.
#[test]
fn ort_parameter_rules() {
    for (pc, act) in [("true", "u8"), ("false", "i8")] {
        let p = with(with(small_net(), "per_channel", pc), "act", act);
        let g = build("q_resnet18", &p).unwrap();
        let act_t = if act == "u8" { DType::U8 } else { DType::I8 };
        for n in &g.nodes {
            if let Op::QLinearConv(_) = n.op {
                let w = g.const_data(n.inputs[3].unwrap()).unwrap();
                assert!(w.as_i8().unwrap().iter().all(|&v| v >= -127));
                let wz = g.const_data(n.inputs[5].unwrap()).unwrap();
                assert!(wz.to_i32_vec().iter().all(|&z| z == 0));
                let ws = g.ty(n.inputs[4].unwrap());
                let cout = g.ty(n.outputs[0]).shape[1];
                assert_eq!(
                    ws.numel(),
                    if pc == "true" { cout } else { 1 },
                    "{}",
                    n.name
                );
                assert_eq!(g.ty(n.inputs[8].unwrap()).dtype, DType::I32);
                assert_eq!(g.ty(n.outputs[0]).dtype, act_t);
                // Bias = round(b / (x_scale * w_scale)): check against a re-derivation.
                let xs = g.const_data(n.inputs[1].unwrap()).unwrap().to_f32_vec()[0];
                let wsv = g.const_data(n.inputs[4].unwrap()).unwrap().to_f32_vec();
                let b = g.const_data(n.inputs[8].unwrap()).unwrap().to_i32_vec();
                assert!(wsv.iter().all(|s| *s > 0.0) && xs > 0.0);
                assert_eq!(b.len(), cout);
            }
            if let Op::QuantizeLinear { to, .. } = n.op {
                assert_eq!(to, act_t);
            }
        }
    }
    let (s, z) = quantize::activation_params(-1.0, 3.0, DType::U8);
    assert!((s - 4.0 / 255.0).abs() < 1e-9 && z == 64, "{s} {z}");
    let (s, z) = quantize::activation_params(0.5, 2.0, DType::U8);
    assert!(
        (s - 2.0 / 255.0).abs() < 1e-9 && z == 0,
        "range widened to include 0"
    );
    let (s, z) = quantize::activation_params(0.0, 2.55, DType::I8);
    assert!((s - 0.01).abs() < 1e-7 && z == -128);
    assert!((quantize::weight_scale(1.27) - 0.01).abs() < 1e-9);
    assert_eq!(
        quantize::quantize_weight_value(0.025, 0.01),
        2,
        "round half to even"
    );
    assert_eq!(quantize::quantize_weight_value(-2.0, 0.01), -127);
}

/// The weight quantizer's add-and-subtract rounding against its definition (ORT's
/// `np.clip(np.rint(w / scale), -127, 127)`): every tie between -130 and 130, the
/// values next to them, a sweep of fractions, and the non-finite weights.
#[test]
fn weight_rounding_is_round_half_even_then_clip() {
    let want = |w: f32, s: f32| (w / s).round_ties_even().clamp(-127.0, 127.0) as i8;
    let mut ws: Vec<f32> = (-260..=260).map(|i| i as f32 * 0.5).collect();
    let near: Vec<f32> = ws
        .iter()
        .flat_map(|&w| [w.next_down(), w.next_up()])
        .collect();
    ws.extend(near);
    ws.extend((0..20_000).map(|i| (i as f32 - 10_000.0) * 0.013_7));
    ws.extend([
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        -1e30,
        0.0,
        -0.0,
    ]);
    for s in [1.0f32, 0.01, 0.003_9, 7.5] {
        for &w in &ws {
            let w = w * s;
            assert_eq!(
                quantize::quantize_weight_value(w, s),
                want(w, s),
                "w {w} scale {s}"
            );
        }
    }
}

#[test]
fn kernels_match_float_closely() {
    for (name, p) in [
        ("qlinear_matmul", kv(&[("m", "7"), ("k", "33"), ("n", "9")])),
        (
            "qlinear_matmul",
            kv(&[
                ("m", "1"),
                ("k", "64"),
                ("n", "16"),
                ("per_channel", "true"),
                ("act", "i8"),
            ]),
        ),
        (
            "qlinear_conv",
            kv(&[
                ("c", "5"),
                ("k", "6"),
                ("h", "11"),
                ("w", "9"),
                ("stride", "2"),
                ("dilation", "2"),
                ("pad", "2"),
            ]),
        ),
        (
            "qlinear_conv",
            kv(&[
                ("c", "6"),
                ("k", "6"),
                ("h", "8"),
                ("w", "8"),
                ("group", "6"),
                ("per_channel", "true"),
            ]),
        ),
        (
            "qlinear_conv1d_causal",
            kv(&[
                ("c", "4"),
                ("k", "3"),
                ("l", "20"),
                ("kernel", "3"),
                ("dilation", "2"),
            ]),
        ),
    ] {
        let q = build(name, &p).unwrap();
        assert_eq!(count_ops(&q, "QuantizeLinear"), 1, "{name}");
        assert_eq!(count_ops(&q, "DequantizeLinear"), 1, "{name}");
        let f = pimkit_zoo::build_float(name, &p).unwrap();
        let e = rel_err(&run(&f, CALIB0), &run(&q, CALIB0));
        assert!(e < 0.05, "{name} {p:?}: relative error {e}");
    }
}

#[test]
fn quantized_nets_track_float() {
    for name in [
        "resnet18",
        "mobilenet_v2",
        "squeezenet1_1",
        "mobilenet_v3_small",
    ] {
        let q = build(&format!("q_{name}"), &small_net()).unwrap();
        let f = pimkit_zoo::build_float(&format!("q_{name}"), &small_net()).unwrap();
        // Relative to the largest logit: rounding only on a calibration input, plus
        // some saturation on a fresh one.
        let e = rel_err(&run(&f, CALIB0), &run(&q, CALIB0));
        assert!(e < 0.1, "{name}: {e} on a calibration input");
        let e = rel_err(&run(&f, 77), &run(&q, 77));
        assert!(e < 0.3, "{name}: {e} on a fresh input");
    }
}

/// The calibration run on worker threads gives the ranges of running the samples one
/// after another, on any thread count (min and max do not depend on order).
#[test]
fn parallel_calibration_gives_the_sequential_ranges() {
    let f = quantize::fold_batchnorm(&pimkit_zoo::build_float("q_resnet18", &small_net()).unwrap())
        .unwrap();
    let make = |i: usize| pimkit_interp::random_inputs(&f, CALIB0 + i as u64);
    let seq = quantize::calibrate_iter(&f, (0..5).map(make)).unwrap();
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let par = pool
            .install(|| quantize::calibrate_par(&f, 5, make))
            .unwrap();
        assert_eq!(par, seq, "{threads} threads");
    }
    assert!(seq.len() > 20, "every value has a range: {}", seq.len());
}
