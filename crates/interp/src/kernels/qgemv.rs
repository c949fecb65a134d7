//! Integer matrix-vector products: one row of A against N columns of B whose k values
//! are contiguous (QGemm / QLinearMatMul / MatMulInteger classifiers with B
//! transposed, and the transposed case of one column). Packing N x K bytes for the
//! GEMM micro-kernels would cost as much as the product itself, so each output is a
//! direct dot product over bytes: `sum_k a'[k] * b[c][k] - zb[c] * sum_k a'[k]` with
//! `a' = a - za`, in wrapping int32 (the same ring as every other integer kernel, so
//! the result equals the direct formula for every input).

use super::ewise::simd;
use super::qgemm::{Strided, Zp};
use super::{SendPtr, threads};
use rayon::prelude::*;

/// `out[c * ld] = sum_k (a[k] - a_zp) * (b[c][k] - b_zp[c])` for c < n; `a` and every
/// column of `b` are contiguous along k (`s_k == 1`, checked).
pub(crate) fn gemv_i32(
    k: usize,
    (a, a_zp): (Strided, i32),
    (b, b_zp): (Strided, Zp),
    n: usize,
    out: &mut [i32],
    ld: usize,
) {
    assert!(
        a.s_k == 1 && b.s_k == 1,
        "gemv_i32: operands must be contiguous along k"
    );
    assert!(
        n == 0 || out.len() > (n - 1) * ld,
        "gemv_i32: output too small"
    );
    assert!(a.data.len() >= k && (n == 0 || b.data.len() >= (n - 1) * b.s_idx + k));
    let ap: Vec<i32> = a.data[..k]
        .iter()
        .map(|&v| (if a.signed { v as i8 as i32 } else { v as i32 }).wrapping_sub(a_zp))
        .collect();
    let asum = ap.iter().fold(0i32, |s, &v| s.wrapping_add(v));
    let optr = SendPtr(out.as_mut_ptr());
    let col = |c: usize| {
        let row = &b.data[c * b.s_idx..c * b.s_idx + k];
        let dot = simd(
            #[inline(always)]
            || {
                let mut s = 0i32;
                if b.signed {
                    for (&x, &y) in ap.iter().zip(row) {
                        s = s.wrapping_add(x.wrapping_mul(y as i8 as i32));
                    }
                } else {
                    for (&x, &y) in ap.iter().zip(row) {
                        s = s.wrapping_add(x.wrapping_mul(y as i32));
                    }
                }
                s
            },
        );
        let v = dot.wrapping_sub(b_zp.get(c).wrapping_mul(asum));
        // SAFETY: c * ld < out.len() (asserted) and each column is written once.
        unsafe { *optr.get().add(c * ld) = v };
    };
    if threads() > 1 && n * k >= 1 << 16 {
        (0..n).into_par_iter().for_each(col);
    } else {
        (0..n).for_each(col);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Direct sums, including a reduction long enough to wrap int32 and per-column
    /// zero points, u8 and i8 on both sides.
    #[test]
    fn equals_direct_sums() {
        for (k, n) in [(1usize, 3usize), (37, 5), (1280, 17), (70_000, 3)] {
            for (sa, sb) in [(false, true), (true, false), (false, false), (true, true)] {
                let ad: Vec<u8> = (0..k)
                    .map(|i| if i % 7 == 0 { 3 } else { 255 - (i % 3) as u8 })
                    .collect();
                let bd: Vec<u8> = (0..n * k).map(|i| (128 + (i * 31) % 5) as u8).collect();
                let val = |v: u8, s: bool| if s { v as i8 as i32 } else { v as i32 };
                let (za, zb): (i32, Vec<i32>) = (
                    if sa { -2 } else { 7 },
                    (0..n as i32).map(|c| c - 1).collect(),
                );
                let a = Strided {
                    data: &ad,
                    signed: sa,
                    s_idx: k,
                    s_k: 1,
                };
                let b = Strided {
                    data: &bd,
                    signed: sb,
                    s_idx: k,
                    s_k: 1,
                };
                let mut out = vec![0i32; n * 2];
                gemv_i32(k, (a, za), (b, Zp::Each(&zb)), n, &mut out, 2);
                for c in 0..n {
                    let want = (0..k).fold(0i32, |s, kk| {
                        let x = val(ad[kk], sa) - za;
                        let y = val(bd[c * k + kk], sb) - zb[c];
                        s.wrapping_add(x * y)
                    });
                    assert_eq!(out[c * 2], want, "k {k} c {c}");
                }
            }
        }
    }
}
