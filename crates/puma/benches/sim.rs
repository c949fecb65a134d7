//! Simulation speed on the PUMA benchmarks MLP-L4 and LeNet-5.
//! `cargo bench -p pimkit-puma --bench sim`: criterion reports "elements/s" =
//! simulated cycles per wall second (group `cycles`) and simulated instructions per wall
//! second (group `instructions`). Target: ≥ 10 M simulated cycles/s on MLP-L4 (the
//! issue's; the original simulates ~3,700, reference §6.3).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pimkit_puma::{Arch, CompileOptions, SimOptions, compile, simulate};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let arch = Arch::default();
    for name in ["puma_mlp_l4", "lenet5"] {
        let g = pimkit_zoo::build(name, &[]).expect("zoo model");
        let p = compile(&g, &arch, &CompileOptions::default()).expect("compiles");
        let inputs = pimkit_interp::random_inputs(&g, 0);
        let o = simulate(&p, &inputs, &SimOptions::default()).expect("simulates");
        let (cycles, instr) = (o.stats.cycles, o.stats.simulated_instructions);
        let t0 = std::time::Instant::now();
        let reps = 5;
        for _ in 0..reps {
            black_box(simulate(&p, &inputs, &SimOptions::default()).unwrap());
        }
        let dt = t0.elapsed().as_secs_f64() / reps as f64;
        eprintln!(
            "{name}: {cycles} simulated cycles, {instr} instructions, {:.4} s wall -> {:.3e} cycles/s, {:.3e} instructions/s",
            dt,
            cycles as f64 / dt,
            instr as f64 / dt
        );
        let mut grp = c.benchmark_group("cycles");
        grp.sample_size(10);
        grp.throughput(Throughput::Elements(cycles));
        grp.bench_function(name, |b| {
            b.iter(|| black_box(simulate(&p, &inputs, &SimOptions::default()).unwrap()))
        });
        grp.finish();
        let mut grp = c.benchmark_group("instructions");
        grp.sample_size(10);
        grp.throughput(Throughput::Elements(instr));
        grp.bench_function(name, |b| {
            b.iter(|| black_box(simulate(&p, &inputs, &SimOptions::default()).unwrap()))
        });
        grp.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
