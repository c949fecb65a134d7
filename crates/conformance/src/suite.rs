//! A suite = tests/data/<suite>/manifest.toml + case directories -> libtest-mimic trials.

use crate::case::{run_case_bound, run_case_with_data};
use crate::compare::Tolerance;
use crate::manifest::{CaseEntry, Manifest, Status};
use libtest_mimic::{Failed, Trial};
use pimkit_ir::DType;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// tests/data at the workspace root.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// Tolerance policy of a suite: (case entry, output dtype) -> tolerance.
pub type Policy = fn(&CaseEntry, DType) -> Tolerance;

/// One trial per `pass` / `known-fail` case (named `<case>`), one `<case>:bound` trial
/// per case marked `bound` (run with every input bound as a constant; must pass), plus
/// `manifest_consistent`, which checks that case directories and manifest entries agree.
pub fn suite_trials(suite: &str, policy: Policy) -> Vec<Trial> {
    let root = data_dir().join(suite);
    let manifest = match Manifest::load(&root.join("manifest.toml")) {
        Ok(m) => Arc::new(m),
        Err(e) => return vec![Trial::test("manifest", move || Err(e.into()))],
    };
    let mut trials = vec![consistency_trial(root.clone(), manifest.clone())];
    for (name, entry) in &manifest.case {
        if entry.status == Status::Skipped {
            continue;
        }
        let dir = root.join(name);
        let data = root.join(entry.data.as_deref().unwrap_or(name));
        let (entry_bound, bound_data, bound_entry) = (
            entry.bound,
            entry.data.clone().unwrap_or_else(|| name.clone()),
            entry.clone(),
        );
        let entry = entry.clone();
        let kind = if entry.status == Status::KnownFail {
            "known-fail"
        } else {
            "pass"
        };
        trials.push(
            Trial::test(name.clone(), move || {
                let tol = |dt: DType| policy(&entry, dt);
                let result = run_case_with_data(&dir, &data, &tol);
                match (entry.status, result) {
                    (Status::KnownFail, Ok(())) => Err(Failed::from(
                        "known-fail case now passes: remove it from tools/known_fail.toml and \
                         rerun the generator",
                    )),
                    (Status::KnownFail, Err(_)) | (_, Ok(())) => Ok(()),
                    (_, Err(e)) => Err(Failed::from(e.to_string())),
                }
            })
            .with_kind(kind),
        );
        if entry_bound {
            let (dir, data) = (root.join(name), root.join(bound_data));
            trials.push(
                Trial::test(format!("{name}:bound"), move || {
                    let tol = |dt: DType| policy(&bound_entry, dt);
                    run_case_bound(&dir, &data, &tol).map_err(|e| Failed::from(e.to_string()))
                })
                .with_kind("bound"),
            );
        }
    }
    trials
}

fn consistency_trial(root: PathBuf, manifest: Arc<Manifest>) -> Trial {
    Trial::test("manifest_consistent", move || {
        let on_disk: BTreeSet<String> = std::fs::read_dir(&root)
            .map_err(|e| format!("{}: {e}", root.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let mut problems = Vec::new();
        for (name, e) in &manifest.case {
            let has = on_disk.contains(name);
            match e.status {
                Status::Skipped if has => problems.push(format!("{name}: skipped but has data")),
                Status::Pass | Status::KnownFail if !has => {
                    problems.push(format!("{name}: listed but has no directory"))
                }
                Status::KnownFail | Status::Skipped if e.reason.is_none() => {
                    problems.push(format!("{name}: {:?} without a reason", e.status))
                }
                _ => {}
            }
            if let Some(d) = &e.data {
                let shared = root.join(d);
                if manifest.case.get(d).is_none_or(|o| o.data.is_some())
                    || !shared.join("output_0.npy").exists()
                {
                    problems.push(format!("{name}: shares the data of '{d}', which has none"));
                }
            }
        }
        for name in on_disk.iter().filter(|n| !manifest.case.contains_key(*n)) {
            problems.push(format!("{name}: directory not in the manifest"));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n").into())
        }
    })
}
