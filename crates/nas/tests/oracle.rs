//! `search_with_oracle` (the Python package's ask/tell) is `search` with the accuracies
//! supplied from outside: told the accuracies a table holds, it visits the same candidates
//! and returns the same front as `--accuracy table:FILE.csv`.

use pimkit_nas::{AccuracySpec, Candidate, NsgaConfig, SearchConfig, Space, search};
use pimkit_nas::{Result, search_with_oracle};
use pimkit_xbar::Budget;
use std::collections::BTreeMap;
use std::sync::Mutex;

fn cfg() -> SearchConfig {
    SearchConfig {
        budget: Budget::Relative(1.0),
        nsga: NsgaConfig {
            pop: 8,
            gens: 3,
            seed: 5,
            ..NsgaConfig::default()
        },
        ..SearchConfig::rnc_default(Space::load("mbv3-small").unwrap())
    }
}

/// A deterministic stand-in for a measured accuracy (FNV-1a of the configuration).
fn fake(config: &str) -> f64 {
    let h = config.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    60.0 + (h % 10_000) as f64 / 500.0
}

#[test]
fn oracle_search_equals_table_search() {
    let cfg = cfg();
    let told: Mutex<BTreeMap<String, f64>> = Mutex::new(BTreeMap::new());
    let batches = Mutex::new(Vec::new());
    let oracle = |c: &[Candidate]| -> Result<Vec<Option<f64>>> {
        assert!(c.iter().all(|c| c.fits && c.accuracy.is_none()));
        batches.lock().unwrap().push(c.len());
        let mut t = told.lock().unwrap();
        Ok(c.iter()
            .map(|c| {
                let a = fake(&c.config);
                t.insert(c.config.clone(), a);
                Some(a)
            })
            .collect())
    };
    let a = search_with_oracle(&cfg, "test", &oracle, &mut |_| {}).unwrap();
    assert!(!a.front.is_empty());
    // One batch per generation at most (initial population + 3).
    assert!(batches.lock().unwrap().len() <= 4);
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("acc.csv");
    let mut csv = String::from("config,accuracy\n");
    for (k, v) in told.lock().unwrap().iter() {
        csv.push_str(&format!("{k},{v:?}\n"));
    }
    std::fs::write(&table, csv).unwrap();
    let b = search(
        &SearchConfig {
            accuracy: AccuracySpec::Table(table),
            ..cfg
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(a.front, b.front);
    assert_eq!(a.history, b.history);
    assert_eq!(
        (a.evaluations, a.unique_evaluations, a.feasible_evaluations),
        (b.evaluations, b.unique_evaluations, b.feasible_evaluations)
    );
    assert_eq!(a.evaluator, "test");
}

#[test]
fn an_oracle_error_stops_the_search() {
    let oracle = |_: &[Candidate]| -> Result<Vec<Option<f64>>> { Ok(vec![]) };
    let e = search_with_oracle(&cfg(), "test", &oracle, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("accuracies told"), "{e}");
}
