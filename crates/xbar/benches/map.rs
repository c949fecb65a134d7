//! Speed targets: ResNet18 mapping with duplication and packing (< 100 ms) and a
//! 1,000-candidate evaluation loop as a NAS would run it (< 10 s).
//! Run: `cargo bench -p pimkit-xbar --bench map`

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_xbar::*;
use std::hint::black_box;

fn graph(name: &str) -> pimkit_ir::Graph {
    pimkit_zoo::build(name, &[("weights".into(), "none".into())]).unwrap()
}

fn bench(c: &mut Criterion) {
    let arch = Arch::default();
    let g = graph("resnet18");
    let opts = MapOptions {
        budget: Budget::Relative(1.2),
        ..MapOptions::from_arch(&arch)
    };
    c.bench_function("resnet18_map_dup_pack_1.2x", |b| {
        b.iter(|| map_graph(black_box(&g), &arch, &opts).unwrap())
    });

    // NAS-style loop: 1,000 evaluations of MobileNetV3 variants (layer lists built directly,
    // widths perturbed per candidate), baseline computed once, one packing order, 8 samples.
    let base = extract(&graph("rnc_mobilenet_v3_small")).unwrap().layers;
    let mut fast = arch.clone();
    fast.packing.restarts = 1;
    let nas = MapOptions {
        budget: Budget::Crossbars(210),
        baseline: false,
        ..MapOptions::from_arch(&fast)
    };
    let mut group = c.benchmark_group("nas");
    group.sample_size(10);
    group.bench_function("1000_candidates_rnc_mbv3_210xbars", |b| {
        b.iter(|| {
            let mut ok = 0;
            for i in 0..1000usize {
                let layers: Vec<Layer> = base
                    .iter()
                    .enumerate()
                    .map(|(j, l)| {
                        let mut l = l.clone();
                        if l.kind == LayerKind::Depthwise && (i + j) % 3 == 0 {
                            l.positions = l.positions * 4 / 5 + 1;
                        }
                        l
                    })
                    .collect();
                if map_layers("cand", &layers, &[], &fast, &nas)
                    .map(|r| r.fits)
                    .unwrap_or(false)
                {
                    ok += 1;
                }
            }
            black_box(ok)
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
