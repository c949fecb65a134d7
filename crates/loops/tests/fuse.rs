//! Elementwise fusion (`LowerOptions::fuse_elementwise`): fused programs compute what the
//! interpreter computes, and the nest counts drop where MLIR's pass would fuse.

mod common;
use common::*;
use pimkit_loops::{LowerOptions, TensorDef, lower_with};

const FUSE: LowerOptions = LowerOptions {
    fuse_elementwise: true,
};

fn count(name: &str, params: &[(&str, &str)], o: &LowerOptions) -> usize {
    lower_with(&zoo(name, params), o).unwrap().nests.len()
}

#[test]
fn fused_programs_match_interpreter() {
    let mut bad = vec![];
    let torch_pim = [
        "silu",
        "gelu",
        "softmax",
        "layernorm",
        "rmsnorm",
        "mac",
        "attention",
        "mlp",
    ];
    let mut cases: Vec<(&str, Vec<(&str, &str)>)> =
        torch_pim.iter().map(|n| (*n, vec![("n", "24")])).collect();
    cases.push((
        "llama_decode",
        vec![
            ("hidden", "64"),
            ("heads", "4"),
            ("ffn", "96"),
            ("ctx", "7"),
        ],
    ));
    cases.push(("mobilenet_v3_small", vec![("res", "32")]));
    cases.push(("puma_lstm", vec![]));
    for (name, params) in &cases {
        if let Err(e) = check_lowered(&zoo(name, params), 3, &FUSE) {
            bad.push(e);
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn silu_fuses_to_one_nest_and_its_intermediate_is_never_stored() {
    let n = [("n", "16")];
    assert_eq!(count("silu", &n, &LowerOptions::default()), 2);
    let p = lower_with(&zoo("silu", &n), &FUSE).unwrap();
    assert_eq!(p.nests.len(), 1);
    assert_eq!(p.nests[0].label, "sigmoid+mul");
    let fused: Vec<_> = p
        .tensors
        .iter()
        .filter(|t| matches!(t.def, TensorDef::Fused { into: 0 }))
        .collect();
    assert_eq!(fused.len(), 1);
    assert!(fused[0].alloc.is_none(), "a fused tensor gets no buffer");
    // x and the output: no buffer for the sigmoid.
    assert_eq!(p.allocs.len(), 2);
}

/// mlir-opt's count (torch-pim.md §2.1): 8 unfused, 6 with the pass (sub+exp fused, the
/// unused argmax output and its fill dropped).
#[test]
fn softmax_fuses_to_six_nests_as_mlir_opt() {
    let n = [("n", "16")];
    assert_eq!(count("softmax", &n, &LowerOptions::default()), 8);
    let p = lower_with(&zoo("softmax", &n), &FUSE).unwrap();
    let labels: Vec<&str> = p.nests.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(
        labels,
        ["max.init", "max", "sub+exp", "sum.init", "sum", "div"],
        "{labels:?}"
    );
    assert_eq!(p.nests[1].stores.len(), 1, "the argmax store is gone");
    assert!(p.tensors.iter().any(|t| matches!(t.def, TensorDef::Dead)));
    // Graph outputs and shared results are never fused away.
    assert_eq!(count("ew_add", &n, &FUSE), 1);
}
