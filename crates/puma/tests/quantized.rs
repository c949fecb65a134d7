//! Quantized models (QOperator, QDQ) run on PUMA as their float equivalents
//! (`pimkit_puma::dequant`, docs/puma.md "Quantized models").

use pimkit_ir::operand::{qlinear_conv as qc, quantize_linear as ql};
use pimkit_ir::{ConvAttrs, DType, Graph, Op, PoolKind, Tensor, TensorData, TensorType};
use pimkit_puma::dequant::float_equivalent;
use std::collections::HashMap;
use std::path::PathBuf;

fn t(shape: Vec<usize>, d: TensorData) -> Tensor {
    Tensor::new(shape, d).unwrap()
}

/// x → QuantizeLinear → QLinearConv (per-channel weights, int32 bias, Relu fused in the
/// output range) → QLinearGlobalAveragePool → QLinearAdd (a constant) → MaxPool-free
/// Reshape → DequantizeLinear: the ops a quantize_static CNN is made of.
fn tiny_qoperator() -> Graph {
    let mut g = Graph::new("tiny_q");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 2, 6, 6]));
    let xs = g.add_const("x_s", Tensor::scalar_f32(0.01));
    let xz = g.add_const("x_zp", t(vec![], TensorData::I8(vec![3])));
    let xq = g
        .op(
            "x_q",
            Op::QuantizeLinear {
                axis: 1,
                to: DType::I8,
            },
            &[x, xs, xz],
        )
        .unwrap();
    let w: Vec<i8> = (0..3 * 2 * 9).map(|i| ((i * 37 % 61) as i8) - 30).collect();
    let w = g.add_const("w_q", t(vec![3, 2, 3, 3], TensorData::I8(w)));
    let ws = g.add_const("w_s", Tensor::from_f32(vec![3], vec![0.004, 0.006, 0.003]));
    let wz = g.add_const("w_zp", t(vec![3], TensorData::I8(vec![0, 0, 0])));
    let ys = g.add_const("y_s", Tensor::scalar_f32(0.02));
    // Zero point at the minimum: the output range is [0, 255·0.02] (a fused Relu).
    let yz = g.add_const("y_zp", t(vec![], TensorData::I8(vec![-128])));
    let b = g.add_const("b_q", t(vec![3], TensorData::I32(vec![500, -800, 120])));
    let mut ins = vec![None; 9];
    for (i, v) in [
        (qc::X, xq),
        (qc::X_SCALE, xs),
        (qc::X_ZERO_POINT, xz),
        (qc::W, w),
        (qc::W_SCALE, ws),
        (qc::W_ZERO_POINT, wz),
        (qc::Y_SCALE, ys),
        (qc::Y_ZERO_POINT, yz),
        (qc::B, b),
    ] {
        ins[i] = Some(v);
    }
    let conv = Op::QLinearConv(ConvAttrs::simple(vec![3, 3], 1, 1, 1));
    let y = g.add_node("conv", conv, ins).unwrap()[0];
    let ps = g.add_const("p_s", Tensor::scalar_f32(0.01));
    let pz = g.add_const("p_zp", t(vec![], TensorData::I8(vec![-100])));
    let gap = Op::QLinearGlobalAveragePool {
        channels_last: false,
    };
    let p = g.op("gap", gap, &[y, ys, yz, ps, pz]).unwrap();
    let c = g.add_const(
        "c_q",
        t(vec![1, 3, 1, 1], TensorData::I8(vec![10, -20, 30])),
    );
    let cs = g.add_const("c_s", Tensor::scalar_f32(0.05));
    let cz = g.add_const("c_zp", t(vec![], TensorData::I8(vec![0])));
    let s = g
        .op("add", Op::QLinearAdd, &[p, ps, pz, c, cs, cz, ps, pz])
        .unwrap();
    let r = g
        .op("flat", Op::Reshape { shape: vec![1, 3] }, &[s])
        .unwrap();
    let mut dq = vec![None; 3];
    dq[ql::X] = Some(r);
    dq[ql::SCALE] = Some(ps);
    dq[ql::ZERO_POINT] = Some(pz);
    let out = g
        .add_node("out", Op::DequantizeLinear { axis: 1 }, dq)
        .unwrap()[0];
    g.outputs = vec![out];
    g
}

