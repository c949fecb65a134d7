//! Quantized ops on small hand-checked examples: ties to even, saturation, per-axis
//! and per-channel parameters.
mod common;
use common::*;
use pimkit_ir::{ConvAttrs, DType, Op, Tensor};

#[test]
fn quantize_linear_ties_saturation_per_axis() {
    let x = f32t(&[7], &[0.0, 1.5, 2.5, -2.5, 300.0, -300.0, 3.0]);
    let q = run1(
        Op::QuantizeLinear {
            axis: 1,
            to: DType::U8,
        },
        vec![x.clone(), scalar(1.0), u8s(0)],
    );
    assert_eq!(q.as_u8().unwrap(), &[0, 2, 2, 0, 255, 0, 3]);
    let q = run1(
        Op::QuantizeLinear {
            axis: 1,
            to: DType::I8,
        },
        vec![x, scalar(1.0), i8s(0)],
    );
    assert_eq!(q.as_i8().unwrap(), &[0, 2, 2, -2, 127, -128, 3]);
    // 1.25 / 0.5 = 2.5 -> 2 (+128); -0.75 / 0.5 = -1.5 -> -2 (+128)
    let q = run1(
        Op::QuantizeLinear {
            axis: 1,
            to: DType::U8,
        },
        vec![f32t(&[2], &[1.25, -0.75]), scalar(0.5), u8s(128)],
    );
    assert_eq!(q.as_u8().unwrap(), &[130, 126]);
    // per-axis along axis 0
    let q = run1(
        Op::QuantizeLinear {
            axis: 0,
            to: DType::U8,
        },
        vec![
            f32t(&[2, 2], &[1.0; 4]),
            f32t(&[2], &[1.0, 0.5]),
            Tensor::from_u8(vec![2], vec![0, 10]),
        ],
    );
    assert_eq!(q.as_u8().unwrap(), &[1, 1, 12, 12]);
}

#[test]
fn dequantize_linear_per_tensor_and_axis() {
    let y = run1(
        Op::DequantizeLinear { axis: 1 },
        vec![
            Tensor::from_u8(vec![3], vec![0, 128, 255]),
            scalar(0.5),
            u8s(128),
        ],
    );
    assert_eq!(y.as_f32().unwrap(), &[-64.0, 0.0, 63.5]);
    let y = run1(
        Op::DequantizeLinear { axis: 1 },
        vec![
            Tensor::from_i8(vec![1, 2], vec![10, 10]),
            f32t(&[2], &[1.0, 2.0]),
            Tensor::from_i8(vec![2], vec![0, 5]),
        ],
    );
    assert_eq!(y.as_f32().unwrap(), &[10.0, 10.0]);
    let y = run_node(
        Op::DequantizeLinear { axis: 1 },
        vec![
            Some(Tensor::from_i32(vec![2], vec![-3, 4])),
            Some(scalar(0.25)),
            None,
        ],
    )
    .unwrap();
    assert_eq!(y[0].as_f32().unwrap(), &[-0.75, 1.0]);
}

fn qmm(
    a: Tensor,
    a_s: Tensor,
    a_zp: Tensor,
    b: Tensor,
    b_s: Tensor,
    b_zp: Tensor,
    y_s: f32,
    y_zp: Tensor,
) -> Tensor {
    run1(
        Op::QLinearMatMul,
        vec![a, a_s, a_zp, b, b_s, b_zp, scalar(y_s), y_zp],
    )
}

#[test]
fn qlinear_matmul_ties_zp_saturation() {
    let a = Tensor::from_u8(vec![2, 2], vec![1, 2, 3, 4]);
    let eye = Tensor::from_u8(vec![2, 2], vec![1, 0, 0, 1]);
    // acc = a; * 0.5 -> 0.5, 1, 1.5, 2 -> 0, 1, 2, 2 (ties to even)
    let y = qmm(
        a.clone(),
        scalar(0.5),
        u8s(0),
        eye.clone(),
        scalar(1.0),
        u8s(0),
        1.0,
        u8s(0),
    );
    assert_eq!(y.as_u8().unwrap(), &[0, 1, 2, 2]);
    let y = qmm(
        a.clone(),
        scalar(0.5),
        u8s(0),
        eye.clone(),
        scalar(1.0),
        u8s(0),
        1.0,
        u8s(10),
    );
    assert_eq!(y.as_u8().unwrap(), &[10, 11, 12, 12]);
    // int8 saturation: 127 * 127 = 16129 -> 127
    let y = qmm(
        Tensor::from_i8(vec![1, 1], vec![127]),
        scalar(1.0),
        i8s(0),
        Tensor::from_i8(vec![1, 1], vec![127]),
        scalar(1.0),
        i8s(0),
        1.0,
        i8s(0),
    );
    assert_eq!(y.as_i8().unwrap(), &[127]);
}

