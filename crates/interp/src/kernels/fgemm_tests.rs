//! The f32 GEMM on every kernel family this host runs, against an f64 reference, on
//! shapes that are not multiples of any tile or block (k = 1, n = 1, m = 1, k past one
//! k block), with every operand form, with and without bias, and across thread counts.

use super::fgemm::{AOp, BOp, Panels, StridedB, fgemm};
use super::fgemm_kernels::Fk;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 7, 1),
    (5, 1, 3),
    (13, 3, 1),
    (1, 40, 33),
    (7, 9, 17),
    (12, 256, 32),
    (13, 257, 33),
    (25, 300, 70),
    (64, 147, 49),
    (200, 520, 45),
    (37, 600, 1100),
];

fn rand_vec(rng: &mut Pcg64, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// a row-major [m][k], b row-major [k][n].
fn reference(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], bias: Option<&[f32]>) -> Vec<f64> {
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0f64;
            for kk in 0..k {
                s += a[i * k + kk] as f64 * b[kk * n + j] as f64;
            }
            out[i * n + j] = s + bias.map_or(0.0, |v| v[i] as f64);
        }
    }
    out
}

/// Every operand form; returns each result (row stride ldc = n + 3, checked untouched
/// between rows).
fn all_forms(
    fk: Fk,
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
) -> Vec<Vec<f32>> {
    let at: Vec<f32> = (0..k * m).map(|x| a[(x % m) * k + x / m]).collect();
    let bt: Vec<f32> = (0..n * k).map(|x| b[(x % k) * n + x / k]).collect();
    let pa = Panels::pack_a(fk, a, (k, 1), m, k);
    let pat = Panels::pack_a(fk, &at, (1, m), m, k);
    let pb = Panels::pack_b(fk, b, (n, 1), k, n);
    let sb = StridedB {
        data: b,
        rs: n,
        cs: 1,
        n,
    };
    let sbt = StridedB {
        data: &bt,
        rs: 1,
        cs: k,
        n,
    };
    let aops = [
        AOp::Packed(&pa),
        AOp::Packed(&pat),
        AOp::Strided {
            data: a,
            rs: k,
            cs: 1,
        },
        AOp::Strided {
            data: &at,
            rs: 1,
            cs: m,
        },
    ];
    let bops = [
        BOp::Packed(&pb),
        BOp::Source(&sb),
        BOp::Source(&sbt),
        BOp::InPlace { data: b, ld: n },
    ];
    let ldc = n + 3;
    let mut outs = Vec::new();
    for ao in &aops {
        for bo in &bops {
            let mut c = vec![f32::NAN; m * ldc];
            for i in 0..m {
                c[i * ldc + n..(i + 1) * ldc].fill(7.0);
            }
            fgemm(fk, (m, k, n), ao, bo, &mut c, ldc, bias);
            for i in 0..m {
                assert!(
                    c[i * ldc + n..(i + 1) * ldc].iter().all(|&v| v == 7.0),
                    "wrote past n"
                );
            }
            outs.push((0..m * n).map(|x| c[(x / n) * ldc + x % n]).collect());
        }
    }
    outs
}

#[test]
fn fgemm_matches_f64_reference_on_every_path() {
    let mut first_bits: Vec<Option<Vec<f32>>> = vec![None; SHAPES.len() * 2];
    for fk in Fk::available() {
        for (si, &(m, k, n)) in SHAPES.iter().enumerate() {
            let mut rng = Pcg64::seed_from_u64((m * 1000 + k * 10 + n) as u64);
            let a = rand_vec(&mut rng, m * k);
            let b = rand_vec(&mut rng, k * n);
            let bias = rand_vec(&mut rng, m);
            for (bi, bias) in [None, Some(&bias[..])].into_iter().enumerate() {
                let want = reference(m, k, n, &a, &b, bias);
                let outs = all_forms(fk, m, k, n, &a, &b, bias);
                let tol = 1e-6 * (k as f64).sqrt() * 4.0 + 1e-6;
                for (f, got) in outs.iter().enumerate() {
                    for (x, (&g, &w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g as f64 - w).abs() <= tol,
                            "{} m={m} k={k} n={n} form {f} bias {bi}: [{x}] {g} vs {w}",
                            fk.name()
                        );
                    }
                    // Every form (packing, blocking, in place) gives the same bits.
                    assert_eq!(got, &outs[0], "{} m={m} k={k} n={n} form {f}", fk.name());
                }
                // Every family with fused multiply-adds sums in the same order.
                if fk != Fk::Portable || super::ewise::has_fma() {
                    let slot = &mut first_bits[si * 2 + bi];
                    match slot {
                        None => *slot = Some(outs[0].clone()),
                        Some(bits) => assert_eq!(bits, &outs[0], "{} m={m} k={k} n={n}", fk.name()),
                    }
                }
            }
        }
    }
}

#[test]
fn fgemm_threads_do_not_change_bits() {
    let fk = super::fgemm_kernels::fk();
    let (m, k, n) = (150, 300, 333);
    let mut rng = Pcg64::seed_from_u64(5);
    let a = rand_vec(&mut rng, m * k);
    let b = rand_vec(&mut rng, k * n);
    let run = |th: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(th)
            .build()
            .unwrap();
        pool.install(|| {
            let mut c = vec![0f32; m * n];
            let sb = StridedB {
                data: &b,
                rs: n,
                cs: 1,
                n,
            };
            fgemm(
                fk,
                (m, k, n),
                &AOp::Strided {
                    data: &a,
                    rs: k,
                    cs: 1,
                },
                &BOp::Source(&sb),
                &mut c,
                n,
                None,
            );
            c
        })
    };
    assert_eq!(run(1), run(4));
    assert_eq!(run(1), run(3));
}
