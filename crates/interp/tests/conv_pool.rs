//! Conv against a naive direct convolution (random shapes, strides, asymmetric pads,
//! dilations, groups, 1-D and 2-D), depthwise, and pooling (ceil_mode, pads).
mod common;
use common::*;
use pimkit_ir::{ConvAttrs, Op, PoolAttrs, PoolKind, Tensor};
use proptest::prelude::*;

/// Plain 2-D convolution, written directly from the definition, in f64.
#[allow(clippy::too_many_arguments)]
fn naive_conv2d(
    x: &[f32],
    n: usize,
    c: usize,
    h: usize,
    w: usize,
    wt: &[f32],
    m: usize,
    kh: usize,
    kw: usize,
    bias: &[f32],
    s: [usize; 2],
    p: [usize; 4],
    d: [usize; 2],
    group: usize,
) -> (Vec<f32>, usize, usize) {
    let oh = (h + p[0] + p[2] - d[0] * (kh - 1) - 1) / s[0] + 1;
    let ow = (w + p[1] + p[3] - d[1] * (kw - 1) - 1) / s[1] + 1;
    let (cg, mg) = (c / group, m / group);
    let mut out = vec![0f32; n * m * oh * ow];
    for b in 0..n {
        for oc in 0..m {
            let g = oc / mg;
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut acc = bias.get(oc).copied().unwrap_or(0.0) as f64;
                    for ci in 0..cg {
                        let ic = g * cg + ci;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (oy * s[0] + ky * d[0]) as i64 - p[0] as i64;
                                let ix = (ox * s[1] + kx * d[1]) as i64 - p[1] as i64;
                                if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                                    continue;
                                }
                                let xv = x[((b * c + ic) * h + iy as usize) * w + ix as usize];
                                let wv = wt[((oc * cg + ci) * kh + ky) * kw + kx];
                                acc += xv as f64 * wv as f64;
                            }
                        }
                    }
                    out[((b * m + oc) * oh + oy) * ow + ox] = acc as f32;
                }
            }
        }
    }
    (out, oh, ow)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn conv2d_matches_naive(
        n in 1usize..3, cg in 1usize..4, mg in 1usize..4, group in 1usize..4,
        h in 1usize..9, w in 1usize..9, kh in 1usize..4, kw in 1usize..4,
        sh in 1usize..3, sw in 1usize..12, dh in 1usize..3, dw in 1usize..3,
        pads in proptest::array::uniform4(0usize..3), with_bias: bool, seed in 0u64..1000,
    ) {
        let (c, m) = (cg * group, mg * group);
        prop_assume!(h + pads[0] + pads[2] > dh * (kh - 1));
        prop_assume!(w + pads[1] + pads[3] > dw * (kw - 1));
        let xv = rand_f32(n * c * h * w, seed);
        let wv = rand_f32(m * cg * kh * kw, seed + 1);
        let bv = if with_bias { rand_f32(m, seed + 2) } else { vec![] };
        let (want, oh, ow) = naive_conv2d(&xv, n, c, h, w, &wv, m, kh, kw, &bv,
            [sh, sw], pads, [dh, dw], group);
        let attrs = ConvAttrs { kernel: vec![kh, kw], strides: vec![sh, sw],
            pads: pads.to_vec(), dilations: vec![dh, dw], group };
        let mut ins = vec![Some(f32t(&[n, c, h, w], &xv)), Some(f32t(&[m, cg, kh, kw], &wv))];
        if with_bias { ins.push(Some(f32t(&[m], &bv))); }
        let y = run_node(Op::Conv(attrs), ins).unwrap().remove(0);
        prop_assert_eq!(&y.shape, &vec![n, m, oh, ow]);
        assert_close(y.as_f32().unwrap(), &want, 1e-5);
    }

    #[test]
    fn conv1d_matches_naive(
        c in 1usize..4, m in 1usize..4, l in 1usize..12, k in 1usize..4,
        s in 1usize..3, d in 1usize..3, pb in 0usize..3, pe in 0usize..3, seed in 0u64..1000,
    ) {
        prop_assume!(l + pb + pe > d * (k - 1));
        let xv = rand_f32(c * l, seed);
        let wv = rand_f32(m * c * k, seed + 7);
        // A 1-D conv is the 2-D conv with H = 1.
        let (want, _, ol) = naive_conv2d(&xv, 1, c, 1, l, &wv, m, 1, k, &[], [1, s], [0, pb, 0, pe], [1, d], 1);
        let attrs = ConvAttrs { kernel: vec![k], strides: vec![s], pads: vec![pb, pe],
            dilations: vec![d], group: 1 };
        let y = run1(Op::Conv(attrs), vec![f32t(&[1, c, l], &xv), f32t(&[m, c, k], &wv)]);
        prop_assert_eq!(&y.shape, &vec![1, m, ol]);
        assert_close(y.as_f32().unwrap(), &want, 1e-5);
    }
}