#[test]
fn qlinear_matmul_per_column_b_and_per_row_a() {
    let a = Tensor::from_u8(vec![2, 2], vec![1, 2, 3, 4]);
    // b - zp = [[2, 2], [0, 0]]; acc = [[2, 2], [6, 6]]; col scales 1 and 0.25
    let b = Tensor::from_u8(vec![2, 2], vec![2, 4, 0, 2]);
    let y = qmm(
        a.clone(),
        scalar(1.0),
        u8s(0),
        b,
        f32t(&[2], &[1.0, 0.25]),
        Tensor::from_u8(vec![2], vec![0, 2]),
        1.0,
        u8s(0),
    );
    assert_eq!(y.as_u8().unwrap(), &[2, 0, 6, 2]);
    // per-row a: a - zp = [[0, 1], [0, 1]], row scales 1 and 0.5 -> [[0, 1], [0, 0]]
    let eye = Tensor::from_u8(vec![2, 2], vec![1, 0, 0, 1]);
    let y = qmm(
        a,
        f32t(&[2, 1], &[1.0, 0.5]),
        Tensor::from_u8(vec![2, 1], vec![1, 3]),
        eye,
        scalar(1.0),
        u8s(0),
        1.0,
        u8s(0),
    );
    assert_eq!(y.as_u8().unwrap(), &[0, 1, 0, 0]);
}

#[test]
fn matmul_integer_onnx_example() {
    let a = Tensor::from_u8(vec![4, 3], vec![11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0]);
    let b = Tensor::from_u8(vec![3, 2], vec![1, 4, 2, 5, 3, 6]);
    let y = run1(
        Op::MatMulInteger,
        vec![a, b, Tensor::from_u8(vec![], vec![12]), u8s(0)],
    );
    assert_eq!(
        y.as_i32().unwrap(),
        &[-38, -83, -44, -98, -50, -113, -56, -128]
    );
}

#[test]
fn conv_integer_onnx_example() {
    let x = Tensor::from_u8(vec![1, 1, 3, 3], (2..11).collect());
    let w = Tensor::from_u8(vec![1, 1, 2, 2], vec![1; 4]);
    let y = run1(
        Op::ConvInteger(ConvAttrs::simple(vec![2, 2], 1, 0, 1)),
        vec![x, w, u8s(1), u8s(0)],
    );
    assert_eq!(y.as_i32().unwrap(), &[12, 16, 24, 28]);
}

fn qconv_1x1(y_zp: u8) -> Tensor {
    // x - x_zp = [0, 10]; channel 0: *2 + 1, scale 0.5; channel 1: *-3 - 1, scale 0.25
    run1(
        Op::QLinearConv(ConvAttrs::simple(vec![1, 1], 1, 0, 1)),
        vec![
            Tensor::from_u8(vec![1, 1, 1, 2], vec![10, 20]),
            scalar(0.5),
            u8s(10),
            Tensor::from_i8(vec![2, 1, 1, 1], vec![2, -3]),
            f32t(&[2], &[1.0, 0.5]),
            Tensor::from_i8(vec![2], vec![0, 0]),
            scalar(1.0),
            u8s(y_zp),
            Tensor::from_i32(vec![2], vec![1, -1]),
        ],
    )
}

#[test]
fn qlinear_conv_per_channel_bias_and_saturation() {
    // ch0: [1, 21] * 0.5 = [0.5, 10.5] -> [0, 10]; ch1: [-1, -31] * 0.25 -> [-0, -8]
    assert_eq!(qconv_1x1(100).as_u8().unwrap(), &[100, 110, 100, 92]);
    assert_eq!(qconv_1x1(0).as_u8().unwrap(), &[0, 10, 0, 0]);
}

