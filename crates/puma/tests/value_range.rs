//! Issue #17 (b): the ONNX "light" models (all weights 0.02) reported per-layer errors
//! of up to 2·10^20. Their activations grow by ≈ 0.02·fan-in per layer, to 10^9–10^20,
//! beyond ±32767, the largest 16-bit word at 0 fraction bits: the error is genuine and
//! must be named as such. And an (almost) constant output made the relative error
//! divide by a near-zero range.

mod common;

use pimkit_ir::{BinaryOp, DType, Graph, Op, Tensor, TensorType, UnaryOp};
use pimkit_puma::{Arch, CompileOptions, SimOptions, run_graph, run_per_layer};
use std::collections::HashMap;

/// x[1, 128] → three 128×128 Gemms of constant weights `w` and ReLUs: the values grow
/// by 128·w per layer, as in the light models.
fn constant_mlp(w: f32) -> Graph {
    let mut g = Graph::new("constant_mlp");
    let mut x = g.add_input("x", TensorType::new(DType::F32, vec![1, 128]));
    for l in 0..3 {
        let wv = g.add_const(
            format!("w{l}"),
            Tensor::from_f32(vec![128, 128], vec![w; 128 * 128]),
        );
        let y = g
            .op(
                format!("fc{l}"),
                Op::Gemm {
                    alpha: 1.0,
                    beta: 1.0,
                    trans_a: false,
                    trans_b: false,
                },
                &[x, wv],
            )
            .unwrap();
        x = g
            .op(format!("relu{l}"), Op::Unary(UnaryOp::Relu), &[y])
            .unwrap();
    }
    g.outputs.push(x);
    g
}

fn ones() -> HashMap<String, Tensor> {
    HashMap::from([(
        "x".to_string(),
        Tensor::from_f32(
            vec![1, 128],
            (0..128).map(|i| 0.5 + i as f32 / 256.0).collect(),
        ),
    )])
}

/// Values of 2·10^6 (fc2) cannot be held by any 16-bit format: the run names the node,
/// says the error is genuine, and the relative error is that of a saturated word
/// (≈ 1 − 32767/2·10^6), not an astronomical number.
#[test]
fn values_beyond_any_16_bit_format_are_named_as_genuine() {
    let g = constant_mlp(1.0);
    let (res, _, p) = run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        Some(ones()),
    )
    .unwrap();
    let names: Vec<&str> = p
        .placement
        .out_of_range
        .iter()
        .map(|o| o.node.as_str())
        .collect();
    assert!(names.contains(&"fc2"), "{names:?}");
    assert!(
        !names.contains(&"fc0") && !names.contains(&"fc1"),
        "{names:?}"
    );
    assert!(p.placement.out_of_range[0].max_abs > 1e6);
    assert!(
        res.warnings
            .iter()
            .any(|w| w.contains("beyond ±32767") && w.contains("`fc2`") && w.contains("genuine")),
        "{:?}",
        res.warnings
    );
    let rel = res.relative_error.unwrap();
    assert!(rel > 0.9 && rel <= 1.0, "{rel}");
    assert!(res.accuracy_warning);

    // Per layer: only the layer of fc2 is out of range; the others pass quietly.
    let r = run_per_layer(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        Some(ones()),
    )
    .unwrap();
    for l in &r.layers {
        let out = !l.out_of_range.is_empty();
        assert_eq!(out, l.name == "fc2", "{l:?}");
        let rel = l.relative_error.unwrap();
        if out {
            assert!(rel > 0.9 && rel <= 1.0, "{l:?}");
        } else {
            assert!(rel < 0.01 && l.saturations == 0, "{l:?}");
        }
    }
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("layer `fc2`") && w.contains("beyond ±32767")),
        "{:?}",
        r.warnings
    );
    assert!(
        !r.warnings
            .iter()
            .any(|w| w.contains("`fc0`") || w.contains("`fc1`")),
        "{:?}",
        r.warnings
    );

    // Small enough weights stay in range: nothing is flagged.
    let (res, _, p) = run_graph(
        &constant_mlp(0.02),
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        Some(ones()),
    )
    .unwrap();
    assert!(p.placement.out_of_range.is_empty());
    assert!(!res.accuracy_warning, "{:?}", res.warnings);
}

/// An output of `1 + small` (the light AlexNet's LRN denominator `bias + α·mean(x²)`)
/// has a range far below its magnitude: its rounding error (≈ 2^-15 of 1) was reported
/// as 30–100 % of the range. It is now relative to the range together with 0.
#[test]
fn nearly_constant_outputs_do_not_inflate_the_relative_error() {
    let mut g = Graph::new("offset");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 64]));
    let a = g.add_const("a", Tensor::from_f32(vec![1], vec![1e-4]));
    let one = g.add_const("one", Tensor::from_f32(vec![1], vec![1.0]));
    let s = g.op("scale", Op::Binary(BinaryOp::Mul), &[x, a]).unwrap();
    let y = g
        .op("offset", Op::Binary(BinaryOp::Add), &[s, one])
        .unwrap();
    g.outputs.push(y);
    let (res, _, _) = run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    let (e, rel) = (res.max_abs_error.unwrap(), res.relative_error.unwrap());
    assert!(e > 0.0 && e < 1e-4, "{e}");
    assert!(
        (rel - e / 1.0001).abs() < 1e-6 * e.max(1e-9) + 1e-6,
        "{rel} vs {e}"
    );
    assert!(!res.accuracy_warning, "{:?}", res.warnings);
}
