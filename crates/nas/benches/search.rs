//! Cost of the search: one NSGA-II run of 50 x 2 generations (150 evaluations, cold cache)
//! with the proxy evaluator. The full default search (50 x 100, ~5,050 evaluations) costs
//! about 34x one iteration of this bench. `cargo bench -p pimkit-nas`.
use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_nas::{NsgaConfig, SearchConfig, Space, search};

fn bench(c: &mut Criterion) {
    let space = Space::load("mbv3-small").unwrap();
    let cfg = SearchConfig {
        nsga: NsgaConfig {
            pop: 50,
            gens: 2,
            ..NsgaConfig::default()
        },
        ..SearchConfig::rnc_default(space)
    };
    let mut g = c.benchmark_group("nas");
    g.sample_size(10);
    g.bench_function("search_pop50_gens2_proxy", |b| {
        b.iter(|| search(&cfg, &mut |_| {}).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
