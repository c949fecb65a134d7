//! Snapshot tests of `pimkit_ir::dump` for a few small entries. The expected dumps are
//! plain text under tests/snapshots/; regenerate them after an intended change with
//! `UPDATE_SNAPSHOTS=1 cargo test -p pimkit-zoo --test snapshots` and review the diff.

use std::path::PathBuf;

const CASES: &[(&str, &str)] = &[
    ("relu", "relu?n=4"),
    ("silu", "silu?n=4"),
    ("rmsnorm", "rmsnorm?n=4"),
    ("attention", "attention?n=4&d=2"),
    ("mlp", "mlp?n=4"),
    ("depthwise_conv", "depthwise_conv?n=5&c=2"),
    (
        "llama_decode",
        "llama_decode?hidden=16&heads=2&ffn=24&ctx=3&weights=none",
    ),
    (
        "gptj_decode",
        "gptj_decode?hidden=16&heads=2&ffn=32&rotary=4&ctx=3&weights=none",
    ),
    ("lenet5", "lenet5?weights=none"),
    ("puma_lstm", "puma_lstm?input=4&hidden=3&out=5&weights=none"),
    (
        "mobilenet_v3_small",
        "mobilenet_v3_small?res=32&classes=10&weights=none",
    ),
    ("qlinear_matmul", "qlinear_matmul?m=2&k=3&n=4"),
    (
        "qlinear_conv1d_causal",
        "qlinear_conv1d_causal?c=2&k=3&l=8&kernel=3&dilation=2",
    ),
    (
        "q_squeezenet1_1",
        "q_squeezenet1_1?res=32&classes=10&calib=1",
    ),
];

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"))
}

/// Compare `actual` with the stored snapshot (or write it when UPDATE_SNAPSHOTS=1).
fn assert_snapshot(name: &str, actual: &str) -> Result<(), String> {
    let p = path(name);
    if std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::write(&p, actual).map_err(|e| format!("{}: {e}", p.display()))?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(&p)
        .map_err(|e| format!("{}: {e} (create it with UPDATE_SNAPSHOTS=1)", p.display()))?;
    if expected == actual {
        return Ok(());
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(expected.lines().count().min(actual.lines().count()));
    Err(format!(
        "snapshot {name} differs at line {}:\n  expected: {}\n  actual:   {}\n(rerun with UPDATE_SNAPSHOTS=1 if the change is intended)",
        line + 1,
        expected.lines().nth(line).unwrap_or("<end>"),
        actual.lines().nth(line).unwrap_or("<end>")
    ))
}

#[test]
fn dumps_match_snapshots() {
    let mut failures = Vec::new();
    for (name, spec) in CASES {
        let g = pimkit_zoo::build_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        if let Err(e) = assert_snapshot(name, &pimkit_ir::dump(&g)) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
