//! The f32 GEMM (`kernels::fgemm`) on the im2col products of ResNet18's convolutions and a
//! transformer projection, per kernel family this host runs, against `matrixmultiply`
//! (the crate it replaced) on the same operands in the same run. A is packed once (the
//! weights), B per call (`packed`) or read in place (`inplace`, as a 1x1 convolution).
//! Run with `cargo bench -p pimkit-interp --bench fgemm -- --quick`; GFLOP/s = 2·m·k·n /
//! time.

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_interp::bench_api::{FgemmCase, fgemm_families};
use std::hint::black_box;

/// (m, k, n): output channels, input channels x taps, output pixels.
const SHAPES: &[(usize, usize, usize)] = &[
    (64, 147, 12544),
    (64, 576, 3136),
    (128, 1152, 784),
    (256, 2304, 196),
    (512, 4608, 49),
    (768, 256, 64),
];

fn fgemm(c: &mut Criterion) {
    for &(m, k, n) in SHAPES {
        let name = format!("{m}x{k}x{n}");
        for fam in fgemm_families() {
            let mut case = FgemmCase::new(fam, (m, k, n));
            c.bench_function(&format!("fgemm/{fam}/packed/{name}"), |b| {
                b.iter(|| black_box(case.run(false)))
            });
            c.bench_function(&format!("fgemm/{fam}/inplace/{name}"), |b| {
                b.iter(|| black_box(case.run(true)))
            });
        }
        let val = |i: usize| ((i * 37 + 11) % 255) as f32 / 255.0 - 0.5;
        let a: Vec<f32> = (0..m * k).map(val).collect();
        let bm: Vec<f32> = (0..k * n).map(|i| val(i + 5)).collect();
        let mut out = vec![0f32; m * n];
        c.bench_function(&format!("fgemm/matrixmultiply/{name}"), |b| {
            b.iter(|| {
                // SAFETY: row-major m x k, k x n and m x n buffers of exactly those sizes.
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        k,
                        n,
                        1.0,
                        a.as_ptr(),
                        k as isize,
                        1,
                        bm.as_ptr(),
                        n as isize,
                        1,
                        0.0,
                        out.as_mut_ptr(),
                        n as isize,
                        1,
                    )
                };
                black_box(out[0])
            })
        });
    }
}

criterion_group!(benches, fgemm);
criterion_main!(benches);
