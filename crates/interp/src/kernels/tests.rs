//! Every integer micro-kernel this host can run against a plain int32 reference, on
//! edge shapes (tails of every tile size), all four signedness combinations, scalar and
//! per-row/column zero points, extreme values and wrap-around.

use super::Isa;
use super::SendPtr;
use super::im2col::{Conv2d, Im2col2d};
use super::qgemm::{QGemm, StoreI32, Strided, Zp, qgemm_with};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

fn val(b: u8, signed: bool) -> i32 {
    if signed { b as i8 as i32 } else { b as i32 }
}

/// Reference: out[i][j] = sum_k (a(i,k) - za[i]) * (b(k,j) - zb[j]), wrapping.
fn reference(
    (m, k, n): (usize, usize, usize),
    a: &Strided,
    za: &[i32],
    b: &Strided,
    zb: &[i32],
) -> Vec<i32> {
    let mut out = vec![0i32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0i32;
            for kk in 0..k {
                let x = val(a.data[i * a.s_idx + kk * a.s_k], a.signed) - za[i];
                let y = val(b.data[j * b.s_idx + kk * b.s_k], b.signed) - zb[j];
                s = s.wrapping_add(x.wrapping_mul(y));
            }
            out[i * n + j] = s;
        }
    }
    out
}

fn bytes(rng: &mut Pcg64, len: usize, extreme: bool) -> Vec<u8> {
    (0..len)
        .map(|_| {
            if extreme {
                [0u8, 255, 128, 127][rng.random_range(0..4usize)]
            } else {
                rng.random()
            }
        })
        .collect()
}

fn zps(rng: &mut Pcg64, len: usize, signed: bool, per: bool, zero: bool) -> Vec<i32> {
    let one = |rng: &mut Pcg64| {
        if zero {
            0
        } else if signed {
            rng.random_range(-128..=127)
        } else {
            rng.random_range(0..=255)
        }
    };
    let z = one(rng);
    (0..len).map(|_| if per { one(rng) } else { z }).collect()
}

fn run(isa: Isa, dims: (usize, usize, usize), case: u64) {
    let (m, k, n) = dims;
    let mut rng = Pcg64::seed_from_u64(case * 7919 + (m * 131 + k * 17 + n) as u64);
    let (sa, sb) = (case & 1 == 1, case & 2 == 2);
    let extreme = case.is_multiple_of(5);
    let (ad, bd) = (
        bytes(&mut rng, m * k, extreme),
        bytes(&mut rng, k * n, extreme),
    );
    // a row-major [m][k]; b row-major [k][n] (column index stride 1), or transposed.
    let a = Strided {
        data: &ad,
        signed: sa,
        s_idx: k,
        s_k: 1,
    };
    let b = if case & 4 == 4 {
        Strided {
            data: &bd,
            signed: sb,
            s_idx: k,
            s_k: 1,
        }
    } else {
        Strided {
            data: &bd,
            signed: sb,
            s_idx: 1,
            s_k: n,
        }
    };
    let za = zps(&mut rng, m, sa, case & 8 == 8, case.is_multiple_of(3));
    let zb = zps(&mut rng, n, sb, case & 16 == 16, case.is_multiple_of(7));
    let want = reference(dims, &a, &za, &b, &zb);
    let mut got = vec![0i32; m * n];
    let sink = StoreI32 {
        out: SendPtr(got.as_mut_ptr()),
        len: m * n,
        ld: n,
        transposed: false,
    };
    let g = QGemm {
        m,
        n,
        k,
        a,
        a_zp: Zp::Each(&za),
        b: &b,
        b_zp: Zp::Each(&zb),
        sat16: false,
    };
    qgemm_with(isa, &g, &sink);
    assert_eq!(got, want, "{} m{m} k{k} n{n} case {case}", isa.name());
}

#[test]
fn every_kernel_matches_the_reference() {
    let sizes = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 47, 48, 49, 97];
    let ks = [1, 3, 4, 5, 8, 27, 64, 147];
    for isa in Isa::available() {
        let mut case = 0u64;
        for &m in &sizes {
            for &n in &sizes {
                let k = ks[(m + n) % ks.len()];
                run(isa, (m, k, n), case);
                case += 1;
            }
        }
    }
}

