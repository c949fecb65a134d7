//! Interpreter speed on MobileNetV2-1.0 224x224 batch 1: float, and the QOperator
//! (QLinearConv / QLinearAdd / QGemm) form. Run with
//! `cargo bench -p pimkit-interp --bench interp -- --quick`. Both models come from the
//! zoo (`mobilenet_v2`, `q_mobilenet_v2`: torchvision's layer table, random weights).

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_interp::{random_inputs, run};
use std::hint::black_box;
use std::time::Instant;

fn report(name: &str, g: &pimkit_ir::Graph) {
    let inputs = random_inputs(g, 0);
    run(g, &inputs).expect("warm-up run");
    let t = Instant::now();
    let n = 5;
    for _ in 0..n {
        black_box(run(g, &inputs).unwrap());
    }
    println!(
        "{name}: {:.1} ms per inference (mean of {n}, {} nodes)",
        t.elapsed().as_secs_f64() * 1e3 / n as f64,
        g.nodes.len()
    );
}

fn bench(c: &mut Criterion) {
    let zoo = |name: &str| pimkit_zoo::build(name, &[]).expect("zoo model builds");
    let float = zoo("mobilenet_v2");
    let quant = zoo("q_mobilenet_v2");
    report("mobilenet_v2 f32 224x224 b1", &float);
    report("q_mobilenet_v2 u8/s8 224x224 b1", &quant);
    let mut grp = c.benchmark_group("interp");
    grp.sample_size(10);
    let fi = random_inputs(&float, 0);
    grp.bench_function("mobilenet_v2_f32_224_b1", |b| {
        b.iter(|| run(&float, &fi).unwrap())
    });
    let qi = random_inputs(&quant, 0);
    grp.bench_function("q_mobilenet_v2_224_b1", |b| {
        b.iter(|| run(&quant, &qi).unwrap())
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
