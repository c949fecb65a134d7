#![allow(dead_code)]
//! Small graphs built with pimkit-ir and the fixed-point error bound of docs/puma.md.

use pimkit_ir::{ConvAttrs, DType, Graph, Op, PoolAttrs, PoolKind, Tensor, TensorType, UnaryOp};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

pub const U: f64 = 1.0 / 4096.0;

pub fn rand_vec(rng: &mut Pcg64Mcg, n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-scale..scale)).collect()
}

/// MLP: x[1, dims[0]] → Gemm(+bias) → act → ... ; returns the graph and the weight
/// matrices (W as [in, out] row-major) for the error bound.
pub fn mlp(dims: &[usize], act: UnaryOp, seed: u64) -> (Graph, Vec<(Vec<f32>, usize, usize)>) {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut g = Graph::new("mlp");
    let mut x = g.add_input("x", TensorType::new(DType::F32, vec![1, dims[0]]));
    let mut ws = Vec::new();
    for l in 0..dims.len() - 1 {
        let (k, n) = (dims[l], dims[l + 1]);
        let scale = 1.0 / (k as f32).sqrt();
        let w = rand_vec(&mut rng, k * n, scale);
        let b = rand_vec(&mut rng, n, 0.1);
        let wv = g.add_const(format!("w{l}"), Tensor::from_f32(vec![k, n], w.clone()));
        let bv = g.add_const(format!("b{l}"), Tensor::from_f32(vec![n], b));
        let y = g
            .op(
                format!("fc{l}"),
                Op::Gemm {
                    alpha: 1.0,
                    beta: 1.0,
                    trans_a: false,
                    trans_b: false,
                },
                &[x, wv, bv],
            )
            .unwrap();
        x = g.op(format!("act{l}"), Op::Unary(act), &[y]).unwrap();
        ws.push((w, k, n));
    }
    g.outputs.push(x);
    (g, ws)
}

/// Exact-mode error bound of one dense layer y = act(W x + b) (docs/puma.md):
/// e_out = L·(max_i Σ_j |W_ij|·e_in + (u/2)·(Σ_j|x_j| + Σ_j e_in·... ) + (T+1)·u/2) + u/2.
pub fn dense_bound(
    w: &[f32],
    k: usize,
    n: usize,
    e_in: f64,
    x_abs_max: f64,
    lipschitz: f64,
    xbar: usize,
) -> f64 {
    let mut row_max: f64 = 0.0;
    for o in 0..n {
        let s: f64 = (0..k).map(|i| (w[i * n + o] as f64).abs() + U / 2.0).sum();
        row_max = row_max.max(s);
    }
    let tiles = k.div_ceil(xbar) as f64;
    let pre = row_max * e_in + (U / 2.0) * k as f64 * (x_abs_max + e_in) + (tiles + 1.0) * U / 2.0;
    lipschitz * pre + U / 2.0
}

/// Small CNN: Conv(3x3, pad 1) → Relu → MaxPool 2 → Conv(3x3) → Relu → Flatten → Gemm.
pub fn small_cnn(seed: u64) -> Graph {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut g = Graph::new("cnn");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 2, 8, 8]));
    let w1 = g.add_const(
        "w1",
        Tensor::from_f32(vec![4, 2, 3, 3], rand_vec(&mut rng, 72, 0.3)),
    );
    let b1 = g.add_const("b1", Tensor::from_f32(vec![4], rand_vec(&mut rng, 4, 0.1)));
    let c1 = g
        .op(
            "conv1",
            Op::Conv(ConvAttrs::simple(vec![3, 3], 1, 1, 1)),
            &[x, w1, b1],
        )
        .unwrap();
    let r1 = g.op("relu1", Op::Unary(UnaryOp::Relu), &[c1]).unwrap();
    let p1 = g
        .op(
            "pool1",
            Op::Pool(PoolAttrs {
                kind: PoolKind::Max,
                kernel: vec![2, 2],
                strides: vec![2, 2],
                pads: vec![0; 4],
                dilations: vec![1, 1],
                ceil_mode: false,
                count_include_pad: false,
            }),
            &[r1],
        )
        .unwrap();
    let w2 = g.add_const(
        "w2",
        Tensor::from_f32(vec![6, 4, 3, 3], rand_vec(&mut rng, 216, 0.2)),
    );
    let c2 = g
        .op(
            "conv2",
            Op::Conv(ConvAttrs::simple(vec![3, 3], 1, 0, 1)),
            &[p1, w2],
        )
        .unwrap();
    let r2 = g.op("relu2", Op::Unary(UnaryOp::Relu), &[c2]).unwrap();
    let f = g
        .op("flat", Op::Reshape { shape: vec![1, 24] }, &[r2])
        .unwrap();
    let w3 = g.add_const(
        "w3",
        Tensor::from_f32(vec![24, 5], rand_vec(&mut rng, 120, 0.3)),
    );
    let b3 = g.add_const("b3", Tensor::from_f32(vec![5], rand_vec(&mut rng, 5, 0.1)));
    let y = g
        .op(
            "fc",
            Op::Gemm {
                alpha: 1.0,
                beta: 1.0,
                trans_a: false,
                trans_b: false,
            },
            &[f, w3, b3],
        )
        .unwrap();
    g.outputs.push(y);
    g
}