/// onnxruntime's AVX2 u8 x s8 arithmetic (`QGemm::sat16`): raw bytes, pairs of
/// neighbouring k summed and clamped to int16, then the zero points applied exactly.
#[test]
fn saturating_kernels_match_pair_saturation() {
    let sat = |v: i32| v.clamp(-32768, 32767);
    for isa in Isa::available() {
        for (case, &(m, k, n)) in [(1, 1, 1), (7, 27, 9), (13, 64, 17), (6, 147, 8), (3, 5, 49)]
            .iter()
            .enumerate()
        {
            let mut rng = Pcg64::seed_from_u64(case as u64 + 11);
            // Mostly large magnitudes, so many pairs leave the int16 range.
            let ad: Vec<u8> = (0..m * k)
                .map(|_| [127u8, 129, 200, 0x80, rng.random()][rng.random_range(0..5usize)])
                .collect();
            let bd: Vec<u8> = (0..k * n)
                .map(|_| [255u8, 250, 3, rng.random()][rng.random_range(0..4usize)])
                .collect();
            let (za, zb): (Vec<i32>, Vec<i32>) = (
                (0..m).map(|i| (i as i32 % 5) - 2).collect(),
                (0..n).map(|j| (j as i32 * 37) % 256).collect(),
            );
            let a = Strided {
                data: &ad,
                signed: true,
                s_idx: k,
                s_k: 1,
            };
            let b = Strided {
                data: &bd,
                signed: false,
                s_idx: 1,
                s_k: n,
            };
            let mut want = vec![0i32; m * n];
            let mut saturated = 0;
            for i in 0..m {
                for j in 0..n {
                    let (mut raw, mut rowsum, mut colsum) = (0i32, 0i32, 0i32);
                    for p in (0..k).step_by(2) {
                        let mut pair = 0;
                        for kk in p..(p + 2).min(k) {
                            let (w, x) = (ad[i * k + kk] as i8 as i32, bd[kk * n + j] as i32);
                            pair += w * x;
                            rowsum += w;
                            colsum += x;
                        }
                        saturated += (sat(pair) != pair) as usize;
                        raw += sat(pair);
                    }
                    // sum (w - za)(x - zb) with the raw part saturated.
                    want[i * n + j] =
                        raw - zb[j] * rowsum - za[i] * colsum + k as i32 * za[i] * zb[j];
                }
            }
            if k > 1 {
                assert!(saturated > 0, "case {case} must saturate some pairs");
            }
            let mut got = vec![0i32; m * n];
            let sink = StoreI32 {
                out: SendPtr(got.as_mut_ptr()),
                len: m * n,
                ld: n,
                transposed: false,
            };
            let g = QGemm {
                m,
                n,
                k,
                a,
                a_zp: Zp::Each(&za),
                b: &b,
                b_zp: Zp::Each(&zb),
                sat16: true,
            };
            qgemm_with(isa, &g, &sink);
            assert_eq!(got, want, "{} m{m} k{k} n{n}", isa.name());
        }
    }
}

#[test]
fn sums_wrap_around_in_int32() {
    // 255 * 127 * 70_000 exceeds i32::MAX: the sums must wrap as MLAS's do.
    for isa in Isa::available() {
        for case in [0, 1, 2, 3] {
            run(isa, (3, 70_000, 20), case * 5);
        }
    }
}

#[test]
fn im2col_panels_match_direct_indexing() {
    // 2-D conv with stride 2, dilation 2, asymmetric pad: the GEMM over the packed
    // input equals a direct convolution.
    let mut rng = Pcg64::seed_from_u64(3);
    let (c, ih, iw, m) = (3, 9, 11, 5);
    let geo = Conv2d {
        channels: c,
        input: [ih, iw],
        out: [4, 5],
        kernel: [3, 2],
        strides: [2, 2],
        dilations: [1, 2],
        pad_begin: [1, 0],
    };
    let (kv, ov) = (6, 20);
    let x = bytes(&mut rng, c * ih * iw, false);
    let w = bytes(&mut rng, m * c * kv, false);
    for isa in Isa::available() {
        for (sx, sw) in [(false, true), (true, true), (false, false), (true, false)] {
            let (xz, wz) = (if sx { -3 } else { 130 }, if sw { 2 } else { 120 });
            let src = Im2col2d::new(&x, sx, if sx { xz as i8 as u8 } else { xz as u8 }, &geo);
            let a = Strided {
                data: &w,
                signed: sw,
                s_idx: c * kv,
                s_k: 1,
            };
            let mut got = vec![0i32; m * ov];
            let sink = StoreI32 {
                out: SendPtr(got.as_mut_ptr()),
                len: m * ov,
                ld: ov,
                transposed: false,
            };
            let g = QGemm {
                m,
                n: ov,
                k: c * kv,
                a,
                a_zp: Zp::Scalar(wz),
                b: &src,
                b_zp: Zp::Scalar(xz),
                sat16: false,
            };
            qgemm_with(isa, &g, &sink);
            for oc in 0..m {
                for oy in 0..4 {
                    for ox in 0..5 {
                        let mut s = 0i32;
                        for ch in 0..c {
                            for ky in 0..3 {
                                for kx in 0..2 {
                                    let iy = (oy * 2 + ky) as isize - 1;
                                    let ix = (ox * 2 + kx * 2) as isize;
                                    let xv = if iy >= 0 && (iy as usize) < ih && (ix as usize) < iw
                                    {
                                        val(x[(ch * ih + iy as usize) * iw + ix as usize], sx)
                                    } else {
                                        xz
                                    };
                                    let wv = val(w[((oc * c + ch) * 3 + ky) * 2 + kx], sw);
                                    s += (xv - xz) * (wv - wz);
                                }
                            }
                        }
                        assert_eq!(
                            got[oc * ov + oy * 5 + ox],
                            s,
                            "{} oc{oc} oy{oy} ox{ox}",
                            isa.name()
                        );
                    }
                }
            }
        }
    }
}
