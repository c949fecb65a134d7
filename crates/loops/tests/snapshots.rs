//! Snapshot tests of the text form of lowered programs. Expected text lives in
//! tests/snapshots/<case>.txt; regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p
//! pimkit-loops --test snapshots` and review the diff.

mod common;
use common::zoo;
use std::path::PathBuf;

fn check(case: &str, name: &str, params: &[(&str, &str)]) -> Option<String> {
    let p = pimkit_loops::lower(&zoo(name, params)).unwrap();
    let text = p.dump();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{case}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return None;
    }
    match std::fs::read_to_string(&path) {
        Ok(want) if want == text => None,
        Ok(want) => {
            let line = want
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(want.lines().count().min(text.lines().count()));
            Some(format!(
                "{case}: differs from {} at line {}:\n  want: {:?}\n  got:  {:?}",
                path.display(),
                line + 1,
                want.lines().nth(line),
                text.lines().nth(line)
            ))
        }
        Err(_) => Some(format!(
            "{case}: missing {} (run with UPDATE_SNAPSHOTS=1)",
            path.display()
        )),
    }
}

#[test]
fn lowered_programs_match_snapshots() {
    let cases: &[(&str, &str, &[(&str, &str)])] = &[
        ("softmax", "softmax", &[("n", "4")]),
        ("layernorm", "layernorm", &[("n", "4")]),
        ("rmsnorm", "rmsnorm", &[("n", "4")]),
        ("attention", "attention", &[("n", "4"), ("d", "2")]),
        ("mlp", "mlp", &[("n", "4")]),
        ("mac", "mac", &[("n", "4")]),
        ("gemv", "gemv", &[("n", "4")]),
        ("matmul", "matmul", &[("n", "4")]),
        (
            "depthwise_conv",
            "depthwise_conv",
            &[("n", "4"), ("c", "2")],
        ),
        ("silu", "silu", &[("n", "4")]),
        ("gelu", "gelu", &[("n", "4")]),
        ("zeroing", "zeroing", &[("n", "4")]),
        (
            "llama_decode",
            "llama_decode",
            &[("hidden", "8"), ("heads", "2"), ("ffn", "12"), ("ctx", "3")],
        ),
        (
            "gptj_decode",
            "gptj_decode",
            &[
                ("hidden", "8"),
                ("heads", "2"),
                ("ffn", "16"),
                ("rotary", "2"),
                ("ctx", "3"),
            ],
        ),
    ];
    let bad: Vec<String> = cases
        .iter()
        .filter_map(|(c, n, p)| check(c, n, p))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
