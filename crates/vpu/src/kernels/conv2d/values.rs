//! The values a stride-1 step's slides and MACs leave in the registers, computed per
//! output row instead of per instruction. Each accumulator ends as its start plus the
//! products of its MACs, int32 wrapping; wrapping addition is associative and
//! commutative, so summing a row's products in registers of the host CPU, reading the
//! band rows at the slide offsets directly, gives the same bits as the instruction
//! order. The band rows are only read, so each scratch register ends as the last
//! slide into it, which is replayed at the end.

use super::{ACC0, ConvJob, MacScratch, SCRATCH};
use crate::vector::slide_down;

/// The register values after `macs` of a stride-1 step (see the module comment), on
/// the register files `f` (`v` elements per register).
pub(super) fn step_values(
    f: &mut [Vec<i32>],
    v: usize,
    j: &ConvJob,
    nw: usize,
    taps: &[i32],
    s: &MacScratch,
) {
    // `plan` sizes stride-1 chunks so a band row, every slide's reach, fits in a
    // register (a slide past the end would read zeros the direct reads do not model).
    assert!(
        (j.kw - 1) * j.dil.1 + nw <= v,
        "a stride-1 band row wider than a register"
    );
    for (q, fq) in f.iter_mut().enumerate().take(s.p) {
        let rows = &s.tab.by_out[s.tab.out_at[q]..s.tab.out_at[q + 1]];
        let mut i = 0;
        while i < rows.len() {
            let o = rows[i].0;
            let n = rows[i..].iter().take_while(|e| e.0 == o).count();
            accumulate(fq, v, j, nw, taps, ACC0 + o, &rows[i..i + n]);
            i += n;
        }
    }
    // The last slide into each scratch register, per VPU (`macs`' column order).
    let mut last = vec![[None::<(usize, usize)>; 2]; s.p];
    for (r, kx, sc) in s.columns(j.kw).filter(|&(_, kx, _)| kx > 0) {
        for (q, _, _) in s.row_vpus(r) {
            last[q][sc] = Some((r, kx));
        }
    }
    for (fq, l) in f.iter_mut().zip(&last) {
        for (k, at) in l.iter().enumerate() {
            if let Some((r, kx)) = *at {
                let (d, src) = crate::vector::two_regs(fq, v, SCRATCH[k], r);
                slide_down(d, src, kx * j.dil.1, nw, v);
            }
        }
    }
}

/// Accumulator `acc` += every product of its (band row, ky) pairs `rows` (entries
/// `(o, r, ky)`) over all kx, lanes `0..nw`.
fn accumulate(
    fq: &mut [i32],
    v: usize,
    j: &ConvJob,
    nw: usize,
    taps: &[i32],
    acc: usize,
    rows: &[(usize, usize, usize)],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { accumulate_avx2(fq, v, j, nw, taps, acc, rows) };
        return;
    }
    let (a, b) = fq.split_at_mut(acc * v);
    let d = &mut b[..nw];
    for &(_, r, ky) in rows {
        for kx in 0..j.kw {
            let t = taps[ky * j.kw + kx];
            let off = r * v + kx * j.dil.1;
            for (d, &x) in d.iter_mut().zip(&a[off..off + nw]) {
                *d = d.wrapping_add(t.wrapping_mul(x));
            }
        }
    }
}

/// [`accumulate`] eight lanes at a time in AVX2 registers (masked at the row's end).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn accumulate_avx2(
    fq: &mut [i32],
    v: usize,
    j: &ConvJob,
    nw: usize,
    taps: &[i32],
    acc: usize,
    rows: &[(usize, usize, usize)],
) {
    use std::arch::x86_64::*;
    // Every band row read lies below the accumulator (rows V0-V18, accumulators from
    // V21), and every lane read or written inside its register (checked by `covers`).
    let (a, b) = fq.split_at_mut(acc * v);
    let d = &mut b[..nw];
    let max_off = rows
        .iter()
        .map(|&(_, r, _)| r * v + (j.kw - 1) * j.dil.1 + nw)
        .max()
        .unwrap_or(0);
    assert!(max_off <= a.len(), "a band row past the accumulators");
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for c in (0..nw).step_by(8) {
        let k = (nw - c).min(8) as i32;
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(k), lanes);
        // SAFETY: lanes c..c+k of the accumulator and of each band row read lie inside
        // `d` and `a` (asserted above); masked lanes are not accessed.
        unsafe {
            let dp = d.as_mut_ptr().add(c);
            let mut s = _mm256_maskload_epi32(dp, mask);
            for &(_, r, ky) in rows {
                for kx in 0..j.kw {
                    let t = _mm256_set1_epi32(taps[ky * j.kw + kx]);
                    let x = _mm256_maskload_epi32(a.as_ptr().add(r * v + kx * j.dil.1 + c), mask);
                    s = _mm256_add_epi32(s, _mm256_mullo_epi32(t, x));
                }
            }
            _mm256_maskstore_epi32(dp, mask, s);
        }
    }
}
