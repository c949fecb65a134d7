//! MatMul/Gemm, normalization, reductions and data-movement ops on hand-computed cases.
mod common;
use common::*;
use pimkit_ir::{Op, PadMode, ReduceKind, SliceAxis, Tensor};

#[test]
fn matmul_batched_broadcast() {
    // a [2,1,2] (two 1x2 rows) x b [2,1] -> [2,1,1]
    let a = f32t(&[2, 1, 2], &[1., 2., 3., 4.]);
    let b = f32t(&[2, 1], &[10., 100.]);
    let y = run1(Op::MatMul, vec![a, b]);
    assert_eq!(y.shape, vec![2, 1, 1]);
    assert_eq!(y.as_f32().unwrap(), &[210., 430.]);
    // 1-D x 2-D: vector-matrix product drops the row axis.
    let v = f32t(&[2], &[1., 1.]);
    let m = f32t(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let y = run1(Op::MatMul, vec![v, m]);
    assert_eq!(y.shape, vec![3]);
    assert_eq!(y.as_f32().unwrap(), &[5., 7., 9.]);
    // integer matmul
    let y = run1(
        Op::MatMul,
        vec![
            Tensor::from_i64(vec![1, 2], vec![2, 3]),
            Tensor::from_i64(vec![2, 1], vec![4, 5]),
        ],
    );
    assert_eq!(y.as_i64().unwrap(), &[23]);
}

#[test]
fn gemm_transposes_alpha_beta() {
    // A^T with A = [[1,3],[2,4]] -> [[1,2],[3,4]]; B^T with B = I; C row-broadcast.
    let a = f32t(&[2, 2], &[1., 3., 2., 4.]);
    let b = f32t(&[2, 2], &[1., 0., 0., 1.]);
    let c = f32t(&[2], &[10., 20.]);
    let y = run1(
        Op::Gemm {
            alpha: 2.0,
            beta: 0.5,
            trans_a: true,
            trans_b: true,
        },
        vec![a, b, c],
    );
    assert_eq!(y.as_f32().unwrap(), &[7., 14., 11., 18.]);
}

#[test]
fn batchnorm_layernorm_softmax() {
    let x = f32t(&[1, 2, 1, 2], &[1., 3., 10., 20.]);
    let y = run1(
        Op::BatchNorm { epsilon: 0.0 },
        vec![
            x,
            f32t(&[2], &[2., 1.]),
            f32t(&[2], &[0., 5.]),
            f32t(&[2], &[1., 10.]),
            f32t(&[2], &[4., 25.]),
        ],
    );
    // ch0: (x-1)/2*2 = x-1 ; ch1: (x-10)/5 + 5
    assert_close(y.as_f32().unwrap(), &[0., 2., 5., 7.], 1e-6);
    let x = f32t(&[2, 2], &[1., 3., -2., 2.]);
    let ln = run1(
        Op::LayerNorm {
            axis: 1,
            epsilon: 0.0,
        },
        vec![x.clone(), f32t(&[2], &[1., 2.]), f32t(&[2], &[0., 1.])],
    );
    assert_close(ln.as_f32().unwrap(), &[-1., 3., -1., 3.], 1e-6);
    let sm = run1(
        Op::Softmax { axis: 1 },
        vec![f32t(&[1, 3], &[0., 0., (2f32).ln()])],
    );
    assert_close(sm.as_f32().unwrap(), &[0.25, 0.25, 0.5], 1e-6);
    let lsm = run1(Op::LogSoftmax { axis: 0 }, vec![f32t(&[2, 1], &[1., 1.])]);
    assert_close(lsm.as_f32().unwrap(), &[-(2f32).ln(), -(2f32).ln()], 1e-6);
}

#[test]
fn reductions() {
    let x = f32t(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let r = |kind, axes: Vec<usize>, keep| {
        run1(
            Op::Reduce {
                kind,
                axes,
                keepdims: keep,
            },
            vec![x.clone()],
        )
    };
    let s = r(ReduceKind::Sum, vec![1], false);
    assert_eq!(
        (s.shape.clone(), s.as_f32().unwrap().to_vec()),
        (vec![2], vec![6., 15.])
    );
    let m = r(ReduceKind::Mean, vec![0], true);
    assert_eq!(
        (m.shape.clone(), m.as_f32().unwrap().to_vec()),
        (vec![1, 3], vec![2.5, 3.5, 4.5])
    );
    assert_eq!(
        r(ReduceKind::Max, vec![0, 1], false).as_f32().unwrap(),
        &[6.]
    );
    assert_eq!(
        r(ReduceKind::Min, vec![1], false).as_f32().unwrap(),
        &[1., 4.]
    );
    assert_eq!(
        r(ReduceKind::Prod, vec![1], false).as_f32().unwrap(),
        &[6., 120.]
    );
    assert_eq!(
        r(ReduceKind::SumSquare, vec![1], false).as_f32().unwrap(),
        &[14., 77.]
    );
    assert_close(
        r(ReduceKind::L2, vec![1], false).as_f32().unwrap(),
        &[14f32.sqrt(), 77f32.sqrt()],
        1e-6,
    );
    // Over an empty axis: the sum is 0 and the mean NaN (numpy, ONNX reference).
    let empty = f32t(&[2, 0], &[]);
    let r0 = |kind| {
        run1(
            Op::Reduce {
                kind,
                axes: vec![1],
                keepdims: false,
            },
            vec![empty.clone()],
        )
    };
    assert_eq!(r0(ReduceKind::Sum).as_f32().unwrap(), &[0., 0.]);
    assert!(
        r0(ReduceKind::Mean)
            .as_f32()
            .unwrap()
            .iter()
            .all(|v| v.is_nan())
    );
}

#[test]
fn transpose_reshape_concat_split() {
    let x = f32t(&[2, 3], &[1., 2., 3., 4., 5., 6.]);
    let t = run1(Op::Transpose { perm: vec![1, 0] }, vec![x.clone()]);
    assert_eq!(
        (t.shape.clone(), t.as_f32().unwrap().to_vec()),
        (vec![3, 2], vec![1., 4., 2., 5., 3., 6.])
    );
    let r = run1(Op::Reshape { shape: vec![3, 2] }, vec![x.clone()]);
    assert_eq!(r.as_f32().unwrap(), x.as_f32().unwrap());
    let c = run1(
        Op::Concat { axis: 1 },
        vec![x.clone(), f32t(&[2, 1], &[7., 8.])],
    );
    assert_eq!(c.as_f32().unwrap(), &[1., 2., 3., 7., 4., 5., 6., 8.]);
    let parts = run_node(
        Op::Split {
            axis: 1,
            sizes: vec![1, 2],
        },
        vec![Some(x)],
    )
    .unwrap();
    assert_eq!(parts[0].as_f32().unwrap(), &[1., 4.]);
    assert_eq!(parts[1].as_f32().unwrap(), &[2., 3., 5., 6.]);
}

#[test]
fn slice_with_negative_step() {
    let x = f32t(&[5], &[0., 1., 2., 3., 4.]);
    // x[4:0:-2] = [4, 2]
    let y = run1(
        Op::Slice {
            axes: vec![SliceAxis {
                axis: 0,
                start: 4,
                end: 0,
                step: -2,
            }],
        },
        vec![x.clone()],
    );
    assert_eq!(y.as_f32().unwrap(), &[4., 2.]);
    // x[::-1] (end -1 means "before index 0" after clamping)
    let y = run1(
        Op::Slice {
            axes: vec![SliceAxis {
                axis: 0,
                start: 4,
                end: -1,
                step: -1,
            }],
        },
        vec![x.clone()],
    );
    assert_eq!(y.as_f32().unwrap(), &[4., 3., 2., 1., 0.]);
    let y = run1(
        Op::Slice {
            axes: vec![SliceAxis {
                axis: 0,
                start: 1,
                end: 5,
                step: 3,
            }],
        },
        vec![x],
    );
    assert_eq!(y.as_f32().unwrap(), &[1., 4.]);
}

#[test]
fn gather_negative_indices_and_out_of_range() {
    let x = f32t(&[3, 2], &[1., 2., 3., 4., 5., 6.]);
    let y = run1(
        Op::Gather { axis: 0 },
        vec![x.clone(), Tensor::from_i64(vec![2], vec![-1, 0])],
    );
    assert_eq!(
        (y.shape.clone(), y.as_f32().unwrap().to_vec()),
        (vec![2, 2], vec![5., 6., 1., 2.])
    );
    let y = run1(
        Op::Gather { axis: 1 },
        vec![x.clone(), Tensor::from_i32(vec![], vec![1])],
    );
    assert_eq!(
        (y.shape.clone(), y.as_f32().unwrap().to_vec()),
        (vec![3], vec![2., 4., 6.])
    );
    let e = run_node(
        Op::Gather { axis: 0 },
        vec![Some(x), Some(Tensor::from_i64(vec![1], vec![3]))],
    )
    .unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
}

#[test]
fn expand_tile_pad_argmax() {
    let x = f32t(&[2, 1], &[1., 2.]);
    let e = run1(Op::Expand { shape: vec![2, 3] }, vec![x.clone()]);
    assert_eq!(e.as_f32().unwrap(), &[1., 1., 1., 2., 2., 2.]);
    let t = run1(
        Op::Tile {
            repeats: vec![2, 2],
        },
        vec![x],
    );
    assert_eq!(t.as_f32().unwrap(), &[1., 1., 2., 2., 1., 1., 2., 2.]);
    let v = f32t(&[4], &[1., 2., 3., 4.]);
    let pad = |mode| {
        run1(
            Op::Pad {
                pads: vec![2, 2],
                mode,
                value: 9.0,
            },
            vec![v.clone()],
        )
    };
    assert_eq!(
        pad(PadMode::Constant).as_f32().unwrap(),
        &[9., 9., 1., 2., 3., 4., 9., 9.]
    );
    assert_eq!(
        pad(PadMode::Reflect).as_f32().unwrap(),
        &[3., 2., 1., 2., 3., 4., 3., 2.]
    );
    assert_eq!(
        pad(PadMode::Wrap).as_f32().unwrap(),
        &[3., 4., 1., 2., 3., 4., 1., 2.]
    );
    assert_eq!(
        pad(PadMode::Edge).as_f32().unwrap(),
        &[1., 1., 1., 2., 3., 4., 4., 4.]
    );
    let a = run1(
        Op::ArgMax {
            axis: 1,
            keepdims: false,
            select_last: false,
        },
        vec![f32t(&[2, 3], &[1., 5., 5., 7., 0., 2.])],
    );
    assert_eq!(a.as_i64().unwrap(), &[1, 0]);
    let a = run1(
        Op::ArgMax {
            axis: 1,
            keepdims: false,
            select_last: true,
        },
        vec![f32t(&[2, 3], &[1., 5., 5., 7., 0., 7.])],
    );
    assert_eq!(a.as_i64().unwrap(), &[2, 2], "last of the tied maxima");
}
