//! The corpus of real exported models (tests/data/real-models, from
//! tools/make_real_models.py): one trial `CASE::ENGINE` per model and engine that applies
//! (exec vs onnxruntime, bind for models with symbolic dims, lower, offload, xbar, puma,
//! and vpu for quantized models).
//! `known-fail` cells must still fail, at the stage their reason records (import, run,
//! mismatch, an engine, panic), so the manifest stays honest; `pass` cells must run
//! and, where the engine yields outputs, match (floats: the manifest's atol/rtol, 1e-3;
//! quantized: bit-exact).
//!
//! Run: `cargo test -p pimkit-conformance --test real_models [-- FILTER]`.
//! Big models (stock torchvision nets at 224x224, not committed) are ignored trials:
//! `python3 tools/make_real_models.py --big` then
//! `cargo test -p pimkit-conformance --test real_models -- --ignored big_` (the test
//! profile is optimized).
//! Cells the manifest lists as `slow` (PUMA on the 224x224 `light` models, minutes each)
//! are ignored too: `cargo test ... -- --ignored ::puma`.
//! `PIMKIT_REAL_MODELS_RESULTS=FILE` appends one JSON line per trial (case, engine, ok,
//! error, secs, and the engine's `detail` where it has one: PUMA's per-layer summary),
//! read by tools/real_models_report.py to write docs/real-models.md.

use libtest_mimic::{Failed, Trial};
use pimkit_conformance::data_dir;
use pimkit_conformance::engines::run_cell_detail;
use pimkit_conformance::real_models::{CellStatus, ENGINES, RealManifest};
use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;

static RESULTS: Mutex<()> = Mutex::new(());

fn record(
    case: &str,
    engine: &str,
    err: Option<&str>,
    secs: f64,
    detail: Option<serde_json::Value>,
) {
    let Some(path) = std::env::var_os("PIMKIT_REAL_MODELS_RESULTS") else {
        return;
    };
    let mut line = serde_json::json!({"case": case, "engine": engine, "ok": err.is_none(),
                                      "error": err.unwrap_or(""), "secs": secs});
    if let Some(d) = detail {
        line["detail"] = d;
    }
    let _guard = RESULTS.lock();
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

/// Where a harness error comes from: the text before its first ": " ("import
/// (pimkit-onnx)", "run (pimkit-interp)", "mismatch", "puma (pimkit-puma)", "PANIC", ...).
fn stage(err: &str) -> &str {
    err.split(": ").next().unwrap_or(err)
}

/// A known failure must fail at the stage its reason records (when the reason names one,
/// as tools/real_models_report.py --accept writes them): an import failure that turns
/// into a mismatch or a panic is news, not the same known failure.
fn same_stage(reason: &str, err: &str) -> bool {
    const STAGES: [&str; 4] = [" (pimkit-", "mismatch", "PANIC", "test data"];
    !STAGES.iter().any(|s| reason.contains(s)) || reason.contains(stage(err))
}

fn consistency(m: &RealManifest) -> Trial {
    let m = m.clone();
    Trial::test("manifest_consistent", move || {
        let root = data_dir().join("real-models");
        let on_disk: BTreeSet<String> = std::fs::read_dir(&root)
            .map_err(|e| format!("{}: {e}", root.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let mut problems = Vec::new();
        for (name, c) in &m.case {
            let committed = c.status == "run" && !c.big;
            if committed != on_disk.contains(name) {
                problems.push(format!(
                    "{name}: status {} big {} but directory present: {}",
                    c.status,
                    c.big,
                    on_disk.contains(name)
                ));
            }
            if c.status == "skipped" && c.export_error.is_none() {
                problems.push(format!("{name}: skipped without export_error"));
            }
            for e in ENGINES {
                if let Some(cell) = c.cell(e)
                    && cell.status == CellStatus::KnownFail
                    && cell.reason.is_none()
                {
                    problems.push(format!("{name}/{e}: known-fail without a reason"));
                }
            }
        }
        for name in on_disk.iter().filter(|n| !m.case.contains_key(*n)) {
            problems.push(format!("{name}: directory not in the manifest"));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n").into())
        }
    })
}

fn trials() -> Vec<Trial> {
    let m = match RealManifest::load() {
        Ok(m) => m,
        Err(e) => return vec![Trial::test("manifest", move || Err(e.into()))],
    };
    let mut out = vec![consistency(&m)];
    for (name, case) in &m.case {
        if case.status != "run" {
            continue;
        }
        for engine in ENGINES {
            let Some(cell) = case.cell(engine).cloned() else {
                continue;
            };
            let (name, case) = (name.clone(), case.clone());
            let kind = match cell.status {
                CellStatus::Pass => "pass",
                CellStatus::KnownFail => "known-fail",
            };
            let ignored = case.big || case.slow.iter().any(|s| s == engine);
            let trial = Trial::test(format!("{name}::{engine}"), move || {
                let t = std::time::Instant::now();
                let r = run_cell_detail(engine, &case.dir(&name), &case);
                let err = r.as_ref().err().map(|e| e.to_string());
                let detail = r.ok().flatten();
                record(
                    &name,
                    engine,
                    err.as_deref(),
                    t.elapsed().as_secs_f64(),
                    detail,
                );
                match (cell.status, err) {
                    (CellStatus::KnownFail, None) => Err(Failed::from(format!(
                        "known-fail cell now passes: remove \"{name}/{engine}\" from \
                         tools/known_fail.toml [real-models] and run \
                         python3 tools/make_real_models.py --manifest-only (was: {})",
                        cell.reason.unwrap_or_default()
                    ))),
                    (CellStatus::KnownFail, Some(e)) => {
                        let reason = cell.reason.unwrap_or_default();
                        if same_stage(&reason, &e) {
                            Ok(())
                        } else {
                            Err(Failed::from(format!(
                                "known-fail cell now fails at another stage: {e}\n    was: \
                                 {reason}\n    rerun with PIMKIT_REAL_MODELS_RESULTS=FILE and \
                                 python3 tools/real_models_report.py FILE --accept"
                            )))
                        }
                    }
                    (CellStatus::Pass, None) => Ok(()),
                    (CellStatus::Pass, Some(e)) => Err(Failed::from(e)),
                }
            })
            .with_kind(kind)
            .with_ignored_flag(ignored);
            out.push(trial);
        }
    }
    out
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, trials()).exit();
}
