//! Round trip: for hand-built graphs covering every IR op, `load_bytes(export(g))` must
//! dump exactly like `g`. Set PIMKIT_EXPORT_DIR to also write each exported model there
//! (tools/check_onnx_export.py then loads them all with onnxruntime).

use pimkit_ir::*;
use pimkit_onnx::{LoadOptions, export, load_bytes};

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

/// Deterministic, non-trivial f32 data.
fn data(shape: &[usize]) -> Tensor {
    let n = numel(shape);
    Tensor::from_f32(
        shape.to_vec(),
        (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.25).collect(),
    )
}

fn scalar_f(v: f32) -> Tensor {
    Tensor::from_f32(vec![], vec![v])
}

fn check(g: Graph) {
    verify(&g).unwrap_or_else(|e| panic!("test graph {} is invalid: {e}", g.name));
    let bytes = export(&g).unwrap_or_else(|e| panic!("{}: export failed: {e}", g.name));
    // onnxruntime lacks some valid ONNX features (batch-first GRU): "_noort" cases skip it.
    if let Ok(dir) = std::env::var("PIMKIT_EXPORT_DIR")
        && !g.name.ends_with("_noort")
    {
        std::fs::write(format!("{dir}/{}.onnx", g.name), &bytes).unwrap();
    }
    let back = load_bytes(&bytes, None, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: re-import failed: {e}", g.name));
    assert_eq!(
        dump(&back),
        dump(&g),
        "round trip of {} changed the graph",
        g.name
    );
    // Constant data survives too.
    for v in &g.values {
        if let ValueDef::Const(Some(t)) = &v.def {
            let id = back.find_value(&v.name).unwrap();
            assert_eq!(
                back.const_data(id),
                Some(t),
                "{}: constant {}",
                g.name,
                v.name
            );
        }
    }
}

/// Graph with one input `x` of type `ty` and one node `op(x, extra consts...)`.
fn unary_graph(name: &str, ty: TensorType, op: Op, consts: Vec<Option<Tensor>>) -> Graph {
    let mut g = Graph::new(name);
    let x = g.add_input("x", ty);
    let mut ins = vec![Some(x)];
    for (i, c) in consts.into_iter().enumerate() {
        ins.push(c.map(|t| g.add_const(format!("c{i}"), t)));
    }
    let outs = g
        .add_node("n", op, ins)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    g.outputs = outs;
    g
}

fn two_input(name: &str, a: TensorType, b: TensorType, op: Op) -> Graph {
    let mut g = Graph::new(name);
    let x = g.add_input("a", a);
    let y = g.add_input("b", b);
    g.outputs = vec![
        g.op("n", op, &[x, y])
            .unwrap_or_else(|e| panic!("{name}: {e}")),
    ];
    g
}

#[test]
fn unary_ops_round_trip() {
    let ops = [
        UnaryOp::Relu,
        UnaryOp::Sigmoid,
        UnaryOp::Tanh,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Reciprocal,
        UnaryOp::Erf,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Softplus,
        UnaryOp::HardSigmoid {
            alpha: 0.3,
            beta: 0.4,
        },
        UnaryOp::HardSwish,
        UnaryOp::LeakyRelu { alpha: 0.1 },
        UnaryOp::Elu { alpha: 0.7 },
        UnaryOp::Gelu { tanh: false },
        UnaryOp::Gelu { tanh: true },
        UnaryOp::IsNaN,
    ];
    for (i, u) in ops.into_iter().enumerate() {
        check(unary_graph(
            &format!("unary{i}_{}", u.name()),
            f32t(&[2, 3]),
            Op::Unary(u),
            vec![],
        ));
    }
    let b = TensorType::new(DType::Bool, vec![4]);
    check(unary_graph("unary_not", b, Op::Unary(UnaryOp::Not), vec![]));
}

#[test]
fn binary_ops_round_trip() {
    use BinaryOp::*;
    for op in [
        Add,
        Sub,
        Mul,
        Div,
        Pow,
        Max,
        Min,
        Mod { fmod: true },
        Equal,
        Less,
        LessOrEqual,
        Greater,
        GreaterOrEqual,
    ] {
        check(two_input(
            &format!("bin_{}", op.name()),
            f32t(&[2, 3]),
            f32t(&[3]),
            Op::Binary(op),
        ));
    }
    let i = TensorType::new(DType::I32, vec![4]);
    check(two_input(
        "bin_mod_int",
        i.clone(),
        i,
        Op::Binary(Mod { fmod: false }),
    ));
    let b = TensorType::new(DType::Bool, vec![4]);
    for op in [And, Or, Xor] {
        check(two_input(
            &format!("bin_{}", op.name()),
            b.clone(),
            b.clone(),
            Op::Binary(op),
        ));
    }
    let mut g = Graph::new("where");
    let c = g.add_input("c", TensorType::new(DType::Bool, vec![2, 3]));
    let x = g.add_input("x", f32t(&[2, 3]));
    let y = g.add_const("y", scalar_f(1.5));
    g.outputs = vec![g.op("n", Op::Where, &[c, x, y]).unwrap()];
    check(g);
}

#[test]
fn simple_ops_round_trip() {
    let x = f32t(&[2, 3, 4]);
    let cases: Vec<(&str, Op)> = vec![
        (
            "clip_both",
            Op::Clip {
                min: Some(-1.0),
                max: Some(1.0),
            },
        ),
        (
            "clip_max",
            Op::Clip {
                min: None,
                max: Some(6.0),
            },
        ),
        (
            "clip_min",
            Op::Clip {
                min: Some(0.0),
                max: None,
            },
        ),
        ("cast_f16", Op::cast(DType::F16)),
        ("cast_i64", Op::cast(DType::I64)),
        ("identity", Op::Identity),
        ("softmax", Op::Softmax { axis: 1 }),
        ("logsoftmax", Op::LogSoftmax { axis: 2 }),
        (
            "argmax",
            Op::ArgMax {
                axis: 1,
                keepdims: false,
                select_last: false,
            },
        ),
        (
            "argmax_last",
            Op::ArgMax {
                axis: 2,
                keepdims: true,
                select_last: true,
            },
        ),
        ("reshape", Op::Reshape { shape: vec![6, 4] }),
        (
            "transpose",
            Op::Transpose {
                perm: vec![2, 0, 1],
            },
        ),
        (
            "split",
            Op::Split {
                axis: 2,
                sizes: vec![1, 3],
            },
        ),
        (
            "slice",
            Op::Slice {
                axes: vec![
                    SliceAxis {
                        axis: 2,
                        start: 3,
                        end: -1,
                        step: -2,
                    },
                    SliceAxis {
                        axis: 1,
                        start: 1,
                        end: 3,
                        step: 1,
                    },
                ],
            },
        ),
        (
            "expand",
            Op::Expand {
                shape: vec![2, 2, 3, 4],
            },
        ),
        (
            "pad_const",
            Op::Pad {
                pads: vec![0, 1, 2, 0, 0, 1],
                mode: PadMode::Constant,
                value: 0.5,
            },
        ),
        (
            "pad_reflect",
            Op::Pad {
                pads: vec![0, 0, 1, 0, 1, 2],
                mode: PadMode::Reflect,
                value: 0.0,
            },
        ),
        (
            "pad_edge",
            Op::Pad {
                pads: vec![1, 0, 0, 0, 0, 3],
                mode: PadMode::Edge,
                value: 0.0,
            },
        ),
        (
            "pad_wrap",
            Op::Pad {
                pads: vec![0, 2, 1, 0, 3, 0],
                mode: PadMode::Wrap,
                value: 0.0,
            },
        ),
        (
            "tile",
            Op::Tile {
                repeats: vec![1, 2, 3],
            },
        ),
        ("global_avg", Op::GlobalPool(PoolKind::Avg)),
        ("global_max", Op::GlobalPool(PoolKind::Max)),
    ];
    for (name, op) in cases {
        check(unary_graph(name, x.clone(), op, vec![]));
    }
    let kinds = [
        ReduceKind::Mean,
        ReduceKind::Sum,
        ReduceKind::Max,
        ReduceKind::Min,
        ReduceKind::Prod,
        ReduceKind::SumSquare,
        ReduceKind::L2,
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        let op = Op::Reduce {
            kind,
            axes: vec![1, 2],
            keepdims: i % 2 == 0,
        };
        check(unary_graph(&format!("reduce{i}"), x.clone(), op, vec![]));
    }
    let op = Op::Reduce {
        kind: ReduceKind::Sum,
        axes: vec![],
        keepdims: true,
    };
    check(unary_graph("reduce_noop", x.clone(), op, vec![]));
    let mut g = Graph::new("concat");
    let a = g.add_input("a", f32t(&[2, 3]));
    let b = g.add_input("b", f32t(&[2, 5]));
    let c = g.add_const("c", data(&[2, 1]));
    g.outputs = vec![g.op("n", Op::Concat { axis: 1 }, &[a, b, c]).unwrap()];
    check(g);
    let idx = Tensor::from_i64(vec![2, 2], vec![0, -1, 2, 1]);
    check(unary_graph(
        "gather",
        x,
        Op::Gather { axis: 1 },
        vec![Some(idx)],
    ));
}

#[test]
fn nn_ops_round_trip() {
    let x = f32t(&[1, 4, 6, 6]);
    let conv = ConvAttrs {
        kernel: vec![3, 3],
        strides: vec![2, 1],
        pads: vec![1, 0, 1, 2],
        dilations: vec![1, 2],
        group: 2,
    };
    check(unary_graph(
        "conv",
        x.clone(),
        Op::Conv(conv),
        vec![Some(data(&[6, 2, 3, 3])), Some(data(&[6]))],
    ));
    let conv1 = ConvAttrs::simple(vec![3], 1, 1, 1);
    check(unary_graph(
        "conv1d",
        f32t(&[1, 2, 8]),
        Op::Conv(conv1),
        vec![Some(data(&[3, 2, 3]))],
    ));
    for (name, kind, ceil, cip) in [
        ("maxpool", PoolKind::Max, true, false),
        ("avgpool", PoolKind::Avg, false, true),
    ] {
        let p = PoolAttrs {
            kind,
            kernel: vec![3, 2],
            strides: vec![2, 2],
            pads: vec![1, 0, 1, 0],
            dilations: vec![1, 1],
            ceil_mode: ceil,
            count_include_pad: cip,
        };
        check(unary_graph(name, x.clone(), Op::Pool(p), vec![]));
    }
    let gemm = Op::Gemm {
        alpha: 0.5,
        beta: 2.0,
        trans_a: false,
        trans_b: true,
    };
    check(unary_graph(
        "gemm",
        f32t(&[2, 4]),
        gemm,
        vec![Some(data(&[3, 4])), Some(data(&[3]))],
    ));
    let gemm = Op::Gemm {
        alpha: 1.0,
        beta: 1.0,
        trans_a: true,
        trans_b: false,
    };
    check(unary_graph(
        "gemm_ta",
        f32t(&[4, 2]),
        gemm,
        vec![Some(data(&[4, 3]))],
    ));
    check(unary_graph(
        "matmul",
        f32t(&[2, 3, 4]),
        Op::MatMul,
        vec![Some(data(&[4, 5]))],
    ));
    let bn = vec![
        Some(data(&[4])),
        Some(data(&[4])),
        Some(data(&[4])),
        Some(Tensor::from_f32(vec![4], vec![1.0, 2.0, 0.5, 3.0])),
    ];
    check(unary_graph(
        "batchnorm",
        x,
        Op::BatchNorm { epsilon: 1e-3 },
        bn,
    ));
    let ln = Op::LayerNorm {
        axis: 2,
        epsilon: 1e-6,
    };
    check(unary_graph(
        "layernorm",
        f32t(&[2, 3, 8]),
        ln,
        vec![Some(data(&[8])), Some(data(&[8]))],
    ));
}

#[test]
fn rnn_ops_round_trip() {
    let lstm = RnnAttrs {
        hidden_size: 5,
        direction: RnnDirection::Bidirectional,
        linear_before_reset: false,
        batch_first: false,
    };
    let consts = vec![
        Some(data(&[2, 20, 4])),
        Some(data(&[2, 20, 5])),
        Some(data(&[2, 40])),
        None,
        Some(data(&[2, 2, 5])),
        Some(data(&[2, 2, 5])),
    ];
    check(unary_graph(
        "lstm",
        f32t(&[3, 2, 4]),
        Op::Lstm(lstm),
        consts,
    ));
    let gru = RnnAttrs {
        hidden_size: 5,
        direction: RnnDirection::Forward,
        linear_before_reset: true,
        batch_first: true,
    };
    let consts = vec![
        Some(data(&[1, 15, 4])),
        Some(data(&[1, 15, 5])),
        Some(data(&[1, 30])),
    ];
    check(unary_graph(
        "gru_batch_first_noort",
        f32t(&[2, 3, 4]),
        Op::Gru(gru.clone()),
        consts.clone(),
    ));
    let gru = RnnAttrs {
        batch_first: false,
        ..gru
    };
    check(unary_graph("gru", f32t(&[3, 2, 4]), Op::Gru(gru), consts));
    let rev = RnnAttrs {
        hidden_size: 3,
        direction: RnnDirection::Reverse,
        linear_before_reset: false,
        batch_first: false,
    };
    check(unary_graph(
        "lstm_rev",
        f32t(&[2, 1, 2]),
        Op::Lstm(rev),
        vec![Some(data(&[1, 12, 2])), Some(data(&[1, 12, 3]))],
    ));
}

fn u8s(shape: &[usize], seed: u8) -> Tensor {
    let n = numel(shape);
    Tensor::from_u8(
        shape.to_vec(),
        (0..n)
            .map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed))
            .collect(),
    )
}
fn i8s(shape: &[usize]) -> Tensor {
    let n = numel(shape);
    Tensor::from_i8(
        shape.to_vec(),
        (0..n)
            .map(|i| ((i * 29 % 255) as i32 - 127) as i8)
            .collect(),
    )
}
fn zp_u8(v: u8) -> Option<Tensor> {
    Some(Tensor::from_u8(vec![], vec![v]))
}

