//! The acceptance sweep of issue #37: 4 models x 6 context lengths x 5 batch sizes x 3
//! systems, from the zoo's shape-only decoders to every result (build, read, evaluate),
//! target under 10 s on 2 cores. `cargo bench -p pimkit-llm --bench sweep`.

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_llm::{LlmOptions, analysis, extract, system};

fn sweep(c: &mut Criterion) {
    let models = ["llama2_7b", "llama3_8b", "llama2_70b", "gpt3_175b"];
    let systems: Vec<_> = ["dgx-h100", "dgx-h100-attacc-bank", "dgx-h100-attacc-buffer"]
        .iter()
        .map(|s| (s.to_string(), system::load(s).unwrap()))
        .collect();
    let o = LlmOptions::default();
    assert_eq!((o.contexts.len(), o.batches.len()), (6, 5));
    let mut g = c.benchmark_group("llm");
    g.sample_size(10);
    g.bench_function("4 models x 6 contexts x 5 batches x 3 systems", |b| {
        b.iter(|| {
            let w: Vec<_> = models
                .iter()
                .map(|m| {
                    extract(&pimkit_zoo::build_spec(&format!("{m}?weights=none")).unwrap()).unwrap()
                })
                .collect();
            let outs = pimkit_engine::jobs::with_jobs(2, || analysis::sweep(&w, &systems, &o));
            assert_eq!(outs.len(), 12);
            outs
        })
    });
    g.finish();
}

criterion_group!(benches, sweep);
criterion_main!(benches);
