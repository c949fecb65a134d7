//! x86-64 integer micro-kernels (u8 x s8 -> i32, exact):
//!
//! * AVX-512 VNNI: 8 rows x 48 columns, `vpdpbusd` on zmm (24 accumulators); each
//!   4-byte group of A is broadcast straight from memory.
//! * AVX-VNNI: 6 rows x 16 columns, `vpdpbusd` on ymm (12 accumulators).
//! * AVX2: 6 rows x 8 columns. `vpmaddubsw` would saturate its i16 pair sums, so B is
//!   zero-extended to i16 and A sign-extended to i16 and multiplied with `vpmaddwd`
//!   (pair sums up to 2 * 255 * 128 fit in i32), which is exact.
//!
//! * AVX2 with onnxruntime's saturation (`Avx2Sat`, only for `QGemm::sat16`): 6 rows x 8
//!   columns, `vpmaddubsw` (u8 x s8 pair sums saturated to i16) + `vpmaddwd` by ones, the
//!   arithmetic of MLAS's AVX2 u8 x s8 kernels.
//!
//! `vpdpbusd` adds four u8 x s8 products to an int32 lane with wrap-around (the
//! saturating form is `vpdpbusds`, never used here).

use super::qgemm::{ColSource, Sink};
use super::qgemm_kernels::{MicroKernel, Prepared, TILE_LD, Task, by_shape, task_body};
use std::arch::x86_64::*;

/// AVX-512 VNNI kernel family.
pub(crate) struct Avx512Vnni;

