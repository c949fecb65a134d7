//! Kernel speed, one node per benchmark, on layer shapes of MobileNetV2 / ResNet18 /
//! SqueezeNet and of a transformer block and an LSTM (batch 1, single thread):
//! QLinearConv (pointwise, 3x3, 7x7 stride 2, 3x3 on 7x7, depthwise stride 1 and 2),
//! QGemm, QLinearMatMul, the f32 Conv / Gemm / MatMul / LSTM counterparts, MaxPool,
//! QuantizeLinear, QLinearAdd and QLinearMul. Run with
//! `cargo bench -p pimkit-interp --bench kernels -- --quick` (add a filter such as
//! `qconv` to run a subset). The figure to read is the time per node; GMAC/s =
//! MACs / time.

use criterion::{Criterion, criterion_group, criterion_main};
use pimkit_interp::{random_inputs, run};
use pimkit_ir::{
    ConvAttrs, DType, Graph, Op, PoolAttrs, PoolKind, RnnAttrs, RnnDirection, Tensor, TensorType,
};
use std::collections::HashMap;
use std::hint::black_box;

/// A graph of one node whose first input is the graph input and the rest constants.
fn one_node(op: Op, x: TensorType, consts: Vec<Option<Tensor>>) -> Graph {
    let mut g = Graph::new("bench");
    let mut ids = vec![Some(g.add_input("x", x))];
    for (i, c) in consts.into_iter().enumerate() {
        ids.push(c.map(|t| g.add_const(format!("c{i}"), t)));
    }
    let outs = g.add_node("n", op, ids).expect("node type-checks");
    g.outputs = outs;
    g
}

fn u8s(v: u8) -> Option<Tensor> {
    Some(Tensor::from_u8(vec![], vec![v]))
}
fn f32s(v: f32) -> Option<Tensor> {
    Some(Tensor::from_f32(vec![], vec![v]))
}
fn i8_weights(shape: Vec<usize>) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_i8(shape, (0..n).map(|i| ((i * 37 + 11) % 255) as i8).collect())
}
fn f32_weights(shape: Vec<usize>) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_f32(
        shape,
        (0..n)
            .map(|i| ((i * 37 + 11) % 255) as f32 / 255.0 - 0.5)
            .collect(),
    )
}

/// QLinearConv u8 x s8 (per-channel scales), and the same shape as f32 Conv.
fn conv_pair(
    cin: usize,
    cout: usize,
    hw: usize,
    k: usize,
    stride: usize,
    group: usize,
) -> (Graph, Graph) {
    let a = ConvAttrs::simple(vec![k, k], stride, k / 2, group);
    let x = |dt| TensorType::new(dt, vec![1, cin, hw, hw]);
    let wshape = vec![cout, cin / group, k, k];
    let q = one_node(
        Op::QLinearConv(a.clone()),
        x(DType::U8),
        vec![
            f32s(0.02),
            u8s(128),
            Some(i8_weights(wshape.clone())),
            Some(Tensor::from_f32(vec![cout], vec![0.003; cout])),
            Some(Tensor::from_i8(vec![cout], vec![0; cout])),
            f32s(0.05),
            u8s(120),
            Some(Tensor::from_i32(vec![cout], vec![100; cout])),
        ],
    );
    let f = one_node(
        Op::Conv(a),
        x(DType::F32),
        vec![Some(f32_weights(wshape)), Some(f32_weights(vec![cout]))],
    );
    (q, f)
}

fn bench_graph(c: &mut Criterion, name: &str, g: &Graph) {
    let inputs: HashMap<String, Tensor> = random_inputs(g, 0);
    c.bench_function(name, |b| b.iter(|| black_box(run(g, &inputs).unwrap())));
}

