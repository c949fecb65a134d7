//! Every entry: builds, verifies, is deterministic per seed, differs across seeds, and
//! has a shape-only form; bad names and values are errors that say what is valid.

mod common;

use common::{small, with};
use pimkit_ir::{ValueDef, verify};
use pimkit_zoo::{ZooError, build, entries, parse_spec};

#[test]
fn registry_lists_every_contract_name() {
    let names: Vec<&str> = entries().iter().map(|e| e.name).collect();
    let expected = [
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
        "depthwise_conv",
        "attention",
        "mlp",
        "gptj_decode",
        "llama_decode",
        "mobilenet_v2",
        "mobilenet_v3_small",
        "resnet18",
        "squeezenet1_1",
        "rnc_resnet18",
        "rnc_squeezenet1_1",
        "rnc_mobilenet_v3_small",
        "puma_mlp_l4",
        "puma_mlp_l5",
        "puma_lstm",
        "lenet5",
        "vgg16",
        "neurosim_vgg8",
        "q_mobilenet_v2",
        "q_resnet18",
        "q_squeezenet1_1",
        "q_mobilenet_v3_small",
        "qlinear_matmul",
        "qlinear_conv",
        "qlinear_conv1d_causal",
        "llama2_7b",
        "llama2_13b",
        "llama2_70b",
        "llama3_8b",
        "gptj_6b",
        "opt_30b",
        "opt_66b",
        "gpt3_175b",
        "decoder",
    ];
    for e in expected {
        assert!(names.contains(&e), "missing entry {e}");
    }
    assert_eq!(
        names.len(),
        expected.len(),
        "unexpected extra entries: {names:?}"
    );
    for e in entries() {
        assert!(!e.description.is_empty(), "{} has no description", e.name);
        for p in ["seed", "weights"] {
            assert!(e.params.iter().any(|s| s.name == p), "{} lacks {p}", e.name);
        }
        for s in &e.params {
            assert!(!s.help.is_empty(), "{}.{} has no help", e.name, s.name);
        }
    }
}

#[test]
fn small_builds_verify_and_are_deterministic() {
    for e in entries() {
        let p = small(e.name);
        let a = build(e.name, &p).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        verify(&a).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert!(!a.outputs.is_empty() && !a.nodes.is_empty(), "{}", e.name);
        assert!(
            !a.is_shape_only(),
            "{} has shape-only constants with weights=random",
            e.name
        );
        let b = build(e.name, &p).unwrap();
        assert_eq!(pimkit_ir::dump(&a), pimkit_ir::dump(&b), "{}", e.name);
        assert!(a == b, "{}: same seed gave different weights", e.name);
        let c = build(e.name, &with(p.clone(), "seed", "1")).unwrap();
        assert_eq!(
            pimkit_ir::dump(&a),
            pimkit_ir::dump(&c),
            "{}: seed changed the structure",
            e.name
        );
        let has_random_weights = a
            .values
            .iter()
            .any(|v| matches!(&v.def, ValueDef::Const(Some(t)) if t.numel() > 16));
        if has_random_weights {
            assert!(a != c, "{}: seeds 0 and 1 gave the same weights", e.name);
        }
    }
}

#[test]
fn shape_only_form_matches_structure() {
    for e in entries() {
        let p = small(e.name);
        let full = build(e.name, &p).unwrap();
        let none = build(e.name, &with(p, "weights", "none")).unwrap();
        verify(&none).unwrap();
        assert_eq!(
            pimkit_ir::dump(&full).replace(" (shape only)", ""),
            pimkit_ir::dump(&none).replace(" (shape only)", ""),
            "{}",
            e.name
        );
        for v in &none.values {
            assert!(
                !matches!(v.def, ValueDef::Const(Some(_))),
                "{}: constant {} carries data with weights=none",
                e.name,
                v.name
            );
        }
    }
}

#[test]
fn defaults_build_shape_only() {
    for e in entries() {
        let g = build(e.name, &[("weights".to_string(), "none".to_string())])
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        verify(&g).unwrap();
    }
}