#[test]
fn quant_ops_round_trip() {
    let u8t = |s: &[usize]| TensorType::new(DType::U8, s.to_vec());
    let q = Op::QuantizeLinear {
        axis: 1,
        to: DType::U8,
    };
    check(unary_graph(
        "quant",
        f32t(&[2, 3]),
        q,
        vec![Some(scalar_f(0.05)), zp_u8(128)],
    ));
    let q = Op::QuantizeLinear {
        axis: 1,
        to: DType::U8,
    };
    check(unary_graph(
        "quant_nozp",
        f32t(&[2, 3]),
        q,
        vec![Some(scalar_f(0.05))],
    ));
    let q = Op::QuantizeLinear {
        axis: 0,
        to: DType::I8,
    };
    let per_axis = Tensor::from_f32(vec![2], vec![0.1, 0.2]);
    check(unary_graph(
        "quant_axis",
        f32t(&[2, 3]),
        q,
        vec![
            Some(per_axis.clone()),
            Some(Tensor::from_i8(vec![2], vec![0, 3])),
        ],
    ));
    let q = Op::QuantizeLinear {
        axis: 1,
        to: DType::I8,
    };
    check(unary_graph(
        "quant_nozp_i8",
        f32t(&[2, 3]),
        q,
        vec![Some(scalar_f(0.05))],
    ));
    let dq = Op::DequantizeLinear { axis: 0 };
    check(unary_graph(
        "dequant",
        u8t(&[2, 3]),
        dq,
        vec![Some(per_axis), Some(Tensor::from_u8(vec![2], vec![1, 9]))],
    ));
    let dq = Op::DequantizeLinear { axis: 1 };
    check(unary_graph(
        "dequant_i32",
        TensorType::new(DType::I32, vec![4]),
        dq,
        vec![Some(scalar_f(0.5))],
    ));

    let sc = |v: f32| Some(scalar_f(v));
    let qmm = vec![
        sc(0.02),
        zp_u8(128),
        Some(i8s(&[4, 3])),
        sc(0.01),
        Some(Tensor::from_i8(vec![], vec![0])),
        sc(0.1),
        zp_u8(100),
    ];
    check(unary_graph(
        "qlinear_matmul",
        u8t(&[2, 4]),
        Op::QLinearMatMul,
        qmm,
    ));
    let conv = ConvAttrs::simple(vec![3, 3], 1, 1, 1);
    let qc = vec![
        sc(0.02),
        zp_u8(128),
        Some(i8s(&[4, 2, 3, 3])),
        Some(Tensor::from_f32(vec![4], vec![0.01, 0.02, 0.03, 0.04])),
        Some(Tensor::from_i8(vec![4], vec![0; 4])),
        sc(0.1),
        zp_u8(100),
        Some(Tensor::from_i32(vec![4], vec![10, -20, 30, 0])),
    ];
    check(unary_graph(
        "qlinear_conv",
        u8t(&[1, 2, 5, 5]),
        Op::QLinearConv(conv.clone()),
        qc,
    ));
    let mmi = vec![Some(u8s(&[4, 3], 1)), zp_u8(128), zp_u8(7)];
    check(unary_graph(
        "matmul_integer",
        u8t(&[2, 4]),
        Op::MatMulInteger,
        mmi,
    ));
    check(unary_graph(
        "conv_integer",
        u8t(&[1, 2, 5, 5]),
        Op::ConvInteger(conv),
        vec![Some(u8s(&[4, 2, 3, 3], 3)), zp_u8(128)],
    ));
    for (name, op) in [
        ("qlinear_add", Op::QLinearAdd),
        ("qlinear_mul", Op::QLinearMul),
    ] {
        let ins = vec![
            sc(0.02),
            zp_u8(128),
            Some(u8s(&[3], 5)),
            sc(0.03),
            zp_u8(120),
            sc(0.05),
            zp_u8(128),
        ];
        check(unary_graph(name, u8t(&[2, 3]), op, ins));
    }
    let mut g = Graph::new("qlinear_concat");
    let ys = g.add_const("ys", scalar_f(0.1));
    let yz = g.add_const("yz", Tensor::from_u8(vec![], vec![128]));
    let a = g.add_input("a", u8t(&[1, 2, 4]));
    let b = g.add_input("b", u8t(&[1, 3, 4]));
    let (s1, z1) = (
        g.add_const("s1", scalar_f(0.2)),
        g.add_const("z1", Tensor::from_u8(vec![], vec![100])),
    );
    g.outputs = vec![
        g.op(
            "n",
            Op::QLinearConcat { axis: 1 },
            &[ys, yz, a, s1, z1, b, s1, z1],
        )
        .unwrap(),
    ];
    check(g);
    for cl in [false, true] {
        let op = Op::QLinearGlobalAveragePool { channels_last: cl };
        check(unary_graph(
            &format!("qgap_{cl}"),
            u8t(&[1, 3, 4, 4]),
            op,
            vec![sc(0.1), zp_u8(128), sc(0.05), zp_u8(128)],
        ));
    }
    let qg = Op::QGemm {
        alpha: 1.0,
        trans_a: false,
        trans_b: true,
    };
    let ins = vec![
        sc(0.02),
        zp_u8(128),
        Some(i8s(&[3, 4])),
        sc(0.01),
        Some(Tensor::from_i8(vec![], vec![0])),
        Some(Tensor::from_i32(vec![3], vec![1, 2, 3])),
        sc(0.1),
        zp_u8(128),
    ];
    check(unary_graph("qgemm", u8t(&[2, 4]), qg.clone(), ins));
    let ins = vec![
        sc(0.02),
        zp_u8(128),
        Some(i8s(&[3, 4])),
        sc(0.01),
        Some(Tensor::from_i8(vec![], vec![0])),
    ];
    check(unary_graph("qgemm_f32", u8t(&[2, 4]), qg, ins));
    let ins = vec![sc(0.02), zp_u8(128), sc(0.004), zp_u8(0)];
    check(unary_graph(
        "qlinear_sigmoid",
        u8t(&[2, 3]),
        Op::QLinearSigmoid,
        ins.clone(),
    ));
    check(unary_graph(
        "qlinear_leaky",
        u8t(&[2, 3]),
        Op::QLinearLeakyRelu { alpha: 0.2 },
        ins,
    ));
}

