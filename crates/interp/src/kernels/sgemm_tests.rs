//! The matrix-vector paths of `sgemm` against their definition, bit for bit: every
//! output is 16 lane sums (lane l takes the products of the k with k % 16 == l, in k
//! order, fused where the host has FMA) added up as a halving tree. Lengths around the
//! 16-element chunks, signed zeros and both operand layouts.

use super::ewise::has_fma;
use super::sgemm::sgemm;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

/// One output as `gemv`'s column and row-dot paths define it.
fn lane_dot(x: impl Iterator<Item = f32>, y: impl Iterator<Item = f32>) -> f32 {
    let mut lanes = [0f32; 16];
    for (i, (a, b)) in x.zip(y).enumerate() {
        let l = &mut lanes[i % 16];
        *l = if has_fma() {
            a.mul_add(b, *l)
        } else {
            *l + a * b
        };
    }
    let mut w = 16;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            lanes[l] += lanes[l + w];
        }
    }
    lanes[0]
}

fn values(rng: &mut Pcg64, len: usize) -> Vec<f32> {
    // Every seventh value a signed zero, so lanes that sum only zeros keep their sign.
    (0..len)
        .map(|i| match i % 7 {
            3 => -0.0,
            5 => 0.0,
            _ => rng.random_range(-1.0f32..1.0),
        })
        .collect()
}

#[test]
fn matrix_vector_paths_sum_in_lanes_then_halves() {
    let mut rng = Pcg64::seed_from_u64(7);
    for k in [1, 2, 15, 16, 17, 31, 33, 100, 1280] {
        for n in [1, 3, 4, 5, 9] {
            let a = values(&mut rng, k);
            // B stored transposed ([n][k]): column j of B contiguous, as a Linear
            // layer's weight under Gemm's transB.
            let bt = values(&mut rng, n * k);
            let mut c = vec![f32::NAN; n];
            sgemm(1, k, n, 1.0, &a, (k, 1), &bt, (1, k), 0.0, &mut c);
            for (j, &cj) in c.iter().enumerate() {
                let want = lane_dot(a.iter().copied(), bt[j * k..(j + 1) * k].iter().copied());
                assert_eq!(
                    cj.to_bits(),
                    want.to_bits(),
                    "m = 1, k = {k}, n = {n}, column {j}"
                );
            }
            // n == 1: rows of A against a contiguous vector.
            let mut c1 = vec![f32::NAN; n];
            sgemm(n, k, 1, 1.0, &bt, (k, 1), &a, (1, 1), 0.0, &mut c1);
            for (i, &ci) in c1.iter().enumerate() {
                let want = lane_dot(bt[i * k..(i + 1) * k].iter().copied(), a.iter().copied());
                assert_eq!(
                    ci.to_bits(),
                    want.to_bits(),
                    "n = 1, k = {k}, m = {n}, row {i}"
                );
            }
        }
    }
}
