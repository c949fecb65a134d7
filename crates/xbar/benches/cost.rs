//! Speed targets of the cost engine (issue #34): torchvision ResNet18 at 224x224, mapping
//! included, under 50 ms; the 27-point design sweep (crossbar 64/128/256 x ADC 4/6/8 x cell
//! bits 1/2/4) on it under 5 s with two jobs.
//! Run: `cargo bench -p pimkit-xbar --bench cost`

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_engine::{Engine, NoProgress};
use pimkit_xbar::Arch;
use pimkit_xbar::cost::sweep::{parse_axis, sweep};
use pimkit_xbar::cost::{Cost, CostOptions};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let g = pimkit_zoo::build("resnet18", &[("weights".into(), "none".into())]).unwrap();
    let arch = Arch::from_toml_str(pimkit_xbar::arch::RRAM_128_2BIT_TOML).unwrap();
    let opts = CostOptions::new(pimkit_cost::preset("isaac").unwrap().unwrap());
    c.bench_function("resnet18_224_xbar_cost_isaac", |b| {
        b.iter(|| Cost::run(black_box(&g), &arch, &opts, &mut NoProgress).unwrap())
    });
    let axes: Vec<_> = ["xbar=64,128,256", "adc_bits=4,6,8", "cell_bits=1,2,4"]
        .iter()
        .map(|a| parse_axis(a).unwrap())
        .collect();
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.bench_function("resnet18_27_points_2_jobs", |b| {
        b.iter(|| {
            pimkit_engine::jobs::with_jobs(2, || sweep(black_box(&g), &arch, &opts, &axes)).unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