impl MicroKernel for Avx512Vnni {
    const MR: usize = 8;
    const VEC: usize = 16;
    const NV: usize = 3;

    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
        // SAFETY: forwarded trait contract (ISA checked, layouts and sizes valid).
        unsafe { tile_avx512vnni(mr, nv, k4, a, b, out) }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn tile_avx512vnni(
    mr: usize,
    nv: usize,
    k4: usize,
    a: *const u8,
    b: *const u8,
    out: *mut i32,
) {
    // SAFETY: forwarded contract.
    unsafe {
        by_shape!(
            k_avx512vnni,
            mr,
            nv,
            [1, 2, 3, 4, 5, 6, 7, 8],
            [1, 2, 3],
            (k4, a, b, out)
        )
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[inline]
unsafe fn k_avx512vnni<const MR: usize, const NV: usize>(
    k4: usize,
    a: *const u8,
    b: *const u8,
    out: *mut i32,
) {
    const BMR: usize = Avx512Vnni::MR;
    let mut acc = [[_mm512_setzero_si512(); NV]; MR];
    // SAFETY: a holds k4 groups of BMR x 4 bytes, b k4 groups of NV x 64 bytes, and out
    // a Tile (the MicroKernel contract).
    unsafe {
        for q in 0..k4 {
            let pb = b.add(q * NV * 64);
            let bv: [__m512i; NV] =
                std::array::from_fn(|j| _mm512_loadu_si512(pb.add(j * 64) as *const __m512i));
            let pa = a.add(q * BMR * 4);
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let av = _mm512_set1_epi32((pa.add(r * 4) as *const i32).read_unaligned());
                for j in 0..NV {
                    acc_r[j] = _mm512_dpbusd_epi32(acc_r[j], bv[j], av);
                }
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            for (j, v) in acc_r.iter().enumerate() {
                _mm512_storeu_si512(out.add(r * TILE_LD + j * 16) as *mut __m512i, *v);
            }
        }
    }
}

/// AVX-VNNI (256-bit) kernel family.
pub(crate) struct AvxVnni;

impl MicroKernel for AvxVnni {
    const MR: usize = 6;
    const VEC: usize = 8;
    const NV: usize = 2;

    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
        // SAFETY: forwarded trait contract.
        unsafe { tile_avxvnni(mr, nv, k4, a, b, out) }
    }
}

#[target_feature(enable = "avx2,avxvnni")]
unsafe fn tile_avxvnni(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
    // SAFETY: forwarded contract.
    unsafe {
        by_shape!(
            k_avxvnni,
            mr,
            nv,
            [1, 2, 3, 4, 5, 6],
            [1, 2],
            (k4, a, b, out)
        )
    }
}

#[target_feature(enable = "avx2,avxvnni")]
#[inline]
unsafe fn k_avxvnni<const MR: usize, const NV: usize>(
    k4: usize,
    a: *const u8,
    b: *const u8,
    out: *mut i32,
) {
    const BMR: usize = AvxVnni::MR;
    let mut acc = [[_mm256_setzero_si256(); NV]; MR];
    // SAFETY: as in k_avx512vnni, with 32-byte vectors.
    unsafe {
        for q in 0..k4 {
            let pb = b.add(q * NV * 32);
            let bv: [__m256i; NV] =
                std::array::from_fn(|j| _mm256_loadu_si256(pb.add(j * 32) as *const __m256i));
            let pa = a.add(q * BMR * 4);
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let av = _mm256_set1_epi32((pa.add(r * 4) as *const i32).read_unaligned());
                for j in 0..NV {
                    acc_r[j] = _mm256_dpbusd_avx_epi32(acc_r[j], bv[j], av);
                }
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            for (j, v) in acc_r.iter().enumerate() {
                _mm256_storeu_si256(out.add(r * TILE_LD + j * 8) as *mut __m256i, *v);
            }
        }
    }
}

/// AVX2 kernel family (i16 `vpmaddwd`, exact).
pub(crate) struct Avx2;

impl MicroKernel for Avx2 {
    const MR: usize = 6;
    const VEC: usize = 8;
    const NV: usize = 1;

    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
        // SAFETY: forwarded trait contract.
        unsafe { tile_avx2(mr, nv, k4, a, b, out) }
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
    // SAFETY: forwarded contract.
    unsafe { by_shape!(k_avx2, mr, nv, [1, 2, 3, 4, 5, 6], [1], (k4, a, b, out)) }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn k_avx2<const MR: usize, const NV: usize>(
    k4: usize,
    a: *const u8,
    b: *const u8,
    out: *mut i32,
) {
    const BMR: usize = Avx2::MR;
    // Per row: columns 0-3 and 4-7, each lane a sum over k = 0,1 or k = 2,3 of a group.
    let mut lo = [_mm256_setzero_si256(); MR];
    let mut hi = [_mm256_setzero_si256(); MR];
    // SAFETY: a holds k4 groups of BMR x 4 bytes, b k4 groups of 32 bytes (NV = 1), out
    // a Tile.
    unsafe {
        for q in 0..k4 {
            let bb = _mm256_loadu_si256(b.add(q * 32) as *const __m256i);
            let blo = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(bb));
            let bhi = _mm256_cvtepu8_epi16(_mm256_extracti128_si256::<1>(bb));
            let pa = a.add(q * BMR * 4);
            for r in 0..MR {
                let w4 = (pa.add(r * 4) as *const i32).read_unaligned();
                let w = _mm256_broadcastq_epi64(_mm_cvtepi8_epi16(_mm_cvtsi32_si128(w4)));
                lo[r] = _mm256_add_epi32(lo[r], _mm256_madd_epi16(blo, w));
                hi[r] = _mm256_add_epi32(hi[r], _mm256_madd_epi16(bhi, w));
            }
        }
        for r in 0..MR {
            // [c0 c1 c4 c5 | c2 c3 c6 c7] -> [c0 .. c7]
            let s = _mm256_hadd_epi32(lo[r], hi[r]);
            let s = _mm256_permute4x64_epi64::<0b11_01_10_00>(s);
            _mm256_storeu_si256(out.add(r * TILE_LD) as *mut __m256i, s);
        }
    }
}

/// AVX2 kernel with onnxruntime's 16-bit pair saturation (`vpmaddubsw`).
pub(crate) struct Avx2Sat;

impl MicroKernel for Avx2Sat {
    const MR: usize = 6;
    const VEC: usize = 8;
    const NV: usize = 1;

    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
        // SAFETY: forwarded trait contract.
        unsafe { tile_avx2sat(mr, nv, k4, a, b, out) }
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2sat(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
    // SAFETY: forwarded contract.
    unsafe { by_shape!(k_avx2sat, mr, nv, [1, 2, 3, 4, 5, 6], [1], (k4, a, b, out)) }
}

#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn k_avx2sat<const MR: usize, const NV: usize>(
    k4: usize,
    a: *const u8,
    b: *const u8,
    out: *mut i32,
) {
    const BMR: usize = Avx2Sat::MR;
    let mut acc = [_mm256_setzero_si256(); MR];
    let ones = _mm256_set1_epi16(1);
    // SAFETY: a holds k4 groups of BMR x 4 bytes, b k4 groups of 32 bytes (NV = 1), out
    // a Tile.
    unsafe {
        for q in 0..k4 {
            // Columns 0-7, each 4 u8 of one k group.
            let bb = _mm256_loadu_si256(b.add(q * 32) as *const __m256i);
            let pa = a.add(q * BMR * 4);
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let w = _mm256_set1_epi32((pa.add(r * 4) as *const i32).read_unaligned());
                let pairs = _mm256_maddubs_epi16(bb, w);
                *acc_r = _mm256_add_epi32(*acc_r, _mm256_madd_epi16(pairs, ones));
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            _mm256_storeu_si256(out.add(r * TILE_LD) as *mut __m256i, *acc_r);
        }
    }
}

/// One GEMM task with AVX2 and onnxruntime's pair saturation.
///
/// # Safety
/// The host supports AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn task_avx2sat<C: ColSource, S: Sink>(
    p: &Prepared<C>,
    s: &S,
    t: Task,
    buf: &mut Vec<u8>,
) {
    task_body::<Avx2Sat, C, S>(p, s, t, buf)
}

/// One GEMM task with AVX-512 VNNI (packing, correction and sink compiled for it).
///
/// # Safety
/// The host supports AVX-512 F/BW/VL/VNNI and AVX2.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
pub(crate) unsafe fn task_avx512vnni<C: ColSource, S: Sink>(
    p: &Prepared<C>,
    s: &S,
    t: Task,
    buf: &mut Vec<u8>,
) {
    task_body::<Avx512Vnni, C, S>(p, s, t, buf)
}

/// One GEMM task with AVX-VNNI.
///
/// # Safety
/// The host supports AVX2 and AVX-VNNI.
#[target_feature(enable = "avx2,fma,avxvnni")]
pub(crate) unsafe fn task_avxvnni<C: ColSource, S: Sink>(
    p: &Prepared<C>,
    s: &S,
    t: Task,
    buf: &mut Vec<u8>,
) {
    task_body::<AvxVnni, C, S>(p, s, t, buf)
}

/// One GEMM task with AVX2.
///
/// # Safety
/// The host supports AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn task_avx2<C: ColSource, S: Sink>(
    p: &Prepared<C>,
    s: &S,
    t: Task,
    buf: &mut Vec<u8>,
) {
    task_body::<Avx2, C, S>(p, s, t, buf)
}