#[test]
fn multi_node_graph_round_trip() {
    // A small CNN block with shared constants, a multi-output op and two graph outputs.
    let mut g = Graph::new("block");
    let x = g.add_input("input", f32t(&[1, 3, 8, 8]));
    let w = g.add_const("conv.weight", data(&[4, 3, 3, 3]));
    let c = g
        .op(
            "conv",
            Op::Conv(ConvAttrs::simple(vec![3, 3], 1, 1, 1)),
            &[x, w],
        )
        .unwrap();
    let r = g.op("relu", Op::Unary(UnaryOp::Relu), &[c]).unwrap();
    let parts = g
        .add_node(
            "split",
            Op::Split {
                axis: 1,
                sizes: vec![2, 2],
            },
            vec![Some(r)],
        )
        .unwrap();
    let s = g
        .op("add", Op::Binary(BinaryOp::Add), &[parts[0], parts[1]])
        .unwrap();
    let p = g.op("gap", Op::GlobalPool(PoolKind::Avg), &[s]).unwrap();
    let f = g
        .op("flat", Op::Reshape { shape: vec![1, 2] }, &[p])
        .unwrap();
    g.outputs = vec![f, parts[1]];
    check(g);
}

#[test]
fn upsampling_ops_round_trip() {
    check(unary_graph(
        "prelu",
        f32t(&[1, 3, 4, 4]),
        Op::PRelu,
        vec![Some(data(&[3, 1, 1]))],
    ));
    let ct = ConvTransposeAttrs {
        kernel: vec![3, 2],
        strides: vec![2, 3],
        pads: vec![1, 0, 0, 1],
        dilations: vec![1, 2],
        output_padding: vec![1, 0],
        group: 2,
    };
    check(unary_graph(
        "convtranspose",
        f32t(&[1, 4, 3, 5]),
        Op::ConvTranspose(ct),
        vec![Some(data(&[4, 3, 3, 2])), Some(data(&[6]))],
    ));
    // Scales that floor to the sizes are written as `scales`...
    let up = ResizeAttrs::from_scales(
        &[1, 2, 3, 5],
        vec![1.0, 1.0, 2.0, 0.6],
        ResizeMode::Nearest(NearestMode::RoundPreferCeil),
        CoordMode::Asymmetric,
    );
    assert_eq!(up.sizes, vec![1, 2, 6, 3]);
    check(unary_graph(
        "resize_scales",
        f32t(&[1, 2, 3, 5]),
        Op::Resize(up),
        vec![],
    ));
    // ...scales derived from sizes as `sizes`.
    let sized = ResizeAttrs {
        mode: ResizeMode::Cubic,
        coord: CoordMode::TfCropAndResize,
        scales: vec![1.0, 1.0, 7.0 / 3.0, 4.0 / 5.0],
        sizes: vec![1, 2, 7, 4],
        roi: vec![0.0, 0.0, 0.1, 0.2, 1.0, 1.0, 0.9, 0.7],
        cubic_coeff_a: -0.5,
        exclude_outside: true,
        extrapolation_value: 2.5,
        antialias: true,
    };
    check(unary_graph(
        "resize_sizes",
        f32t(&[1, 2, 3, 5]),
        Op::Resize(sized),
        vec![],
    ));
}