/// One LSTM layer over `seq` steps (ONNX layout, batch 1) followed by a Gemm on Y_h.
pub fn lstm_net(seq: usize, input: usize, hidden: usize, seed: u64) -> Graph {
    use pimkit_ir::{RnnAttrs, RnnDirection};
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut g = Graph::new("lstm");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![seq, 1, input]));
    let s = 1.0 / (hidden as f32).sqrt();
    let w = g.add_const(
        "W",
        Tensor::from_f32(
            vec![1, 4 * hidden, input],
            rand_vec(&mut rng, 4 * hidden * input, s),
        ),
    );
    let r = g.add_const(
        "R",
        Tensor::from_f32(
            vec![1, 4 * hidden, hidden],
            rand_vec(&mut rng, 4 * hidden * hidden, s),
        ),
    );
    let b = g.add_const(
        "B",
        Tensor::from_f32(vec![1, 8 * hidden], rand_vec(&mut rng, 8 * hidden, 0.1)),
    );
    let outs = g
        .add_node(
            "lstm",
            Op::Lstm(RnnAttrs {
                hidden_size: hidden,
                direction: RnnDirection::Forward,
                linear_before_reset: false,
                batch_first: false,
            }),
            vec![Some(x), Some(w), Some(r), Some(b)],
        )
        .unwrap();
    let h = g
        .op(
            "flat",
            Op::Reshape {
                shape: vec![1, hidden],
            },
            &[outs[1]],
        )
        .unwrap();
    let wo = g.add_const(
        "Wo",
        Tensor::from_f32(vec![hidden, 10], rand_vec(&mut rng, hidden * 10, 0.2)),
    );
    let y = g.op("out", Op::MatMul, &[h, wo]).unwrap();
    g.outputs.push(y);
    g.outputs.push(outs[0]);
    g
}

/// One GRU layer (PyTorch convention, linear_before_reset = 1).
pub fn gru_net(seq: usize, input: usize, hidden: usize, seed: u64) -> Graph {
    use pimkit_ir::{RnnAttrs, RnnDirection};
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut g = Graph::new("gru");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![seq, 1, input]));
    let s = 1.0 / (hidden as f32).sqrt();
    let w = g.add_const(
        "W",
        Tensor::from_f32(
            vec![1, 3 * hidden, input],
            rand_vec(&mut rng, 3 * hidden * input, s),
        ),
    );
    let r = g.add_const(
        "R",
        Tensor::from_f32(
            vec![1, 3 * hidden, hidden],
            rand_vec(&mut rng, 3 * hidden * hidden, s),
        ),
    );
    let b = g.add_const(
        "B",
        Tensor::from_f32(vec![1, 6 * hidden], rand_vec(&mut rng, 6 * hidden, 0.1)),
    );
    let outs = g
        .add_node(
            "gru",
            Op::Gru(RnnAttrs {
                hidden_size: hidden,
                direction: RnnDirection::Forward,
                linear_before_reset: true,
                batch_first: false,
            }),
            vec![Some(x), Some(w), Some(r), Some(b)],
        )
        .unwrap();
    g.outputs.push(outs[1]);
    g
}

/// Grouped (2 groups of 3 -> 4 channels), depthwise (8 channels, stride 2) and pointwise
/// convolutions with HardSwish, the MobileNet pattern.
#[allow(dead_code)]
pub fn grouped_cnn(seed: u64, channels: usize, hw: usize) -> Graph {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut g = Graph::new("grouped_cnn");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 6, hw, hw]));
    let w1 = g.add_const(
        "w1",
        Tensor::from_f32(
            vec![channels, 3, 3, 3],
            rand_vec(&mut rng, channels * 27, 0.3),
        ),
    );
    let b1 = g.add_const(
        "b1",
        Tensor::from_f32(vec![channels], rand_vec(&mut rng, channels, 0.1)),
    );
    let c1 = g
        .op(
            "grouped",
            Op::Conv(ConvAttrs::simple(vec![3, 3], 1, 1, 2)),
            &[x, w1, b1],
        )
        .unwrap();
    let h1 = g
        .op("hswish", Op::Unary(UnaryOp::HardSwish), &[c1])
        .unwrap();
    let w2 = g.add_const(
        "w2",
        Tensor::from_f32(
            vec![channels, 1, 3, 3],
            rand_vec(&mut rng, channels * 9, 0.3),
        ),
    );
    let c2 = g
        .op(
            "depthwise",
            Op::Conv(ConvAttrs::simple(vec![3, 3], 2, 1, channels)),
            &[h1, w2],
        )
        .unwrap();
    let r2 = g.op("relu", Op::Unary(UnaryOp::Relu), &[c2]).unwrap();
    let w3 = g.add_const(
        "w3",
        Tensor::from_f32(
            vec![4, channels, 1, 1],
            rand_vec(&mut rng, 4 * channels, 0.3),
        ),
    );
    let y = g
        .op(
            "pointwise",
            Op::Conv(ConvAttrs::simple(vec![1, 1], 1, 0, 1)),
            &[r2, w3],
        )
        .unwrap();
    g.outputs.push(y);
    g
}

/// Deterministic values in [-scale, scale) from a xorshift stream seeded by `seed`
/// (property tests build weights from the generated seed with it).
pub fn det(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f32 / (1u64 << 53) as f32 - 0.5) * 2.0 * scale
        })
        .collect()
}