#[test]
fn qlinear_conv_padding_reads_the_zero_point() {
    // 3x3 kernel of ones over a 1x1 image with pad 1: only the centre tap sees data.
    let y = run1(
        Op::QLinearConv(ConvAttrs::simple(vec![3, 3], 1, 1, 1)),
        vec![
            Tensor::from_u8(vec![1, 1, 1, 1], vec![7]),
            scalar(1.0),
            u8s(5),
            Tensor::from_u8(vec![1, 1, 3, 3], vec![1; 9]),
            scalar(1.0),
            u8s(0),
            scalar(1.0),
            u8s(0),
        ],
    );
    assert_eq!(y.as_u8().unwrap(), &[2]);
}

fn qbin(
    op: Op,
    a: Tensor,
    a_s: f32,
    a_zp: u8,
    b: Tensor,
    b_s: f32,
    b_zp: u8,
    y_s: f32,
    y_zp: u8,
) -> Tensor {
    run1(
        op,
        vec![
            a,
            scalar(a_s),
            u8s(a_zp),
            b,
            scalar(b_s),
            u8s(b_zp),
            scalar(y_s),
            u8s(y_zp),
        ],
    )
}

#[test]
fn qlinear_add_ties_saturation_broadcast() {
    let y = qbin(
        Op::QLinearAdd,
        Tensor::from_u8(vec![2], vec![10, 20]),
        0.5,
        0,
        Tensor::from_u8(vec![2], vec![5, 7]),
        0.5,
        0,
        1.0,
        0,
    );
    assert_eq!(y.as_u8().unwrap(), &[8, 14]); // 7.5 -> 8, 13.5 -> 14
    let y = qbin(
        Op::QLinearAdd,
        Tensor::from_u8(vec![1], vec![250]),
        1.0,
        0,
        Tensor::from_u8(vec![1], vec![250]),
        1.0,
        0,
        1.0,
        0,
    );
    assert_eq!(y.as_u8().unwrap(), &[255]);
    // per-channel broadcast [1,2,1,2] + [1,2,1,1], zero points on both sides
    let a = Tensor::from_u8(vec![1, 2, 1, 2], vec![1, 2, 3, 4]);
    let b = Tensor::from_u8(vec![1, 2, 1, 1], vec![11, 21]);
    let y = qbin(Op::QLinearAdd, a, 1.0, 1, b, 1.0, 10, 1.0, 3);
    assert_eq!(y.shape, vec![1, 2, 1, 2]);
    // (a-1) + (b-10) + 3
    assert_eq!(y.as_u8().unwrap(), &[4, 5, 16, 17]);
}

#[test]
fn qlinear_mul_values() {
    // (3-1)(4-2) = 4, (5-1)(4-2) = 8; * 0.5 + 10
    let y = qbin(
        Op::QLinearMul,
        Tensor::from_u8(vec![2], vec![3, 5]),
        0.5,
        1,
        Tensor::from_u8(vec![2], vec![4, 4]),
        1.0,
        2,
        1.0,
        10,
    );
    assert_eq!(y.as_u8().unwrap(), &[12, 14]);
    // MLAS adds the output zero point before rounding: 1.5 + 1 = 2.5 -> 2.
    let y = qbin(
        Op::QLinearMul,
        Tensor::from_u8(vec![1], vec![2]),
        0.5,
        1,
        Tensor::from_u8(vec![1], vec![3]),
        1.0,
        0,
        1.0,
        1,
    );
    assert_eq!(y.as_u8().unwrap(), &[2]);
}

#[test]
fn qlinear_global_average_pool_nchw_and_nhwc() {
    let args = |x: Tensor, zp: u8| vec![x, scalar(1.0), u8s(zp), scalar(1.0), u8s(0)];
    let nchw = Tensor::from_u8(vec![1, 1, 2, 2], vec![1, 2, 3, 4]);
    // sum 10 / 4 = 2.5 -> 2
    let y = run1(
        Op::QLinearGlobalAveragePool {
            channels_last: false,
        },
        args(nchw.clone(), 0),
    );
    assert_eq!(
        (y.shape.clone(), y.as_u8().unwrap().to_vec()),
        (vec![1, 1, 1, 1], vec![2])
    );
    // (10 - 4) / 4 = 1.5 -> 2
    let y = run1(
        Op::QLinearGlobalAveragePool {
            channels_last: false,
        },
        args(nchw, 1),
    );
    assert_eq!(y.as_u8().unwrap(), &[2]);
    // NHWC with two channels: [[1,10],[2,20],[3,30],[5,40]] -> 11/4 = 2.75 -> 3, 100/4 = 25
    let nhwc = Tensor::from_u8(vec![1, 2, 2, 2], vec![1, 10, 2, 20, 3, 30, 5, 40]);
    let y = run1(
        Op::QLinearGlobalAveragePool {
            channels_last: true,
        },
        args(nhwc, 0),
    );
    assert_eq!(
        (y.shape.clone(), y.as_u8().unwrap().to_vec()),
        (vec![1, 1, 1, 2], vec![3, 25])
    );
}