/// A stride far beyond the input (2^31 in a hostile file) is one output position, not a
/// table sized by the stride.
#[test]
fn a_stride_past_the_input_sizes_nothing_by_the_stride() {
    let (c, m, h, w) = (2, 3, 5, 7);
    let xv = rand_f32(c * h * w, 3);
    let wv = rand_f32(m * c * 9, 4);
    let s = 1usize << 31;
    let (want, oh, ow) = naive_conv2d(
        &xv,
        1,
        c,
        h,
        w,
        &wv,
        m,
        3,
        3,
        &[],
        [s, s],
        [1, 1, 1, 1],
        [1, 1],
        1,
    );
    assert_eq!((oh, ow), (1, 1));
    let attrs = ConvAttrs {
        kernel: vec![3, 3],
        strides: vec![s, s],
        pads: vec![1; 4],
        dilations: vec![1, 1],
        group: 1,
    };
    let y = run1(
        Op::Conv(attrs),
        vec![f32t(&[1, c, h, w], &xv), f32t(&[m, c, 3, 3], &wv)],
    );
    assert_eq!(y.shape, vec![1, m, 1, 1]);
    assert_close(y.as_f32().unwrap(), &want, 1e-5);
}

#[test]
fn depthwise_3x3_stride2_matches_naive() {
    let (c, h, w) = (8, 9, 7);
    let xv = rand_f32(c * h * w, 3);
    let wv = rand_f32(c * 9, 4);
    let bv = rand_f32(c, 5);
    let (want, oh, ow) = naive_conv2d(
        &xv,
        1,
        c,
        h,
        w,
        &wv,
        c,
        3,
        3,
        &bv,
        [2, 2],
        [1, 1, 1, 1],
        [1, 1],
        c,
    );
    let a = ConvAttrs::simple(vec![3, 3], 2, 1, c);
    let y = run1(
        Op::Conv(a),
        vec![
            f32t(&[1, c, h, w], &xv),
            f32t(&[c, 1, 3, 3], &wv),
            f32t(&[c], &bv),
        ],
    );
    assert_eq!(y.shape, vec![1, c, oh, ow]);
    assert_close(y.as_f32().unwrap(), &want, 1e-5);
}

#[test]
fn conv_hand_computed() {
    // 3x3 input 1..9, 2x2 kernel of ones, no pad: sums of 2x2 windows.
    let x = f32t(&[1, 1, 3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.]);
    let w = f32t(&[1, 1, 2, 2], &[1., 1., 1., 1.]);
    let y = run1(Op::Conv(ConvAttrs::simple(vec![2, 2], 1, 0, 1)), vec![x, w]);
    assert_eq!(y.as_f32().unwrap(), &[12., 16., 24., 28.]);
}

#[test]
fn conv3d_runs_and_matches_sum() {
    // 3-D conv with a 2x2x2 kernel of ones over ones: every output is 8.
    let x = Tensor::from_f32(vec![1, 1, 3, 3, 3], vec![1.0; 27]);
    let w = Tensor::from_f32(vec![1, 1, 2, 2, 2], vec![1.0; 8]);
    let y = run1(
        Op::Conv(ConvAttrs::simple(vec![2, 2, 2], 1, 0, 1)),
        vec![x, w],
    );
    assert_eq!(y.shape, vec![1, 1, 2, 2, 2]);
    assert!(y.as_f32().unwrap().iter().all(|&v| v == 8.0));
}

fn pool_attrs(kind: PoolKind, k: usize, s: usize, p: usize, ceil: bool, cip: bool) -> PoolAttrs {
    PoolAttrs {
        kind,
        kernel: vec![k, k],
        strides: vec![s, s],
        pads: vec![p; 4],
        dilations: vec![1, 1],
        ceil_mode: ceil,
        count_include_pad: cip,
    }
}

#[test]
fn maxpool_ceil_mode_keeps_partial_window() {
    // 1x1x4x4 = 0..15, kernel 3 stride 2: floor -> 1x1, ceil -> 2x2.
    let x = f32t(
        &[1, 1, 4, 4],
        &(0..16).map(|v| v as f32).collect::<Vec<_>>(),
    );
    let y = run1(
        Op::Pool(pool_attrs(PoolKind::Max, 3, 2, 0, false, false)),
        vec![x.clone()],
    );
    assert_eq!(y.as_f32().unwrap(), &[10.0]);
    let y = run1(
        Op::Pool(pool_attrs(PoolKind::Max, 3, 2, 0, true, false)),
        vec![x],
    );
    assert_eq!(y.shape, vec![1, 1, 2, 2]);
    assert_eq!(y.as_f32().unwrap(), &[10.0, 11.0, 14.0, 15.0]);
}

#[test]
fn avgpool_pad_counting() {
    // 2x2 input [1 2; 3 4], kernel 2, stride 1, pad 1 -> 3x3 output.
    let x = f32t(&[1, 1, 2, 2], &[1., 2., 3., 4.]);
    let ex = run1(
        Op::Pool(pool_attrs(PoolKind::Avg, 2, 1, 1, false, false)),
        vec![x.clone()],
    );
    assert_eq!(
        ex.as_f32().unwrap(),
        &[1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0]
    );
    let inc = run1(
        Op::Pool(pool_attrs(PoolKind::Avg, 2, 1, 1, false, true)),
        vec![x],
    );
    assert_eq!(
        inc.as_f32().unwrap(),
        &[0.25, 0.75, 0.5, 1.0, 2.5, 1.5, 0.75, 1.75, 1.0]
    );
}

