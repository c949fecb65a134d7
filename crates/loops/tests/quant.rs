//! Quantized graphs: native execution is bit-exact with the reference interpreter
//! (integer accumulation, onnxruntime's requantization), and the nest counts per
//! quantized op follow docs/loops.md.

mod common;
use common::*;
use pimkit_ir::{Graph, Tensor};

/// Lower, run natively and require every output to equal the interpreter's exactly.
fn check_exact(g: &Graph, seed: u64) -> Result<(), String> {
    let p = pimkit_loops::lower(g).map_err(|e| format!("{}: lower: {e}", g.name))?;
    let inputs = pimkit_interp::random_inputs(g, seed);
    let ordered: Vec<Tensor> = g
        .inputs
        .iter()
        .map(|&v| inputs[&g.value(v).name].clone())
        .collect();
    let got =
        pimkit_loops::run(&p, &ordered, &opts()).map_err(|e| format!("{}: native: {e}", g.name))?;
    let want = pimkit_interp::with_exact_products(|| pimkit_interp::run(g, &inputs))
        .map_err(|e| format!("{}: interp: {e}", g.name))?;
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        if a.shape != b.shape || a.dtype() != b.dtype() {
            return Err(format!("{} output {i}: type differs", g.name));
        }
        let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
        if let Some(k) = (0..x.len()).find(|&k| x[k].to_bits() != y[k].to_bits()) {
            let n = (0..x.len())
                .filter(|&k| x[k].to_bits() != y[k].to_bits())
                .count();
            return Err(format!(
                "{} output {i}: {n} of {} elements differ; first at {k}: native {}, interpreter {}",
                g.name,
                x.len(),
                x[k],
                y[k]
            ));
        }
    }
    Ok(())
}

fn run_exact(cases: &[(&str, Vec<(&str, &str)>)]) {
    let mut bad = vec![];
    for (name, params) in cases {
        let g = zoo(name, params);
        for seed in [3, 11] {
            if let Err(e) = check_exact(&g, seed) {
                bad.push(e);
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn quantized_kernels_are_bit_exact() {
    run_exact(&[
        ("qlinear_matmul", vec![("m", "5"), ("k", "33"), ("n", "7")]),
        (
            "qlinear_matmul",
            vec![("m", "1"), ("k", "16"), ("n", "9"), ("act", "i8")],
        ),
        (
            "qlinear_conv",
            vec![("c", "4"), ("k", "6"), ("h", "9"), ("w", "7")],
        ),
        (
            "qlinear_conv",
            vec![
                ("c", "6"),
                ("k", "6"),
                ("h", "8"),
                ("w", "8"),
                ("group", "6"),
                ("stride", "2"),
                ("per_channel", "true"),
            ],
        ),
        (
            "qlinear_conv",
            vec![
                ("c", "4"),
                ("k", "8"),
                ("h", "7"),
                ("w", "7"),
                ("group", "2"),
                ("dilation", "2"),
                ("pad", "2"),
                ("act", "i8"),
            ],
        ),
        (
            "qlinear_conv1d_causal",
            vec![("c", "4"), ("k", "4"), ("l", "20"), ("kernel", "3")],
        ),
        (
            "qlinear_conv1d_causal",
            vec![("c", "3"), ("k", "5"), ("l", "17"), ("dilation", "2")],
        ),
    ]);
}

#[test]
fn quantized_vision_nets_are_bit_exact() {
    run_exact(&[
        ("q_mobilenet_v2", vec![("res", "32")]),
        ("q_resnet18", vec![("res", "32")]),
    ]);
}

#[test]
fn quantized_nest_counts() {
    let g = zoo("qlinear_matmul", &[("m", "4"), ("k", "8"), ("n", "4")]);
    let p = pimkit_loops::lower(&g).unwrap();
    let per_op = p.nests_per_op();
    let count = |op: &str| per_op.iter().find(|e| e.0 == op).map_or(0, |e| e.1);
    assert_eq!(count("QLinearMatMul"), 3, "{per_op:?}");
    assert_eq!(count("QuantizeLinear"), 1, "{per_op:?}");
    assert_eq!(count("DequantizeLinear"), 1, "{per_op:?}");
    // pad + bias copy + conv + requant.
    let g = zoo(
        "qlinear_conv",
        &[("c", "4"), ("k", "4"), ("h", "6"), ("w", "6")],
    );
    let p = pimkit_loops::lower(&g).unwrap();
    let per_op = p.nests_per_op();
    let count = |op: &str| per_op.iter().find(|e| e.0 == op).map_or(0, |e| e.1);
    assert_eq!(count("QLinearConv"), 4, "{per_op:?}");
    let kinds: Vec<&str> = p
        .nests
        .iter()
        .filter(|n| n.op == "QLinearConv")
        .map(|n| n.label.as_str())
        .collect();
    assert_eq!(kinds, ["pad", "bias", "conv", "requant"]);
}

#[test]
fn shape_only_quantized_nets_lower() {
    for name in ["q_mobilenet_v2", "q_resnet18", "q_squeezenet1_1"] {
        let g = zoo(name, &[("res", "32"), ("weights", "none")]);
        let p = pimkit_loops::lower(&g).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(p.stats().iter().all(|s| s.n_total > 0), "{name}");
    }
}