#[test]
fn float_equivalent_matches_the_quantized_graph_within_quantization_error() {
    let g = tiny_qoperator();
    let f = float_equivalent(&g)
        .unwrap()
        .expect("a quantized graph changes");
    assert!(f.quantized() && f.kept.is_empty(), "kept: {:?}", f.kept);
    let fg = &f.graph;
    assert!(
        fg.nodes
            .iter()
            .all(|n| !pimkit_puma::dequant::is_quantized_op(&n.op)),
        "{:?}",
        fg.nodes.iter().map(|n| n.op.name()).collect::<Vec<_>>()
    );
    // The convolution's weights and bias are float constants (crossbar weights).
    let conv = fg
        .nodes
        .iter()
        .find(|n| matches!(n.op, Op::Conv(_)))
        .unwrap();
    for i in [qc::X + 1, qc::X + 2] {
        let w = conv.input(i).unwrap();
        assert!(fg.is_const(w) && fg.ty(w).dtype == DType::F32);
    }
    assert!(
        fg.nodes
            .iter()
            .any(|n| matches!(n.op, Op::GlobalPool(PoolKind::Avg)))
    );
    assert_eq!(fg.value(fg.outputs[0]).name, "out");
    for seed in 0..4 {
        let ins = pimkit_interp::random_inputs(&g, seed);
        let q = pimkit_interp::with_exact_products(|| pimkit_interp::run(&g, &ins)).unwrap();
        let r = pimkit_interp::with_exact_products(|| pimkit_interp::run(fg, &ins)).unwrap();
        let (q, r) = (q[0].to_f32_vec(), r[0].to_f32_vec());
        // Each quantized stage rounds by half a step: x (0.005 through the conv),
        // the conv's output (0.01), the pool's (0.005), the sum's (0.005).
        for (a, b) in q.iter().zip(&r) {
            assert!(
                (a - b).abs() <= 0.03,
                "seed {seed}: quantized {q:?} float {r:?}"
            );
        }
        // Not trivially equal to zero: the comparison means something.
        assert!(q.iter().any(|v| v.abs() > 0.05), "{q:?}");
    }
}

#[test]
fn the_fused_relu_of_the_output_range_is_kept() {
    // Inputs that make the convolution negative: the quantized output saturates at 0.
    let g = tiny_qoperator();
    let f = float_equivalent(&g).unwrap().unwrap();
    assert!(f.graph.nodes.iter().any(|n| matches!(
        n.op,
        Op::Clip { min: Some(m), .. } if m == 0.0
    )));
}

#[test]
fn float_graphs_without_constant_nodes_are_unchanged() {
    let g = pimkit_zoo::build("puma_mlp_l4", &[]).unwrap();
    assert!(float_equivalent(&g).unwrap().is_none());
}

fn case(name: &str) -> (Graph, HashMap<String, Tensor>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/real-models")
        .join(name);
    let x = pimkit_ir::npy::read_npy(&dir.join("input_0.npy")).unwrap();
    let mut opts = pimkit_onnx::LoadOptions::default();
    let model = dir.join("model.onnx");
    let g0 = pimkit_onnx::load(&model).unwrap();
    let input = g0.value(g0.inputs[0]).name.clone();
    opts.input_shapes.insert(input.clone(), x.shape.clone());
    let g = pimkit_onnx::load_with(&model, &opts).unwrap();
    (g, HashMap::from([(input, x)]))
}

/// The committed onnxruntime quantize_static models: every QLinearConv is simulated
/// on PUMA's crossbars (as a Conv layer), with small errors against the float
/// equivalent, and the float equivalent is close to the quantized model.
fn per_layer_case(name: &str, max_rel: f64) {
    let (g, feeds) = case(name);
    let qconvs = g
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::QLinearConv(_)))
        .count();
    let r = pimkit_puma::run_per_layer(
        &g,
        &pimkit_puma::Arch::default(),
        &Default::default(),
        &Default::default(),
        Some(feeds.clone()),
    )
    .unwrap();
    assert!(r.cycles > 0 && r.energy_nj > 0.0);
    let conv_layers: Vec<_> = r
        .layers
        .iter()
        .filter(|l| l.name.contains("Conv") && l.mvmus > 0)
        .collect();
    assert!(
        conv_layers.len() >= qconvs,
        "{} of {qconvs} convolutions on crossbars",
        conv_layers.len()
    );
    assert!(
        r.layers.iter().all(|l| l.host_nodes.is_empty()),
        "{:?}",
        r.notes
    );
    assert!(r.notes[0].contains("float equivalent"), "{:?}", r.notes);
    for l in &r.layers {
        let rel = l.relative_error.unwrap();
        // ConvNeXt's LayerNormalization saturates PUMA's 16-bit words (as in the float
        // tv_convnext_ts case: not the dequantization's doing); never silently.
        if l.nodes.iter().any(|n| n.contains("LayerNormalization")) && rel > max_rel {
            assert!(
                r.warnings.iter().any(|w| w.contains(&l.name)),
                "{name}: {}",
                l.name
            );
            continue;
        }
        assert!(
            rel <= max_rel,
            "{name}: layer {} relative error {rel}",
            l.name
        );
    }
    let diff = r.quantized_model_max_abs_diff.unwrap();
    let q = pimkit_interp::with_exact_products(|| pimkit_interp::run(&g, &feeds)).unwrap();
    let range = q[0].to_f32_vec().iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
    assert!(
        diff <= 0.1 * range.max(1e-3),
        "{name}: float equivalent off by {diff} (range {range})"
    );
}