#[test]
fn maxpool_on_u8_and_global_pools() {
    let x = Tensor::from_u8(vec![1, 1, 2, 2], vec![3, 200, 7, 9]);
    let y = run1(
        Op::Pool(pool_attrs(PoolKind::Max, 2, 2, 0, false, false)),
        vec![x],
    );
    assert_eq!(y.as_u8().unwrap(), &[200]);
    let x = f32t(&[1, 2, 2, 2], &[1., 2., 3., 4., -1., -2., -3., -8.]);
    let avg = run1(Op::GlobalPool(PoolKind::Avg), vec![x.clone()]);
    assert_eq!(avg.shape, vec![1, 2, 1, 1]);
    assert_eq!(avg.as_f32().unwrap(), &[2.5, -3.5]);
    let mx = run1(Op::GlobalPool(PoolKind::Max), vec![x]);
    assert_eq!(mx.as_f32().unwrap(), &[4.0, -1.0]);
}

/// 2-D pooling written from the definition: windows in (ky, kx) order over the taps
/// inside the input; max keeps the first largest non-NaN tap (f32::MIN when none),
/// average sums in f32 in that order and divides by the taps inside the input or, with
/// `count_include_pad`, inside the padded input.
fn naive_pool2d(x: &[f32], [h, w]: [usize; 2], a: &PoolAttrs, [oh, ow]: [usize; 2]) -> Vec<f32> {
    let mut out = Vec::new();
    for oy in 0..oh {
        for ox in 0..ow {
            let (mut mx, mut sum, mut inside, mut padded) = (f32::MIN, 0f32, 0usize, 0usize);
            for ky in 0..a.kernel[0] {
                for kx in 0..a.kernel[1] {
                    let iy = (oy * a.strides[0] + ky * a.dilations[0]) as i64 - a.pads[0] as i64;
                    let ix = (ox * a.strides[1] + kx * a.dilations[1]) as i64 - a.pads[1] as i64;
                    let in_pad = iy < (h + a.pads[2]) as i64 && ix < (w + a.pads[3]) as i64;
                    padded += in_pad as usize;
                    if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                        continue;
                    }
                    let v = x[iy as usize * w + ix as usize];
                    inside += 1;
                    sum += v;
                    if v > mx {
                        mx = v;
                    }
                }
            }
            out.push(match a.kind {
                PoolKind::Max => mx,
                _ => {
                    let cnt = if a.count_include_pad { padded } else { inside };
                    if cnt == 0 { 0.0 } else { sum / cnt as f32 }
                }
            });
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The vectorized 2-D pooling (stride phases, contiguous taps) against the
    /// definition, bit for bit, on inputs with NaNs and signed zeros.
    #[test]
    fn pool2d_matches_naive_bits(
        max: bool, c in 1usize..3, h in 1usize..10, w in 1usize..12,
        kh in 1usize..4, kw in 1usize..4, sh in 1usize..4, sw in 1usize..4,
        dh in 1usize..3, dw in 1usize..3, pads in proptest::array::uniform4(0usize..3),
        ceil: bool, cip: bool, seed in 0u64..1000,
    ) {
        prop_assume!(h + pads[0] + pads[2] > dh * (kh - 1));
        prop_assume!(w + pads[1] + pads[3] > dw * (kw - 1));
        prop_assume!(pads[0] < kh && pads[2] < kh && pads[1] < kw && pads[3] < kw);
        let mut xv = rand_f32(c * h * w, seed);
        for (i, v) in xv.iter_mut().enumerate() {
            match (i as u64 * 7 + seed) % 11 {
                0 => *v = f32::NAN,
                1 => *v = 0.0,
                2 => *v = -0.0,
                _ => {}
            }
        }
        let kind = if max { PoolKind::Max } else { PoolKind::Avg };
        let a = PoolAttrs { kind, kernel: vec![kh, kw], strides: vec![sh, sw],
            pads: pads.to_vec(), dilations: vec![dh, dw], ceil_mode: ceil,
            count_include_pad: cip };
        let y = run1(Op::Pool(a.clone()), vec![f32t(&[1, c, h, w], &xv)]);
        let (oh, ow) = (y.shape[2], y.shape[3]);
        let got = y.as_f32().unwrap();
        for p in 0..c {
            let want = naive_pool2d(&xv[p * h * w..][..h * w], [h, w], &a, [oh, ow]);
            for (i, (g, e)) in got[p * oh * ow..][..oh * ow].iter().zip(&want).enumerate() {
                prop_assert!(g.to_bits() == e.to_bits() || (g.is_nan() && e.is_nan()),
                    "plane {} out {}: got {} want {}", p, i, g, e);
            }
        }
    }
}
