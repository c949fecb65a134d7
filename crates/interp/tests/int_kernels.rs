//! The packed integer kernels through the public API against direct integer loops:
//! QLinearConv / ConvInteger (random 1-D/2-D geometry, groups, depthwise with channel
//! multipliers, u8/i8 activations and weights, per-channel zero points and scales),
//! QLinearMatMul / MatMulInteger / QGemm (random shapes, transposes, per-row and
//! per-column zero points), and 2-D pooling against a direct window loop. Integer
//! results must match exactly. Set `PIMKIT_ISA=portable|avx2|avxvnni|avx512vnni` to
//! run them on one kernel family.
mod common;
use common::*;
use pimkit_interp::quant::{output_scale, requant_f32};
use pimkit_ir::{ConvAttrs, Op, PoolAttrs, PoolKind, Tensor};
use proptest::prelude::*;

/// Deterministic bytes (xorshift).
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 32) as u8
        })
        .collect()
}

fn tensor(shape: &[usize], v: &[u8], signed: bool) -> Tensor {
    if signed {
        Tensor::from_i8(shape.to_vec(), v.iter().map(|&b| b as i8).collect())
    } else {
        Tensor::from_u8(shape.to_vec(), v.to_vec())
    }
}

fn val(b: u8, signed: bool) -> i32 {
    if signed { b as i8 as i32 } else { b as i32 }
}

fn zp_tensor(z: &[i32], signed: bool) -> Tensor {
    let shape = if z.len() == 1 { vec![] } else { vec![z.len()] };
    let b: Vec<u8> = z.iter().map(|&v| v as u8).collect();
    tensor(&shape, &b, signed)
}

