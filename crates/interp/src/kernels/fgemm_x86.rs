//! x86-64 micro-kernels of the f32 GEMM (see `fgemm_kernels::Kern` for the contract):
//! AVX-512F, a 12 x 32 tile in 24 zmm accumulators (B row in two registers, A values
//! broadcast from memory); AVX2 + FMA, a 6 x 16 tile in 12 ymm accumulators. One
//! fused multiply-add chain per output in k order.

use std::arch::x86_64::*;

/// # Safety
/// AVX-512F available; a holds kc * 12 values, b kc rows of 32 (stride ldb), c a
/// 12 x 32 tile (stride ldc), bias null or 12 values.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn kern_avx512(
    kc: usize,
    a: *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    first: bool,
    bias: *const f32,
) {
    const MR: usize = 12;
    // SAFETY: every pointer offset below stays inside the regions the contract names.
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        if !first {
            for (i, r) in acc.iter_mut().enumerate() {
                r[0] = _mm512_loadu_ps(c.wrapping_add(i * ldc));
                r[1] = _mm512_loadu_ps(c.wrapping_add(i * ldc + 16));
            }
        }
        let (mut ap, mut bp) = (a, b);
        for _ in 0..kc {
            let b0 = _mm512_loadu_ps(bp);
            let b1 = _mm512_loadu_ps(bp.wrapping_add(16));
            for (i, r) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_ps(*ap.wrapping_add(i));
                r[0] = _mm512_fmadd_ps(av, b0, r[0]);
                r[1] = _mm512_fmadd_ps(av, b1, r[1]);
            }
            ap = ap.wrapping_add(MR);
            bp = bp.wrapping_add(ldb);
        }
        for (i, r) in acc.iter().enumerate() {
            let (mut v0, mut v1) = (r[0], r[1]);
            if !bias.is_null() {
                let bv = _mm512_set1_ps(*bias.wrapping_add(i));
                v0 = _mm512_add_ps(v0, bv);
                v1 = _mm512_add_ps(v1, bv);
            }
            _mm512_storeu_ps(c.wrapping_add(i * ldc), v0);
            _mm512_storeu_ps(c.wrapping_add(i * ldc + 16), v1);
        }
    }
}

/// # Safety
/// AVX2 and FMA available; a holds kc * 6 values, b kc rows of 16 (stride ldb), c a
/// 6 x 16 tile (stride ldc), bias null or 6 values.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn kern_avx2(
    kc: usize,
    a: *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    first: bool,
    bias: *const f32,
) {
    const MR: usize = 6;
    // SAFETY: as in kern_avx512.
    unsafe {
        let mut acc = [[_mm256_setzero_ps(); 2]; MR];
        if !first {
            for (i, r) in acc.iter_mut().enumerate() {
                r[0] = _mm256_loadu_ps(c.wrapping_add(i * ldc));
                r[1] = _mm256_loadu_ps(c.wrapping_add(i * ldc + 8));
            }
        }
        let (mut ap, mut bp) = (a, b);
        for _ in 0..kc {
            let b0 = _mm256_loadu_ps(bp);
            let b1 = _mm256_loadu_ps(bp.wrapping_add(8));
            for (i, r) in acc.iter_mut().enumerate() {
                let av = _mm256_broadcast_ss(&*ap.wrapping_add(i));
                r[0] = _mm256_fmadd_ps(av, b0, r[0]);
                r[1] = _mm256_fmadd_ps(av, b1, r[1]);
            }
            ap = ap.wrapping_add(MR);
            bp = bp.wrapping_add(ldb);
        }
        for (i, r) in acc.iter().enumerate() {
            let (mut v0, mut v1) = (r[0], r[1]);
            if !bias.is_null() {
                let bv = _mm256_set1_ps(*bias.wrapping_add(i));
                v0 = _mm256_add_ps(v0, bv);
                v1 = _mm256_add_ps(v1, bv);
            }
            _mm256_storeu_ps(c.wrapping_add(i * ldc), v0);
            _mm256_storeu_ps(c.wrapping_add(i * ldc + 8), v1);
        }
    }
}