/// All defaults with random weights (several GB of weights and full-size calibration runs
/// for the quantized nets). Run with `cargo test -p pimkit-zoo -- --ignored`.
#[test]
#[ignore]
fn defaults_build_with_weights() {
    for e in entries() {
        let g = build(e.name, &[]).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        verify(&g).unwrap();
        assert!(!g.is_shape_only());
    }
}

#[test]
fn errors_name_the_problem() {
    let e = build("resnet19", &[]).unwrap_err();
    let s = e.to_string();
    assert!(matches!(e, ZooError::UnknownEntry { .. }));
    assert!(
        s.contains("resnet19") && s.contains("resnet18") && s.contains("pimkit zoo list"),
        "{s}"
    );

    let e = build("gemv", &[("m".into(), "3".into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("'m'") && e.contains("n, seed, weights"), "{e}");

    for bad in ["abc", "0", "-3", "1.5", ""] {
        let e = build("gemv", &[("n".into(), bad.into())]).unwrap_err();
        assert!(matches!(e, ZooError::BadValue { .. }), "n={bad}: {e}");
        assert!(e.to_string().contains("'n'"), "{e}");
    }
    let e = build("relu", &[("weights".into(), "zeros".into())])
        .unwrap_err()
        .to_string();
    assert!(e.contains("random, none"), "{e}");
    let e = build(
        "llama_decode",
        &[("hidden".into(), "30".into()), ("heads".into(), "4".into())],
    )
    .unwrap_err();
    assert!(matches!(e, ZooError::Invalid { .. }), "{e}");
    let e = build("qlinear_conv", &[("group".into(), "3".into())]).unwrap_err();
    assert!(e.to_string().contains("group"), "{e}");
    assert!(build("q_resnet18", &[("act".into(), "u4".into())]).is_err());
    assert!(build("resnet18", &[("bn".into(), "maybe".into())]).is_err());
}

#[test]
fn spec_strings_round_trip() {
    let (n, p) = parse_spec("qlinear_matmul?m=2&k=3&n=4").unwrap();
    let g = build(&n, &p).unwrap();
    assert_eq!(g.name, "qlinear_matmul");
    let g2 = pimkit_zoo::build_spec("qlinear_matmul?m=2&k=3&n=4").unwrap();
    assert!(g == g2);
}

/// docs/zoo.md lists every entry with each parameter and its default.
#[test]
fn docs_list_every_entry_and_default() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/zoo.md")).unwrap();
    for e in entries() {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{}` ", e.name)))
            .unwrap_or_else(|| panic!("docs/zoo.md has no row for {}", e.name));
        for s in e
            .params
            .iter()
            .filter(|s| s.name != "seed" && s.name != "weights")
        {
            assert!(
                row.contains(&format!("{}={}", s.name, s.default)),
                "docs row of {} lacks {}={}",
                e.name,
                s.name,
                s.default
            );
        }
    }
}

#[test]
#[ignore]
fn print_docs_rows() {
    for e in entries() {
        let ps: Vec<String> = e
            .params
            .iter()
            .filter(|s| s.name != "seed" && s.name != "weights")
            .map(|s| format!("{}={}", s.name, s.default))
            .collect();
        println!("| `{}` | {} | {} |", e.name, e.family, ps.join(" "));
    }
}

#[test]
fn impossible_sizes_are_errors_not_aborts() {
    let build = |spec: &[(&str, &str)]| {
        let p: Vec<(String, String)> = spec
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        pimkit_zoo::build("mlp", &p)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    // Beyond 2^31 per dimension: the parameter is refused.
    let e = build(&[("n", "99999999999")]);
    assert!(e.contains("'n'") && e.contains("2^31"), "{e}");
    // Within it, but a weight over the per-tensor limit: graph construction refuses it.
    let e = build(&[("n", "2147483648"), ("weights", "none")]);
    assert!(e.contains("fc1.weight") && e.contains("2^48"), "{e}");
    // With random weights the same weight is refused before any allocation.
    let e = build(&[("n", "2147483648")]);
    assert!(e.contains("fc1.weight") && e.contains("2^48"), "{e}");
}