#[test]
fn quantized_squeezenet_runs_its_convolutions_on_crossbars() {
    per_layer_case("q_squeezenet1_1_s8_pt", 0.02);
}

#[test]
fn quantized_mobilenet_v2_runs_its_convolutions_on_crossbars() {
    per_layer_case("q_mobilenet_v2_u8_pc", 0.02);
}

#[test]
fn quantized_densenet_runs_its_convolutions_on_crossbars() {
    per_layer_case("q_densenet_s8_pt", 0.02);
}

#[test]
fn quantized_convnext_runs_its_convolutions_on_crossbars() {
    per_layer_case("q_convnext_u8_pc", 0.02);
}

#[test]
fn quantized_squeezenet_runs_whole() {
    let (g, feeds) = case("q_squeezenet1_1_u8_pc");
    let (r, outs, _) = pimkit_puma::run_graph(
        &g,
        &pimkit_puma::Arch::default(),
        &Default::default(),
        &Default::default(),
        Some(feeds),
    )
    .unwrap();
    assert!(r.stats.cycles > 0 && !outs.is_empty());
    assert!(r.relative_error.unwrap() <= 0.02, "{:?}", r.warnings);
    assert!(r.quantized_model_max_abs_diff.is_some());
    assert!(r.notes.iter().any(|n| n.contains("float equivalent")));
}

/// QDQ form: x → QuantizeLinear → DequantizeLinear → float Conv whose weight is a
/// DequantizeLinear of int8 constants: the weight folds into a float constant and
/// the activation pair into a clip to the quantized range.
#[test]
fn qdq_weights_fold_into_float_constants() {
    let mut g = Graph::new("tiny_qdq");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 2, 5, 5]));
    let s = g.add_const("s", Tensor::scalar_f32(0.02));
    let z = g.add_const("z", t(vec![], TensorData::U8(vec![128])));
    let q = g
        .op(
            "q",
            Op::QuantizeLinear {
                axis: 1,
                to: DType::U8,
            },
            &[x, s, z],
        )
        .unwrap();
    let dq = g
        .op("dq", Op::DequantizeLinear { axis: 1 }, &[q, s, z])
        .unwrap();
    let w: Vec<i8> = (0..4 * 2 * 9).map(|i| ((i * 29 % 51) as i8) - 25).collect();
    let w = g.add_const("w_q", t(vec![4, 2, 3, 3], TensorData::I8(w)));
    let ws = g.add_const(
        "w_s",
        Tensor::from_f32(vec![4], vec![0.01, 0.02, 0.015, 0.005]),
    );
    let wz = g.add_const("w_z", t(vec![4], TensorData::I8(vec![0; 4])));
    let wf = g
        .op("w_dq", Op::DequantizeLinear { axis: 0 }, &[w, ws, wz])
        .unwrap();
    let conv = Op::Conv(ConvAttrs::simple(vec![3, 3], 1, 1, 1));
    let y = g.op("conv", conv, &[dq, wf]).unwrap();
    g.outputs = vec![y];
    let f = float_equivalent(&g).unwrap().unwrap();
    let fg = &f.graph;
    let c = fg
        .nodes
        .iter()
        .find(|n| matches!(n.op, Op::Conv(_)))
        .unwrap();
    let wv = c.input(1).unwrap();
    assert!(fg.is_const(wv) && fg.ty(wv).dtype == DType::F32);
    assert!(
        fg.nodes
            .iter()
            .all(|n| !pimkit_puma::dequant::is_quantized_op(&n.op))
    );
    // Only the rounding of x to the 0.02 grid separates the two.
    let ins = pimkit_interp::random_inputs(&g, 1);
    let a = pimkit_interp::with_exact_products(|| pimkit_interp::run(&g, &ins)).unwrap()[0]
        .to_f32_vec();
    let b = pimkit_interp::with_exact_products(|| pimkit_interp::run(fg, &ins)).unwrap()[0]
        .to_f32_vec();
    // Half a step (0.01) × 18 taps × the largest |w| (25 · 0.02).
    let bound = 0.01 * 18.0 * 0.5 + 1e-5;
    for (p, q) in a.iter().zip(&b) {
        assert!((p - q).abs() <= bound, "{p} vs {q}");
    }
    assert!(a.iter().any(|v| v.abs() > 0.1));
}