/// Direct int32 convolution sums of (x - xz)(w - wz[oc]), padding contributing 0.
#[allow(clippy::too_many_arguments)]
fn naive_int_conv(
    x: &[i32],
    (c, h, w): (usize, usize, usize),
    wt: &[i32],
    (m, kh, kw): (usize, usize, usize),
    xz: i32,
    wz: &[i32],
    s: [usize; 2],
    p: [usize; 4],
    d: [usize; 2],
    group: usize,
) -> (Vec<i32>, usize, usize) {
    let oh = (h + p[0] + p[2] - d[0] * (kh - 1) - 1) / s[0] + 1;
    let ow = (w + p[1] + p[3] - d[1] * (kw - 1) - 1) / s[1] + 1;
    let (cg, mg) = (c / group, m / group);
    let mut out = vec![0i32; m * oh * ow];
    for oc in 0..m {
        let g = oc / mg;
        for oy in 0..oh {
            for ox in 0..ow {
                let mut acc = 0i32;
                for ci in 0..cg {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = (oy * s[0] + ky * d[0]) as i64 - p[0] as i64;
                            let ix = (ox * s[1] + kx * d[1]) as i64 - p[1] as i64;
                            if iy < 0 || ix < 0 || iy >= h as i64 || ix >= w as i64 {
                                continue;
                            }
                            let xv = x[((g * cg + ci) * h + iy as usize) * w + ix as usize];
                            let wv = wt[((oc * cg + ci) * kh + ky) * kw + kx];
                            acc = acc.wrapping_add((xv - xz).wrapping_mul(wv - wz[oc]));
                        }
                    }
                }
                out[(oc * oh + oy) * ow + ox] = acc;
            }
        }
    }
    (out, oh, ow)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn qlinear_conv_and_conv_integer_match_direct_sums(
        cg in 1usize..5, mg in 1usize..4, group in 1usize..4, one_d: bool,
        h in 1usize..10, w in 1usize..12, kh in 1usize..4, kw in 1usize..4,
        sh in 1usize..3, sw in 1usize..3, dh in 1usize..3, dw in 1usize..3,
        pads in proptest::array::uniform4(0usize..3), xs: bool, ws: bool, per_ch: bool,
        seed in 0u64..10_000,
    ) {
        let (h, kh, sh, dh) = if one_d { (1, 1, 1, 1) } else { (h, kh, sh, dh) };
        let pads = if one_d { [0, pads[1], 0, pads[3]] } else { pads };
        let (c, m) = (cg * group, mg * group);
        prop_assume!(h + pads[0] + pads[2] > dh * (kh - 1));
        prop_assume!(w + pads[1] + pads[3] > dw * (kw - 1));
        let xb = bytes(c * h * w, seed);
        let wb = bytes(m * cg * kh * kw, seed + 1);
        let xz = val(bytes(1, seed + 2)[0], xs);
        let wz: Vec<i32> = bytes(if per_ch { m } else { 1 }, seed + 3).iter().map(|&b| val(b, ws)).collect();
        let wz_m: Vec<i32> = (0..m).map(|i| wz[if per_ch { i } else { 0 }]).collect();
        let xi: Vec<i32> = xb.iter().map(|&b| val(b, xs)).collect();
        let wi: Vec<i32> = wb.iter().map(|&b| val(b, ws)).collect();
        let (want, oh, ow) = naive_int_conv(&xi, (c, h, w), &wi, (m, kh, kw), xz, &wz_m,
            [sh, sw], pads, [dh, dw], group);
        let (xshape, wshape, attrs) = if one_d {
            (vec![1, c, w], vec![m, cg, kw], ConvAttrs { kernel: vec![kw], strides: vec![sw],
                pads: vec![pads[1], pads[3]], dilations: vec![dw], group })
        } else {
            (vec![1, c, h, w], vec![m, cg, kh, kw], ConvAttrs { kernel: vec![kh, kw],
                strides: vec![sh, sw], pads: pads.to_vec(), dilations: vec![dh, dw], group })
        };
        let xt = tensor(&xshape, &xb, xs);
        let wt = tensor(&wshape, &wb, ws);
        let y = run1(Op::ConvInteger(attrs.clone()), vec![xt.clone(), wt.clone(),
            zp_tensor(&[xz], xs), zp_tensor(&wz, ws)]);
        prop_assert_eq!(y.as_i32().unwrap(), &want[..]);
        // QLinearConv: per-channel scales and bias, output u8 or i8.
        let (x_s, y_s) = (0.0173f32, 0.091f32);
        let w_s: Vec<f32> = (0..m).map(|i| 0.002 + 0.0007 * i as f32).collect();
        let bias: Vec<i32> = (0..m).map(|i| i as i32 * 97 - 150).collect();
        let (yz, ys) = (val(bytes(1, seed + 4)[0], !xs), !xs);
        let (lo, hi) = if ys { (-128, 127) } else { (0, 255) };
        let q = run1(Op::QLinearConv(attrs), vec![xt, scalar(x_s), zp_tensor(&[xz], xs), wt,
            Tensor::from_f32(vec![m], w_s.clone()), zp_tensor(&wz, ws), scalar(y_s),
            zp_tensor(&[yz], ys), Tensor::from_i32(vec![m], bias.clone())]);
        let got = q.to_i32_vec();
        let ov = oh * ow;
        for (i, (&g, &a)) in got.iter().zip(&want).enumerate() {
            let oc = i / ov;
            let e = requant_f32(a.wrapping_add(bias[oc]), output_scale(x_s, w_s[oc], y_s), yz, lo, hi);
            prop_assert_eq!(g, e, "element {}", i);
        }
    }

    #[test]
    fn integer_matmuls_match_direct_sums(
        m in 1usize..40, k in 1usize..70, n in 1usize..40, sa: bool, sb: bool,
        per_row: bool, per_col: bool, ta: bool, tb: bool, seed in 0u64..10_000,
    ) {
        let (ab, bb) = (bytes(m * k, seed), bytes(k * n, seed + 1));
        let az: Vec<i32> = bytes(if per_row { m } else { 1 }, seed + 2).iter().map(|&b| val(b, sa)).collect();
        let bz: Vec<i32> = bytes(if per_col { n } else { 1 }, seed + 3).iter().map(|&b| val(b, sb)).collect();
        let a_at = |i: usize, kk: usize| val(ab[i * k + kk], sa);
        let b_at = |kk: usize, j: usize| val(bb[kk * n + j], sb);
        let mut want = vec![0i32; m * n];
        for i in 0..m {
            for j in 0..n {
                let mut s = 0i32;
                for kk in 0..k {
                    let x = a_at(i, kk) - az[if per_row { i } else { 0 }];
                    let y = b_at(kk, j) - bz[if per_col { j } else { 0 }];
                    s = s.wrapping_add(x * y);
                }
                want[i * n + j] = s;
            }
        }
        let at = tensor(&[m, k], &ab, sa);
        let bt = tensor(&[k, n], &bb, sb);
        let y = run1(Op::MatMulInteger, vec![at.clone(), bt.clone(), zp_tensor(&az, sa), zp_tensor(&bz, sb)]);
        prop_assert_eq!(y.as_i32().unwrap(), &want[..]);
        // QGemm with optional transposes (per-tensor a_zp, per-column b_zp), u8 output.
        let az0 = az[0];
        let want_g: Vec<i32> = (0..m * n).map(|e| {
            let (i, j) = (e / n, e % n);
            (0..k).fold(0i32, |s, kk| s.wrapping_add((a_at(i, kk) - az0) * (b_at(kk, j) - bz[if per_col { j } else { 0 }])))
        }).collect();
        let tr = |v: &[u8], r: usize, c: usize| -> Vec<u8> {
            (0..r * c).map(|e| v[(e % r) * c + e / r]).collect()
        };
        let a_in = if ta { tensor(&[k, m], &tr(&ab, m, k), sa) } else { at };
        let b_in = if tb { tensor(&[n, k], &tr(&bb, k, n), sb) } else { bt };
        let (a_s, b_s, y_s) = (0.02f32, 0.003f32, 0.05f32);
        let g = run1(Op::QGemm { alpha: 1.0, trans_a: ta, trans_b: tb }, vec![a_in, scalar(a_s),
            zp_tensor(&[az0], sa), b_in, scalar(b_s), zp_tensor(&bz, sb),
            Tensor::from_i32(vec![n], (0..n as i32).collect()), scalar(y_s), u8s(100)]);
        for (e, (&gv, &a)) in g.to_i32_vec().iter().zip(&want_g).enumerate() {
            let acc = a.wrapping_add((e % n) as i32);
            prop_assert_eq!(gv, requant_f32(acc, ((1.0 * a_s) * b_s) / y_s, 100, 0, 255));
        }
    }

    #[test]
    fn pooling_2d_matches_direct_windows(
        planes in 1usize..4, h in 1usize..12, w in 1usize..12, kh in 1usize..4, kw in 1usize..4,
        sh in 1usize..4, sw in 1usize..4, dh in 1usize..3, dw in 1usize..3,
        pads in proptest::array::uniform4(0usize..3), ceil: bool, cip: bool, avg: bool,
        seed in 0u64..10_000,
    ) {
        prop_assume!(pads[0] < kh && pads[2] < kh && pads[1] < kw && pads[3] < kw);
        prop_assume!(h + pads[0] + pads[2] > dh * (kh - 1));
        prop_assume!(w + pads[1] + pads[3] > dw * (kw - 1));
        let xv = rand_f32(planes * h * w, seed);
        let kind = if avg { PoolKind::Avg } else { PoolKind::Max };
        let attrs = PoolAttrs { kind, kernel: vec![kh, kw], strides: vec![sh, sw], pads: pads.to_vec(),
            dilations: vec![dh, dw], ceil_mode: ceil, count_include_pad: cip };
        let y = run1(Op::Pool(attrs.clone()), vec![f32t(&[1, planes, h, w], &xv)]);
        let (oh, ow) = (y.shape[2], y.shape[3]);
        let yv = y.as_f32().unwrap();
        for p in 0..planes {
            for oy in 0..oh {
                for ox in 0..ow {
                    let (mut mx, mut sum, mut inside, mut padded) = (f32::MIN, 0f32, 0usize, 0usize);
                    let mut cy = 0;
                    for ky in 0..kh {
                        let iy = (oy * sh + ky * dh) as i64 - pads[0] as i64;
                        cy += (iy < (h + pads[2]) as i64) as usize;
                    }
                    let mut cx = 0;
                    for kx in 0..kw {
                        let ix = (ox * sw + kx * dw) as i64 - pads[1] as i64;
                        cx += (ix < (w + pads[3]) as i64) as usize;
                    }
                    padded += cy * cx;
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = (oy * sh + ky * dh) as i64 - pads[0] as i64;
                            let ix = (ox * sw + kx * dw) as i64 - pads[1] as i64;
                            if iy >= 0 && ix >= 0 && iy < h as i64 && ix < w as i64 {
                                let v = xv[(p * h + iy as usize) * w + ix as usize];
                                mx = mx.max(v);
                                sum += v;
                                inside += 1;
                            }
                        }
                    }
                    let want = if avg {
                        let cnt = if cip { padded } else { inside };
                        if cnt == 0 { 0.0 } else { sum / cnt as f32 }
                    } else {
                        mx
                    };
                    prop_assert_eq!(yv[(p * oh + oy) * ow + ox], want);
                }
            }
        }
        // Max pooling on u8 gives the same windows.
        if !avg {
            let xb: Vec<u8> = xv.iter().map(|&v| ((v + 1.0) * 127.0) as u8).collect();
            let yb = run1(Op::Pool(attrs), vec![Tensor::from_u8(vec![1, planes, h, w], xb.clone())]);
            let yf: Vec<f32> = xb.iter().map(|&b| b as f32).collect();
            let attrs_f = PoolAttrs { kind, kernel: vec![kh, kw], strides: vec![sh, sw], pads: pads.to_vec(),
                dilations: vec![dh, dw], ceil_mode: ceil, count_include_pad: cip };
            let want = run1(Op::Pool(attrs_f), vec![f32t(&[1, planes, h, w], &yf)]);
            // Windows without a tap inside the input: f32::MIN for floats, 0 for integers.
            let wantb: Vec<i32> = want.as_f32().unwrap().iter()
                .map(|&v| if v == f32::MIN { 0 } else { v as i32 }).collect();
            prop_assert_eq!(yb.to_i32_vec(), wantb);
        }
    }
}
