//! Native execution equals the reference interpreter for every zoo entry this engine
//! covers (small sizes) and for random shapes.

mod common;
use common::*;

fn run_all(cases: &[(&str, Vec<(&str, &str)>)]) {
    let mut bad = vec![];
    for (name, params) in cases {
        let g = zoo(name, params);
        if let Err(e) = check_graph(&g, 7) {
            bad.push(e);
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn torch_pim_suite_matches_interpreter() {
    let names = [
        "ew_add",
        "copying",
        "scale",
        "zeroing",
        "relu",
        "silu",
        "gelu",
        "tanh",
        "softmax",
        "layernorm",
        "rmsnorm",
        "mac",
        "gemv",
        "matmul",
        "attention",
        "mlp",
    ];
    let cases: Vec<(&str, Vec<(&str, &str)>)> =
        names.iter().map(|n| (*n, vec![("n", "24")])).collect();
    run_all(&cases);
    run_all(&[("depthwise_conv", vec![("n", "12"), ("c", "5")])]);
}

#[test]
fn decode_layers_match_interpreter() {
    run_all(&[
        (
            "llama_decode",
            vec![
                ("hidden", "64"),
                ("heads", "4"),
                ("ffn", "96"),
                ("ctx", "7"),
            ],
        ),
        (
            "gptj_decode",
            vec![
                ("hidden", "64"),
                ("heads", "4"),
                ("ffn", "128"),
                ("rotary", "8"),
                ("ctx", "5"),
            ],
        ),
    ]);
}

#[test]
fn vision_nets_match_interpreter() {
    run_all(&[
        ("resnet18", vec![("res", "32")]),
        ("mobilenet_v2", vec![("res", "32")]),
        ("mobilenet_v3_small", vec![("res", "32")]),
        ("squeezenet1_1", vec![("res", "64")]),
    ]);
}
