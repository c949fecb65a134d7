//! x86-64 micro-kernels of the f32 GEMM (see `fgemm_kernels::Kern` for the contract):
//! AVX-512F, a 12 x 32 tile in 24 zmm accumulators (B row in two registers, A values
//! broadcast from memory); AVX2 + FMA, a 6 x 16 tile in 12 ymm accumulators. One
//! fused multiply-add chain per output in k order.

use super::act::Act;
use std::arch::x86_64::*;

/// One micro-kernel per ISA from one body: an `MR x 2·LANES` tile in `2·MR` vector
/// accumulators, each k step loading the B row into two registers and broadcasting the
/// A values from memory; `first` starts from zero instead of `c`; the bias (one per row)
/// is added once, after the last k, then the fused activation in registers:
/// `min(hi, max(lo, v))` (`maxps(lo, v)`, `minps(hi, ·)`: the formulas of
/// `act::clip_row`) or `max(v, 0)` (`maxps(v, 0)`: Relu; a NaN becomes 0).
macro_rules! fgemm_kernel {
    ($(#[$doc:meta])* $name:ident, $features:literal, mr: $mr:literal, lanes: $lanes:literal,
     $zero:ident, $load:ident, $store:ident, $set1:ident, $fmadd:ident, $add:ident,
     $max:ident, $min:ident) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn $name(
            kc: usize,
            a: *const f32,
            b: *const f32,
            ldb: usize,
            c: *mut f32,
            ldc: usize,
            first: bool,
            bias: *const f32,
            act: Option<Act>,
        ) {
            const MR: usize = $mr;
            const LANES: usize = $lanes;
            // SAFETY: every pointer offset below stays inside the regions the contract
            // names.
            unsafe {
                let mut acc = [[$zero(); 2]; MR];
                if !first {
                    for (i, r) in acc.iter_mut().enumerate() {
                        r[0] = $load(c.wrapping_add(i * ldc));
                        r[1] = $load(c.wrapping_add(i * ldc + LANES));
                    }
                }
                let (mut ap, mut bp) = (a, b);
                for _ in 0..kc {
                    let b0 = $load(bp);
                    let b1 = $load(bp.wrapping_add(LANES));
                    for (i, r) in acc.iter_mut().enumerate() {
                        let av = $set1(*ap.wrapping_add(i));
                        r[0] = $fmadd(av, b0, r[0]);
                        r[1] = $fmadd(av, b1, r[1]);
                    }
                    ap = ap.wrapping_add(MR);
                    bp = bp.wrapping_add(ldb);
                }
                for (i, r) in acc.iter().enumerate() {
                    let (mut v0, mut v1) = (r[0], r[1]);
                    if !bias.is_null() {
                        let bv = $set1(*bias.wrapping_add(i));
                        v0 = $add(v0, bv);
                        v1 = $add(v1, bv);
                    }
                    match act {
                        Some(Act::Clip(lo, hi)) => {
                            let (l, h) = ($set1(lo), $set1(hi));
                            v0 = $min(h, $max(l, v0));
                            v1 = $min(h, $max(l, v1));
                        }
                        Some(Act::Relu) => {
                            v0 = $max(v0, $zero());
                            v1 = $max(v1, $zero());
                        }
                        None => {}
                    }
                    $store(c.wrapping_add(i * ldc), v0);
                    $store(c.wrapping_add(i * ldc + LANES), v1);
                }
            }
        }
    };
}

fgemm_kernel!(
    /// # Safety
    /// AVX-512F available; a holds kc * 12 values, b kc rows of 32 (stride ldb), c a
    /// 12 x 32 tile (stride ldc), bias null or 12 values.
    kern_avx512, "avx512f,avx2,fma", mr: 12, lanes: 16,
    _mm512_setzero_ps, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps,
    _mm512_add_ps, _mm512_max_ps, _mm512_min_ps
);

fgemm_kernel!(
    /// # Safety
    /// AVX2 and FMA available; a holds kc * 6 values, b kc rows of 16 (stride ldb), c a
    /// 6 x 16 tile (stride ldc), bias null or 6 values.
    kern_avx2, "avx2,fma", mr: 6, lanes: 8,
    _mm256_setzero_ps, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps,
    _mm256_add_ps, _mm256_max_ps, _mm256_min_ps
);
