//! Helpers shared by the zoo's integration tests.
#![allow(dead_code)]

use pimkit_ir::{Graph, Op, ValueDef};

pub fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Small but structurally complete parameters for every entry (fast to build and run).
pub fn small(name: &str) -> Vec<(String, String)> {
    let p: &[(&str, &str)] = match name {
        "depthwise_conv" => &[("n", "9"), ("c", "4")],
        "attention" => &[("n", "8"), ("d", "4")],
        "mlp" => &[("n", "8"), ("batch", "2")],
        "llama_decode" => &[
            ("hidden", "32"),
            ("heads", "4"),
            ("ffn", "48"),
            ("ctx", "5"),
        ],
        "gptj_decode" => &[
            ("hidden", "32"),
            ("heads", "2"),
            ("ffn", "64"),
            ("rotary", "8"),
            ("ctx", "5"),
        ],
        "puma_mlp_l4" | "puma_mlp_l5" | "lenet5" => &[],
        "puma_lstm" => &[
            ("input", "16"),
            ("hidden", "8"),
            ("out", "12"),
            ("seq", "3"),
        ],
        "vgg16" => &[("res", "32"), ("classes", "10")],
        "neurosim_vgg8" => &[("res", "8")],
        "resnet18" | "mobilenet_v2" | "mobilenet_v3_small" | "squeezenet1_1" => {
            &[("res", "32"), ("classes", "10")]
        }
        "rnc_resnet18" | "rnc_squeezenet1_1" | "rnc_mobilenet_v3_small" => &[("res", "32")],
        "q_resnet18" | "q_mobilenet_v2" | "q_mobilenet_v3_small" | "q_squeezenet1_1" => {
            &[("res", "32"), ("classes", "10"), ("calib", "2")]
        }
        "qlinear_matmul" => &[("m", "4"), ("k", "8"), ("n", "5")],
        "qlinear_conv" => &[("c", "4"), ("k", "6"), ("h", "9"), ("w", "7")],
        "qlinear_conv1d_causal" => &[("c", "3"), ("k", "5"), ("l", "16"), ("dilation", "2")],
        "llama2_7b" | "llama2_13b" | "llama2_70b" | "llama3_8b" | "gptj_6b" | "opt_30b"
        | "opt_66b" | "gpt3_175b" | "decoder" => &[
            ("layers", "2"),
            ("hidden", "32"),
            ("heads", "4"),
            ("kv_heads", "2"),
            ("ffn", "48"),
            ("vocab", "64"),
            ("seq", "3"),
            ("ctx", "5"),
        ],
        _ => &[("n", "8")],
    };
    kv(p)
}

pub fn with(mut p: Vec<(String, String)>, k: &str, v: &str) -> Vec<(String, String)> {
    p.retain(|(a, _)| a != k);
    p.push((k.to_string(), v.to_string()));
    p
}

pub fn count_ops(g: &Graph, name: &str) -> usize {
    g.nodes.iter().filter(|n| n.op.name() == name).count()
}

/// Weight layers in forward order: (name, weight shape, group) of every Conv / QLinearConv
/// and Gemm / QGemm / MatMul with a constant weight.
pub fn weight_layers(g: &Graph) -> Vec<(String, Vec<usize>, usize)> {
    let mut out = Vec::new();
    for n in &g.nodes {
        let (w, group) = match &n.op {
            Op::Conv(a) => (n.inputs[1], a.group),
            Op::QLinearConv(a) => (n.inputs[3], a.group),
            Op::Gemm { .. } | Op::MatMul => (n.inputs[1], 1),
            Op::QGemm { .. } | Op::QLinearMatMul => (n.inputs[3], 1),
            _ => continue,
        };
        let Some(w) = w else { continue };
        if matches!(g.value(w).def, ValueDef::Const(_)) {
            out.push((n.name.clone(), g.ty(w).shape.clone(), group));
        }
    }
    out
}