fn bench(c: &mut Criterion) {
    pimkit_interp::set_threads(1).expect("one thread");
    println!("integer kernels: {}", pimkit_interp::isa_name());
    let convs = [
        ("pw_16x96_112", 16, 96, 112, 1, 1, 1),
        ("pw_96x24_56", 96, 24, 56, 1, 1, 1),
        ("3x3_64x64_56", 64, 64, 56, 3, 1, 1),
        ("3x3_512x512_7", 512, 512, 7, 3, 1, 1),
        ("7x7s2_3x64_224", 3, 64, 224, 7, 2, 1),
        ("dw3x3_144_56", 144, 144, 56, 3, 1, 144),
        ("dw3x3s2_96_112", 96, 96, 112, 3, 2, 96),
    ];
    for (name, cin, cout, hw, k, s, grp) in convs {
        let (q, f) = conv_pair(cin, cout, hw, k, s, grp);
        bench_graph(c, &format!("qconv_{name}"), &q);
        bench_graph(c, &format!("conv_{name}"), &f);
    }
    // QGemm: the classifier of MobileNetV2 (1280 -> 1000, B transposed).
    let qgemm = one_node(
        Op::QGemm {
            alpha: 1.0,
            trans_a: false,
            trans_b: true,
        },
        TensorType::new(DType::U8, vec![1, 1280]),
        vec![
            f32s(0.02),
            u8s(128),
            Some(i8_weights(vec![1000, 1280])),
            f32s(0.003),
            Some(Tensor::from_i8(vec![], vec![0])),
            Some(Tensor::from_i32(vec![1000], vec![7; 1000])),
            f32s(0.05),
            u8s(120),
        ],
    );
    bench_graph(c, "qgemm_1x1280x1000", &qgemm);
    let gemm = one_node(
        Op::Gemm {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: true,
        },
        TensorType::new(DType::F32, vec![1, 1280]),
        vec![
            Some(f32_weights(vec![1000, 1280])),
            Some(f32_weights(vec![1000])),
        ],
    );
    bench_graph(c, "gemm_1x1280x1000", &gemm);
    // Transformer projections: [64, 256] x [256, 768].
    let qmm = one_node(
        Op::QLinearMatMul,
        TensorType::new(DType::U8, vec![64, 256]),
        vec![
            f32s(0.02),
            u8s(128),
            Some(i8_weights(vec![256, 768])),
            f32s(0.003),
            Some(Tensor::from_i8(vec![], vec![0])),
            f32s(0.05),
            u8s(120),
        ],
    );
    bench_graph(c, "qmatmul_64x256x768", &qmm);
    let mm = one_node(
        Op::MatMul,
        TensorType::new(DType::F32, vec![64, 256]),
        vec![Some(f32_weights(vec![256, 768]))],
    );
    bench_graph(c, "matmul_64x256x768", &mm);
    // LSTM: 32 steps, batch 1, 64 -> 128.
    let lstm = one_node(
        Op::Lstm(RnnAttrs {
            hidden_size: 128,
            direction: RnnDirection::Forward,
            batch_first: false,
            linear_before_reset: false,
        }),
        TensorType::new(DType::F32, vec![32, 1, 64]),
        vec![
            Some(f32_weights(vec![1, 512, 64])),
            Some(f32_weights(vec![1, 512, 128])),
        ],
    );
    bench_graph(c, "lstm_32x64x128", &lstm);
    // ResNet18's max pool on u8 and f32.
    for (name, dt) in [("maxpool_u8", DType::U8), ("maxpool_f32", DType::F32)] {
        let p = PoolAttrs {
            kind: PoolKind::Max,
            kernel: vec![3, 3],
            strides: vec![2, 2],
            pads: vec![1; 4],
            dilations: vec![1, 1],
            ceil_mode: false,
            count_include_pad: false,
        };
        let g = one_node(
            Op::Pool(p),
            TensorType::new(dt, vec![1, 64, 112, 112]),
            vec![],
        );
        bench_graph(c, &format!("{name}_64x112"), &g);
    }
    let ql = one_node(
        Op::QuantizeLinear {
            axis: 1,
            to: DType::U8,
        },
        TensorType::new(DType::F32, vec![1, 3, 224, 224]),
        vec![f32s(0.02), u8s(128)],
    );
    bench_graph(c, "quantize_3x224", &ql);
    // ResNet18's first residual QLinearAdd, and QLinearMul on the same shape.
    let shape = vec![1, 64, 56, 56];
    let n: usize = shape.iter().product();
    let other = Tensor::from_u8(shape.clone(), (0..n).map(|i| (i * 7 % 256) as u8).collect());
    for (name, op) in [("qladd", Op::QLinearAdd), ("qlmul", Op::QLinearMul)] {
        let g = one_node(
            op,
            TensorType::new(DType::U8, shape.clone()),
            vec![
                f32s(0.02),
                u8s(128),
                Some(other.clone()),
                f32s(0.03),
                u8s(120),
                f32s(0.05),
                u8s(125),
            ],
        );
        bench_graph(c, &format!("{name}_64x56"), &g);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
