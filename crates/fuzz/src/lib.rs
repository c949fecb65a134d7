//! Fuzzing pimkit's input readers and command line on the stable toolchain, without extra tools: a seed
//! corpus (`corpus/<target>/`), a byte mutator plus structure-aware mutations for ONNX,
//! and a loop that runs every mutated input under `catch_unwind`. A panic (or an error a
//! library marks as internal) is a crash: the input is saved and reported. Every crash
//! found is fixed and kept in `regressions/<target>/`, replayed by `cargo test`.
//! See docs/testing.md.

pub mod cli;
pub mod cli_args;
pub mod mutate;
pub mod onnx_mutate;
pub mod targets;

use rand::{RngExt, SeedableRng};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A named fuzz target.
pub struct Target {
    pub name: &'static str,
    /// The seed corpus and regressions are `corpus/<corpus>/`, `regressions/<corpus>/`.
    pub corpus: &'static str,
    pub run: fn(&[u8]) -> Result<(), String>,
    /// Largest input the mutator makes.
    pub max_len: usize,
    /// Structure-aware mutation, tried on half the iterations where given.
    pub structured: Option<fn(&mut rand_pcg::Pcg64, &[u8]) -> Option<Vec<u8>>>,
}

pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "onnx",
            corpus: "onnx",
            run: targets::onnx,
            max_len: 1 << 16,
            structured: Some(onnx_mutate::mutate),
        },
        Target {
            name: "npy",
            corpus: "npy",
            run: targets::npy,
            max_len: 1 << 12,
            structured: None,
        },
        Target {
            name: "arch",
            corpus: "arch",
            run: targets::arch,
            max_len: 1 << 14,
            structured: None,
        },
        Target {
            name: "puma",
            corpus: "puma",
            run: targets::puma,
            max_len: 1 << 18,
            structured: None,
        },
        Target {
            name: "cli",
            corpus: "cli",
            run: cli::parse,
            max_len: 1 << 14,
            structured: Some(cli_args::mutate),
        },
        Target {
            name: "cli-run",
            corpus: "cli",
            run: cli::run,
            max_len: 1 << 14,
            structured: Some(cli_args::mutate),
        },
    ]
}

pub fn target(name: &str) -> Option<Target> {
    targets().into_iter().find(|t| t.name == name)
}

/// The crate's directory (corpus and regressions live there).
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The seed corpus and the regression cases of `t`.
pub fn seeds(t: &Target) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = read_dir_files(&crate_dir().join("corpus").join(t.corpus));
    v.extend(read_dir_files(
        &crate_dir().join("regressions").join(t.corpus),
    ));
    v
}

/// Every file directly in `dir`, sorted by name (empty when it does not exist).
pub fn read_dir_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter_map(|p| std::fs::read(&p).ok().map(|b| (p, b)))
        .collect();
    v.sort();
    v
}

/// Run one input; a panic becomes `Err` with its message.
pub fn run_one(t: &Target, input: &[u8]) -> Result<(), String> {
    match std::panic::catch_unwind(|| (t.run)(input)) {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panic: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

/// How long and where.
pub struct Options {
    pub seed: u64,
    /// Stop after this many inputs, or this much time, whichever comes first.
    pub iterations: u64,
    pub duration: Duration,
    /// Where crashing inputs are written (`<dir>/<target>/crash-<hash>`); none: not saved.
    pub crash_dir: Option<PathBuf>,
    /// An input taking longer than this is saved as `slow-<hash>` (a hang on small work).
    pub slow: Duration,
}

#[derive(Default, Debug)]
pub struct Report {
    pub iterations: u64,
    pub crashes: Vec<(String, PathBuf)>,
    pub slow: u64,
}

/// Mutate the corpus and run the target until the budget is spent.
pub fn fuzz(t: &Target, corpus: &[Vec<u8>], o: &Options) -> Report {
    assert!(!corpus.is_empty(), "target {}: empty corpus", t.name);
    let mut rng = rand_pcg::Pcg64::seed_from_u64(o.seed);
    let mut report = Report::default();
    let start = Instant::now();
    // Panics are caught and reported here, not printed by the default hook.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    while report.iterations < o.iterations && start.elapsed() < o.duration {
        report.iterations += 1;
        let base = &corpus[rng.random_range(0..corpus.len())];
        let other = &corpus[rng.random_range(0..corpus.len())];
        let structured = t.structured.filter(|_| rng.random_bool(0.5));
        let input = match structured.and_then(|f| f(&mut rng, base)) {
            Some(b) => b,
            None => {
                let mut b = base.clone();
                mutate::mutate(&mut rng, &mut b, other, t.max_len);
                b
            }
        };
        let t0 = Instant::now();
        let r = run_one(t, &input);
        let slow = t0.elapsed() > o.slow;
        if slow {
            report.slow += 1;
        }
        if let Err(msg) = &r {
            let path = save(o, t.name, "crash", &input);
            report.crashes.push((msg.clone(), path));
        } else if slow {
            save(o, t.name, "slow", &input);
        }
    }
    std::panic::set_hook(hook);
    report
}

fn save(o: &Options, target: &str, kind: &str, input: &[u8]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    input.hash(&mut h);
    let Some(dir) = &o.crash_dir else {
        return PathBuf::new();
    };
    let d = dir.join(target);
    let p = d.join(format!("{kind}-{:016x}", h.finish()));
    if std::fs::create_dir_all(&d).is_ok() {
        let _ = std::fs::write(&p, input);
    }
    p
}
