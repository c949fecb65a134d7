//! Elementwise ops: hand-computed values, numpy broadcasting, dtypes.
mod common;
use common::*;
use half::f16;
use pimkit_ir::{BinaryOp, DType, Op, Tensor, UnaryOp};

#[test]
fn add_broadcasts_like_numpy() {
    // [2,1] + [3] -> [2,3]
    let a = f32t(&[2, 1], &[10.0, 20.0]);
    let b = f32t(&[3], &[1.0, 2.0, 3.0]);
    let y = run1(Op::Binary(BinaryOp::Add), vec![a, b]);
    assert_eq!(y.shape, vec![2, 3]);
    assert_eq!(y.as_f32().unwrap(), &[11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
}

#[test]
fn sub_with_scalar_on_the_left() {
    let a = scalar(1.0);
    let b = f32t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let y = run1(Op::Binary(BinaryOp::Sub), vec![a, b]);
    assert_eq!(y.as_f32().unwrap(), &[0.0, -1.0, -2.0, -3.0]);
}

#[test]
fn middle_axis_broadcast() {
    // [2,1,2] * [1,3,1] -> [2,3,2]
    let a = f32t(&[2, 1, 2], &[1.0, 2.0, 3.0, 4.0]);
    let b = f32t(&[1, 3, 1], &[1.0, 10.0, 100.0]);
    let y = run1(Op::Binary(BinaryOp::Mul), vec![a, b]);
    assert_eq!(
        y.as_f32().unwrap(),
        &[
            1.0, 2.0, 10.0, 20.0, 100.0, 200.0, 3.0, 4.0, 30.0, 40.0, 300.0, 400.0
        ]
    );
}

#[test]
fn comparisons_yield_bool_and_where_selects() {
    let a = f32t(&[3], &[1.0, 5.0, 3.0]);
    let b = scalar(3.0);
    let c = run1(Op::Binary(BinaryOp::Less), vec![a.clone(), b.clone()]);
    assert_eq!(c.as_bool().unwrap(), &[true, false, false]);
    let ge = run1(Op::Binary(BinaryOp::GreaterOrEqual), vec![a.clone(), b]);
    assert_eq!(ge.as_bool().unwrap(), &[false, true, true]);
    let y = run1(Op::Where, vec![c, a, scalar(-1.0)]);
    assert_eq!(y.as_f32().unwrap(), &[1.0, -1.0, -1.0]);
}

#[test]
fn integer_arithmetic_wraps_and_truncates() {
    let a = Tensor::from_u8(vec![2], vec![250, 3]);
    let b = Tensor::from_u8(vec![2], vec![10, 2]);
    let y = run1(Op::Binary(BinaryOp::Add), vec![a.clone(), b.clone()]);
    assert_eq!(y.as_u8().unwrap(), &[4, 5]); // 260 wraps to 4
    let d = run1(
        Op::Binary(BinaryOp::Div),
        vec![
            Tensor::from_i64(vec![2], vec![-7, 9]),
            Tensor::from_i64(vec![], vec![2]),
        ],
    );
    assert_eq!(d.as_i64().unwrap(), &[-3, 4]);
}

#[test]
fn unary_known_values() {
    let x = f32t(&[4], &[-2.0, -0.5, 0.0, 1.0]);
    let relu = run1(Op::Unary(UnaryOp::Relu), vec![x.clone()]);
    assert_eq!(relu.as_f32().unwrap(), &[0.0, 0.0, 0.0, 1.0]);
    let sig = run1(Op::Unary(UnaryOp::Sigmoid), vec![x.clone()]);
    // 1/(1+e^2), 1/(1+e^0.5), 0.5, 1/(1+e^-1)
    assert_close(
        sig.as_f32().unwrap(),
        &[0.119_202_92, 0.377_540_67, 0.5, 0.731_058_6],
        1e-6,
    );
    let hs = run1(Op::Unary(UnaryOp::HardSwish), vec![x.clone()]);
    // x * clamp(x/6 + 0.5, 0, 1)
    assert_close(
        hs.as_f32().unwrap(),
        &[-2.0 / 6.0, -0.5 * (5.0 / 12.0), 0.0, 1.0 * (4.0 / 6.0)],
        1e-6,
    );
    let lr = run1(
        Op::Unary(UnaryOp::LeakyRelu { alpha: 0.1 }),
        vec![x.clone()],
    );
    assert_close(lr.as_f32().unwrap(), &[-0.2, -0.05, 0.0, 1.0], 1e-7);
    let elu = run1(Op::Unary(UnaryOp::Elu { alpha: 1.0 }), vec![x.clone()]);
    assert_close(
        elu.as_f32().unwrap(),
        &[(-2f32).exp() - 1.0, (-0.5f32).exp() - 1.0, 0.0, 1.0],
        1e-7,
    );
    let sp = run1(Op::Unary(UnaryOp::Softplus), vec![x]);
    assert_close(
        sp.as_f32().unwrap(),
        &[0.126_928, 0.474_077_2, std::f32::consts::LN_2, 1.313_261_7],
        1e-6,
    );
}

#[test]
fn gelu_exact_and_tanh() {
    let x = f32t(&[3], &[-1.0, 0.0, 1.0]);
    let g = run1(Op::Unary(UnaryOp::Gelu { tanh: false }), vec![x.clone()]);
    // 0.5 * x * (1 + erf(x / sqrt 2)); erf(1/sqrt2) = 0.682689492
    assert_close(
        g.as_f32().unwrap(),
        &[-0.158_655_25, 0.0, 0.841_344_7],
        1e-6,
    );
    let t = run1(Op::Unary(UnaryOp::Gelu { tanh: true }), vec![x]);
    assert_close(t.as_f32().unwrap(), &[-0.158_808, 0.0, 0.841_192], 1e-5);
}

#[test]
fn f16_is_computed_in_f32_and_rounded() {
    let x = Tensor::from_f16(vec![2], vec![f16::from_f32(1.0), f16::from_f32(3.0)]);
    let y = run1(Op::Unary(UnaryOp::Sqrt), vec![x]);
    assert_eq!(y.dtype(), DType::F16);
    let v = y.as_f16().unwrap();
    assert_eq!(v[0], f16::from_f32(1.0));
    assert_eq!(v[1], f16::from_f32(3f32.sqrt()));
}

#[test]
fn clip_and_cast() {
    let x = f32t(&[4], &[-1.0, 2.5, 7.0, -2.7]);
    let c = run1(
        Op::Clip {
            min: Some(0.0),
            max: Some(6.0),
        },
        vec![x.clone()],
    );
    assert_eq!(c.as_f32().unwrap(), &[0.0, 2.5, 6.0, 0.0]);
    let i = run1(Op::cast(DType::I32), vec![x.clone()]);
    assert_eq!(i.as_i32().unwrap(), &[-1, 2, 7, -2]); // toward zero
    let b = run1(Op::cast(DType::Bool), vec![f32t(&[2], &[0.0, 0.3])]);
    assert_eq!(b.as_bool().unwrap(), &[false, true]);
    let ci = run1(
        Op::Clip {
            min: Some(-3.0),
            max: Some(3.0),
        },
        vec![Tensor::from_i8(vec![3], vec![-100, 2, 100])],
    );
    assert_eq!(ci.as_i8().unwrap(), &[-3, 2, 3]);
}

#[test]
fn pow_with_mixed_types_and_mod() {
    let y = run1(
        Op::Binary(BinaryOp::Pow),
        vec![
            f32t(&[3], &[2.0, 3.0, 4.0]),
            Tensor::from_i64(vec![], vec![2]),
        ],
    );
    assert_eq!(y.as_f32().unwrap(), &[4.0, 9.0, 16.0]);
    let m = run1(
        Op::Binary(BinaryOp::Mod { fmod: true }),
        vec![f32t(&[2], &[-7.5, 7.5]), scalar(2.0)],
    );
    assert_eq!(m.as_f32().unwrap(), &[-1.5, 1.5]);
}

#[test]
fn clip_and_relu_on_an_intermediate_equal_the_kernels() {
    // x -> Neg -> {Clip, Relu}: the executor computes Clip/Relu in the buffer of a value
    // they read last. Results must equal the kernels' on a graph input (NaN, ±inf, ±0),
    // and a value another node still reads must not change.
    use pimkit_ir::Graph;
    let v = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        -7.5,
        3.25,
        9.0,
    ];
    let x = f32t(&[8], &v);
    let neg: Vec<f32> = v.iter().map(|a| -a).collect();
    let clip = Op::Clip {
        min: Some(-1.0),
        max: Some(6.0),
    };
    let want_clip = run1(clip.clone(), vec![f32t(&[8], &neg)]);
    for shared in [false, true] {
        let mut g = Graph::new("t");
        let i = g.add_input("x", x.ty());
        let n = g
            .add_node("neg", Op::Unary(UnaryOp::Neg), vec![Some(i)])
            .unwrap()[0];
        let c = g.add_node("clip", clip.clone(), vec![Some(n)]).unwrap()[0];
        let r = g
            .add_node("relu", Op::Unary(UnaryOp::Relu), vec![Some(c)])
            .unwrap()[0];
        g.outputs = vec![r];
        if shared {
            // Another reader of `neg` after Clip, and `c` kept as an output too.
            let a = g
                .add_node("abs", Op::Unary(UnaryOp::Abs), vec![Some(n)])
                .unwrap()[0];
            g.outputs = vec![r, c, a];
        }
        let feeds = std::collections::HashMap::from([("x".to_string(), x.clone())]);
        let out = pimkit_interp::run(&g, &feeds).unwrap();
        let relu_of_clip = run1(Op::Unary(UnaryOp::Relu), vec![want_clip.clone()]);
        let bits = |t: &Tensor| {
            t.as_f32()
                .unwrap()
                .iter()
                .map(|f| f.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&out[0]), bits(&relu_of_clip), "shared={shared}");
        if shared {
            assert_eq!(bits(&out[1]), bits(&want_clip));
            let abs: Vec<u32> = neg.iter().map(|a| a.abs().to_bits()).collect();
            assert_eq!(bits(&out[2]), abs, "Neg's output was changed in place");
        }
    }
}
