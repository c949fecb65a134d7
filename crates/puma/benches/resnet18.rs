//! Whole-network compile + simulation of torchvision ResNet18 at 224x224 (the zoo's
//! `resnet18`): `cargo bench -p pimkit-puma --bench resnet18`. Target: under 60 s on 2
//! cores (docs/puma.md "Speed"). Compilation includes the per-tensor format
//! calibration (a float evaluation of the vector ops) and the shared-memory checker.

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_puma::{Arch, CompileOptions, SimOptions, compile, simulate};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn bench(c: &mut Criterion) {
    let g = pimkit_zoo::build("resnet18", &[]).expect("zoo model");
    let arch = Arch::default();
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let opts = CompileOptions {
        calibration: vec![inputs.clone()],
        ..Default::default()
    };
    let t0 = Instant::now();
    let p = compile(&g, &arch, &opts).expect("compiles");
    let tc = t0.elapsed();
    let o = simulate(&p, &inputs, &SimOptions::default()).expect("simulates");
    eprintln!(
        "resnet18 224: compile {:.1} s, simulate {:.1} s ({} cycles, {} instructions, {} tiles)",
        tc.as_secs_f64(),
        (t0.elapsed() - tc).as_secs_f64(),
        o.stats.cycles,
        o.stats.simulated_instructions,
        p.placement.tiles_used
    );
    let mut grp = c.benchmark_group("resnet18_224");
    grp.sample_size(10);
    grp.warm_up_time(Duration::from_millis(1));
    grp.measurement_time(Duration::from_secs(30));
    grp.bench_function("compile_and_simulate", |b| {
        b.iter(|| {
            let p = compile(&g, &arch, &opts).unwrap();
            black_box(simulate(&p, &inputs, &SimOptions::default()).unwrap())
        })
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
