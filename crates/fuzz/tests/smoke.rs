//! A bounded, deterministic fuzzing pass per target (53 s for `cargo test -p pimkit-fuzz`
//! in a debug build on 2 cores, most of it `cli-run`'s child processes), and a
//! replay of the seed corpus and of every crash found so far (`regressions/<target>/`,
//! each fixed). `cli-run` starts this crate's binary as `pimkit-fuzz --as-pimkit ARGS`. The long run is
//! `cargo run -p pimkit-fuzz --release -- --hours 2 TARGET` (docs/testing.md).

use pimkit_fuzz::{Options, crate_dir, fuzz, read_dir_files, run_one, seeds, target};
use std::time::Duration;

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let t = target(name).unwrap();
    let seeds = read_dir_files(&crate_dir().join("corpus").join(t.corpus));
    assert!(!seeds.is_empty(), "no seeds for {name}");
    seeds.into_iter().map(|(_, b)| b).collect()
}

/// `cli-run`'s child: this crate's binary; a case running 20 s is killed (not a crash).
fn configure_cli_run() {
    pimkit_fuzz::cli::configure(pimkit_fuzz::cli::RunConfig {
        exe: env!("CARGO_BIN_EXE_pimkit-fuzz").into(),
        timeout: Duration::from_secs(20),
    });
}

fn smoke(name: &str, iterations: u64) {
    configure_cli_run();
    let t = target(name).unwrap();
    let o = Options {
        seed: 7,
        iterations,
        duration: Duration::from_secs(600),
        // Crashing inputs land where the long run puts them, to be replayed and kept.
        crash_dir: Some(crate_dir().join("../../tools/out/fuzz-smoke")),
        slow: Duration::from_secs(60),
    };
    let r = fuzz(&t, &corpus(name), &o);
    assert_eq!(r.iterations, iterations);
    let msgs: Vec<&str> = r.crashes.iter().map(|(m, _)| m.as_str()).collect();
    assert!(msgs.is_empty(), "{name}: {} crashes: {msgs:#?}", msgs.len());
}

#[test]
fn seeds_and_regressions_do_not_crash() {
    for name in ["onnx", "npy", "arch", "puma"] {
        let t = target(name).unwrap();
        for (p, b) in seeds(&t) {
            if let Err(m) = run_one(&t, &b) {
                panic!("{}: {m}", p.display());
            }
        }
    }
}

/// Every command line of the cli corpus and regressions runs (in a child) to exit 0 or 2
/// within the timeout: their work is small, so running past it is a hang.
#[test]
fn cli_seeds_and_regressions_run_cleanly() {
    configure_cli_run();
    let t = target("cli-run").unwrap();
    let strict = pimkit_fuzz::Target {
        run: pimkit_fuzz::cli::run_strict,
        ..t
    };
    for (p, b) in seeds(&strict) {
        if let Err(m) = run_one(&strict, &b) {
            panic!("{}: {m}", p.display());
        }
    }
}

#[test]
fn cli_smoke() {
    smoke("cli", 20_000);
}

#[test]
fn cli_run_smoke() {
    smoke("cli-run", 60);
}

#[test]
fn onnx_smoke() {
    smoke("onnx", 15_000);
}

#[test]
fn npy_smoke() {
    smoke("npy", 8_000);
}

#[test]
fn puma_smoke() {
    smoke("puma", 1_500);
}

#[test]
fn arch_smoke() {
    smoke("arch", 20_000);
}
