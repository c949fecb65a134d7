//! `cargo bench -p pimkit-offload`: the whole `pimkit offload zoo:llama_decode
//! --granularity all` pipeline (zoo build, lowering, compile (cached after the first),
//! one counted/warm-up and one timed execution, model counters, rule, PIM model, three
//! granularities, oracle) must stay under 90 s; the profiling cost multiple (< 3x with
//! --runs 1) is printed.
use criterion::{Criterion, criterion_group, criterion_main};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let host = pimkit_offload::HostCalib::fixed_reference();
    let o = pimkit_offload::Options {
        counters: pimkit_offload::CounterMode::Model,
        ..Default::default()
    };
    let mut g = c.benchmark_group("offload");
    g.sample_size(10).measurement_time(Duration::from_secs(60));
    g.bench_function("llama_decode_all_granularities", |b| {
        b.iter(|| {
            let gr = pimkit_zoo::build("llama_decode", &[]).unwrap();
            let a = pimkit_offload::run_graph(&gr, &host, &o).unwrap();
            let p = a.profiling.as_ref().unwrap();
            assert!(p.multiple < 3.0, "profiling cost {}x", p.multiple);
            a
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
