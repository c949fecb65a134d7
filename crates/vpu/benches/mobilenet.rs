//! Whole MobileNetV2 (224x224, QOperator) simulated on the NM-Carus model: wall time of
//! one inference (kernels on the VPUs, host nodes, cache carried across layers, plus the
//! reference interpreter pass that supplies the host-node values and checks every kernel).
//! Target: below the paper's 11.8 s per image on the 80 MHz FPGA emulation.
//! Run: `cargo bench -p pimkit-vpu --bench mobilenet`.

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_vpu::Arch;
use pimkit_vpu::network::{DataflowChoice, NetOptions, run_network};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let g = pimkit_zoo::build_spec("q_mobilenet_v2").expect("zoo q_mobilenet_v2");
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let arch = Arch::default();
    let mut grp = c.benchmark_group("vpu");
    grp.sample_size(10)
        .measurement_time(Duration::from_secs(30));
    grp.bench_function("mobilenet_v2_simd1", |b| {
        b.iter(|| run_network(&g, &inputs, &arch, &NetOptions::default()).expect("run"))
    });
    // Without `auto`'s trial runs per kernel layer.
    let family = NetOptions {
        dataflow: DataflowChoice::Family,
        ..Default::default()
    };
    grp.bench_function("mobilenet_v2_simd1_family", |b| {
        b.iter(|| run_network(&g, &inputs, &arch, &family).expect("run"))
    });
    grp.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