#[test]
fn qgemm_float_and_quantized_outputs() {
    let a = Tensor::from_u8(vec![1, 2], vec![1, 2]);
    let b = Tensor::from_u8(vec![2, 1], vec![1, 1]);
    let c = Tensor::from_i32(vec![1], vec![3]);
    let op = Op::QGemm {
        alpha: 1.0,
        trans_a: false,
        trans_b: false,
    };
    // (3 + 3) * (0.5 * 2) = 6
    let y = run_node(
        op.clone(),
        vec![
            Some(a.clone()),
            Some(scalar(0.5)),
            Some(u8s(0)),
            Some(b.clone()),
            Some(scalar(2.0)),
            Some(u8s(0)),
            Some(c.clone()),
        ],
    )
    .unwrap();
    assert_eq!(
        (y[0].dtype(), y[0].as_f32().unwrap().to_vec()),
        (DType::F32, vec![6.0])
    );
    // / 4 = 1.5 -> 2
    let y = run1(
        op,
        vec![
            a.clone(),
            scalar(0.5),
            u8s(0),
            b,
            scalar(2.0),
            u8s(0),
            c.clone(),
            scalar(4.0),
            u8s(0),
        ],
    );
    assert_eq!(y.as_u8().unwrap(), &[2]);
    // trans_b with per-column int8 weights
    let bt = Tensor::from_i8(vec![2, 2], vec![1, 1, 2, -2]); // rows = output columns
    let y = run1(
        Op::QGemm {
            alpha: 1.0,
            trans_a: false,
            trans_b: true,
        },
        vec![
            a,
            scalar(1.0),
            u8s(0),
            bt,
            f32t(&[2], &[1.0, 0.5]),
            Tensor::from_i8(vec![2], vec![0, 0]),
            Tensor::from_i32(vec![2], vec![0, 0]),
            scalar(1.0),
            u8s(10),
        ],
    );
    // col0: 1+2 = 3; col1: 2-4 = -2 * 0.5 = -1; + 10
    assert_eq!(y.as_u8().unwrap(), &[13, 9]);
}

#[test]
fn qlinear_sigmoid_leakyrelu_concat() {
    let x = Tensor::from_u8(vec![3], vec![0, 128, 255]);
    let y = run1(
        Op::QLinearSigmoid,
        vec![x, scalar(1.0 / 16.0), u8s(128), scalar(1.0 / 256.0), u8s(0)],
    );
    // sigmoid(-8) * 256 = 0.09 -> 0; sigmoid(0) * 256 = 128; sigmoid(7.94) * 256 = 255.9 -> 255 (saturated)
    assert_eq!(y.as_u8().unwrap(), &[0, 128, 255]);
    let x = Tensor::from_i8(vec![3], vec![-4, 4, -3]);
    let y = run1(
        Op::QLinearLeakyRelu { alpha: 0.5 },
        vec![x, scalar(1.0), i8s(0), scalar(1.0), i8s(0)],
    );
    assert_eq!(y.as_i8().unwrap(), &[-2, 4, -2]); // -1.5 -> -2
    let y = run1(
        Op::QLinearConcat { axis: 0 },
        vec![
            scalar(1.0),
            u8s(0),
            Tensor::from_u8(vec![2], vec![1, 2]),
            scalar(1.0),
            u8s(0),
            Tensor::from_u8(vec![2], vec![4, 5]),
            scalar(0.5),
            u8s(0),
        ],
    );
    assert_eq!(y.as_u8().unwrap(), &[1, 2, 2, 2]); // 2.5 -> 2
}
