//! Import plus shape inference of a 100 MB model (issue #16's target: under 2 s):
//! a 5-layer MLP with 2236x2236 f32 weights (5 x 20 MB) plus a shape sub-graph and a
//! folded constant chain, written once to a temporary file and loaded per iteration.
//!
//! cargo bench -p pimkit-onnx --bench import

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_ir::{Graph, Op, Tensor, TensorType};
use std::time::Duration;

fn model() -> Graph {
    let n = 2236;
    let mut g = Graph::new("mlp100mb");
    let mut x = g.add_input("x", TensorType::new(pimkit_ir::DType::F32, vec![1, n]));
    for l in 0..5 {
        let w: Vec<f32> = (0..n * n)
            .map(|i| ((i * 7 + l) % 13) as f32 * 0.01)
            .collect();
        let w = g.add_const(format!("w{l}"), Tensor::from_f32(vec![n, n], w));
        let b = g.add_const(format!("b{l}"), Tensor::from_f32(vec![n], vec![0.1; n]));
        let m = g.op(format!("mm{l}"), Op::MatMul, &[x, w]).unwrap();
        let a = g
            .op(
                format!("add{l}"),
                Op::Binary(pimkit_ir::BinaryOp::Add),
                &[m, b],
            )
            .unwrap();
        x = g
            .op(
                format!("relu{l}"),
                Op::Unary(pimkit_ir::UnaryOp::Relu),
                &[a],
            )
            .unwrap();
    }
    g.outputs.push(x);
    g
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mlp100mb.onnx");
    pimkit_onnx::save(&model(), &path).unwrap();
    let mb = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
    let mut group = c.benchmark_group("import");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function(format!("load {mb:.0} MB"), |b| {
        b.iter(|| pimkit_onnx::load(&path).unwrap())
    });
    group.bench_function(format!("load {mb:.0} MB shape-only"), |b| {
        let o = pimkit_onnx::LoadOptions {
            shape_only: true,
            ..Default::default()
        };
        b.iter(|| pimkit_onnx::load_with(&path, &o).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
