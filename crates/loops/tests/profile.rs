//! Timing run and JSON records.

mod common;
use common::{opts, zoo};
use pimkit_loops::{ProfileOptions, lower, profile_with, records, report, report_section};

#[test]
fn profile_times_every_nest_and_records_carry_the_fields() {
    let p = lower(&zoo("softmax", &[("n", "64")])).unwrap();
    let o = ProfileOptions {
        runs: 3,
        warmup: 1,
        native: opts(),
        seed: 1,
    };
    let prof = profile_with(&p, &o).unwrap();
    assert_eq!(prof.nests.len(), 8);
    for t in &prof.nests {
        assert!(t.min_ns <= t.t_cpu_ns && t.t_cpu_ns <= t.max_ns, "{t:?}");
    }
    // exp over 64x64 costs more than filling 64 values.
    assert!(prof.nests[4].t_cpu_ns > prof.nests[0].t_cpu_ns);
    let recs = records(&p, Some(&prof));
    let v = serde_json::to_value(report(&p, Some(&prof))).unwrap();
    let n0 = &v["nests"][0];
    for k in [
        "id",
        "op",
        "node",
        "kind",
        "extents",
        "n_iter",
        "n_total",
        "read_bytes",
        "write_bytes",
        "t_cpu_ns",
    ] {
        assert!(!n0[k].is_null(), "missing {k} in {n0}");
    }
    assert_eq!(recs[2].n_iter, 64);
    assert_eq!(recs[2].n_total, 64 * 64);
    let s = report_section(&p, Some(&prof));
    assert!(
        s.blocks
            .iter()
            .any(|b| matches!(b, pimkit_report::Block::Svg { .. }))
    );
}

/// Speed target (issue 3): lowering + C compile + one timing run of llama_decode at full
/// size under 60 s. Run with
/// `cargo test --release -p pimkit-loops --test profile -- --ignored --nocapture`.
#[test]
#[ignore]
fn llama_decode_full_size_under_60s() {
    let t = std::time::Instant::now();
    let g = zoo("llama_decode", &[("weights", "none")]);
    let p = lower(&g).unwrap();
    let o = ProfileOptions {
        runs: 1,
        warmup: 1,
        native: pimkit_loops::NativeOptions {
            cache_dir: std::env::temp_dir().join(format!("pimkit-bench-{}", std::process::id())),
            ..Default::default()
        },
        seed: 0,
    };
    let prof = profile_with(&p, &o).unwrap();
    let s = t.elapsed().as_secs_f64();
    println!(
        "llama_decode: {} nests, compile {:.2} s, program {:.1} ms, total {s:.1} s",
        p.nests.len(),
        prof.compile_ms / 1e3,
        prof.total_ns / 1e6
    );
    assert!(s < 60.0, "took {s:.1} s");
}

/// `profile_with_progress` reports 0 before compiling, then one step per nest per run
/// (warm-up included), counting up to the total.
#[test]
fn profile_progress_counts_every_nest_of_every_run() {
    let p = lower(&zoo("softmax", &[("n", "16")])).unwrap();
    let o = ProfileOptions {
        runs: 2,
        warmup: 1,
        native: opts(),
        seed: 1,
    };
    let mut steps: Vec<(usize, usize, String)> = vec![];
    pimkit_loops::profile_with_progress(&p, &o, &mut |d, t, w| steps.push((d, t, w.into())))
        .unwrap();
    let total = 3 * p.nests.len();
    assert_eq!(steps[0], (0, total, "compile".to_string()));
    assert_eq!(steps.len(), total + 1);
    for (i, (d, t, w)) in steps.iter().enumerate() {
        assert_eq!((*d, *t), (i, total));
        if i > 0 {
            assert_eq!(*w, p.nests[(i - 1) % p.nests.len()].node);
        }
    }
}
