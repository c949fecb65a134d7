//! Speed targets of issue 3. `cargo bench -p pimkit-loops --bench lower`.
//! - `llama_decode_full`: lowering + C compile (fresh cache every iteration, so the
//!   compiler always runs) + one warm-up and one timing run of llama_decode at full
//!   size with shape-only weights; target < 60 s per iteration.
//! - `lower/*`: the lowering alone (graph -> bufferized nests) for vision nets.

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_loops::{NativeOptions, ProfileOptions, lower, profile_with};
use std::hint::black_box;
use std::time::Duration;

fn zoo(name: &str, params: &[(&str, &str)]) -> pimkit_ir::Graph {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pimkit_zoo::build(name, &params).unwrap_or_else(|e| panic!("zoo {name}: {e}"))
}

fn llama_decode_full(c: &mut Criterion) {
    let g = zoo("llama_decode", &[("weights", "none")]);
    let root = std::env::temp_dir().join(format!("pimkit-loops-bench-{}", std::process::id()));
    let mut iter = 0usize;
    let mut grp = c.benchmark_group("end_to_end");
    grp.sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(50));
    grp.bench_function("llama_decode_full_lower_compile_run", |b| {
        b.iter(|| {
            iter += 1;
            let p = lower(&g).expect("lower llama_decode");
            let o = ProfileOptions {
                runs: 1,
                warmup: 1,
                native: NativeOptions {
                    // A fresh cache directory: every iteration pays the C compile.
                    cache_dir: root.join(iter.to_string()),
                    ..Default::default()
                },
                seed: 0,
            };
            black_box(profile_with(&p, &o).expect("profile llama_decode"))
        })
    });
    grp.finish();
    let _ = std::fs::remove_dir_all(&root);
}

fn lowering_only(c: &mut Criterion) {
    let mut grp = c.benchmark_group("lower");
    grp.sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    for (name, params) in [
        ("mobilenet_v2", vec![("weights", "none")]),
        ("q_mobilenet_v2", vec![("weights", "none")]),
        ("llama_decode", vec![("weights", "none")]),
    ] {
        let g = zoo(name, &params);
        grp.bench_function(name, |b| b.iter(|| black_box(lower(&g).expect("lower"))));
    }
    grp.finish();
}

criterion_group!(benches, lowering_only, llama_decode_full);
criterion_main!(benches);
