//! Exact 16-bit dot products for the functional MVM (the simulator's hot loop).
//!
//! Narrow path: when every input word satisfies |x| ≤ [`NARROW_MAX`], the raw words are
//! multiplied directly (`pmaddwd` pairs, one multiply per weight): each i32 lane of an
//! AVX2 accumulator sums at most 16 products of |w| ≤ 2¹⁵ and |x| ≤ 4095, so
//! |lane| ≤ 16·2¹⁵·4095 < 2³¹, and the lanes are widened to i64 before they are added.
//! Neural-network activations in Q4.12 are mostly below 1.0, so this path covers most
//! MVMs (all of MLP-L4's) at half the multiplies of the general path.
//!
//! General path: each input word x is split into a signed high byte and an unsigned low byte,
//! x = 256·h + l with h in [-128, 127] and l in [0, 255]. Then |w·l| < 2²³ and
//! |w·h| ≤ 2²², so a 16-bit multiply-add of pairs (`pmaddwd`) never overflows and
//! 128 such products sum to < 2³⁰ in an i32 lane. Sums are widened to i64 per block of
//! [`BLOCK`] columns, so the result Σ w·x is exact for any length. The SIMD paths
//! (AVX2 when the CPU has it, else SSE2, the x86-64 baseline) and the portable path give
//! identical results (tested against a plain i64 reference).

/// Columns summed in i32 before widening (see the bound above).
const BLOCK: usize = 128;

/// Largest |x| of the narrow path: 16 products of |w| ≤ 2¹⁵ and |x| ≤ 4095 per i32 lane
/// stay below 2³¹ (16·2¹⁵·4095 = 2³¹ − 2¹⁹).
pub const NARROW_MAX: i32 = 4095;

/// An input vector split into low and high bytes, ready for [`dot`].
pub struct Split {
    lo: Vec<i16>,
    hi: Vec<i16>,
    /// The words as i16 and their largest magnitude (narrow path).
    raw: Vec<i16>,
    max_abs: i32,
    /// Row sums of the last [`Split::dots_buf`].
    acc: Vec<i64>,
    #[cfg(target_arch = "x86_64")]
    avx2: bool,
    /// AVX-512 F+BW+VNNI: the narrow path's one-instruction multiply-accumulate.
    #[cfg(target_arch = "x86_64")]
    avx512: bool,
}

impl Split {
    pub fn new() -> Self {
        Split {
            lo: Vec::new(),
            hi: Vec::new(),
            raw: Vec::new(),
            max_abs: 0,
            acc: Vec::new(),
            #[cfg(target_arch = "x86_64")]
            avx2: std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            avx512: x86::avx512_available(),
        }
    }

    /// Load the 16-bit words `x` (values are taken modulo 2¹⁶, as registers hold them).
    /// The byte split is made only when the narrow path cannot take them.
    pub fn set(&mut self, x: &[i32]) {
        let n = x.len();
        self.raw.resize(n, 0);
        let mut m = 0i32;
        for (r, &v) in self.raw.iter_mut().zip(x) {
            *r = v as i16;
            m = m.max((v as i16 as i32).abs());
        }
        self.max_abs = m;
        #[cfg(target_arch = "x86_64")]
        if (self.avx2 || self.avx512) && n <= BLOCK && m <= NARROW_MAX {
            // `dots` takes the narrow path: lo/hi are not needed (`dot` falls back to
            // the raw words).
            self.lo.clear();
            self.hi.clear();
            return;
        }
        self.split_bytes();
    }

    /// Split the loaded words into bytes (the general path's operands).
    pub(crate) fn split_bytes(&mut self) {
        let n = self.raw.len();
        self.lo.resize(n, 0);
        self.hi.resize(n, 0);
        for k in 0..n {
            let r = self.raw[k];
            self.lo[k] = (r as i32 & 0xff) as i16;
            self.hi[k] = r >> 8;
        }
    }

    /// Σ_j w[j]·x[j] over the loaded x, exactly (`w.len()` must equal x's length).
    pub fn dot(&self, w: &[i16]) -> i64 {
        debug_assert_eq!(w.len(), self.raw.len());
        if self.lo.len() != self.raw.len() {
            return w
                .iter()
                .zip(&self.raw)
                .map(|(&a, &b)| a as i64 * b as i64)
                .sum();
        }
        let mut acc = 0i64;
        for (k, wb) in w.chunks(BLOCK).enumerate() {
            let r = k * BLOCK..k * BLOCK + wb.len();
            let (l, h) = self.block(wb, &self.lo[r.clone()], &self.hi[r]);
            acc += l as i64 + 256 * h as i64;
        }
        acc
    }

    /// [`Split::dots`] for `rows` rows into a buffer kept across calls.
    pub fn dots_buf(&mut self, w: &[i16], stride: usize, rows: usize) -> &[i64] {
        let mut acc = std::mem::take(&mut self.acc);
        // Every entry is overwritten by `dots`; growing zero-fills only once.
        acc.resize(rows, 0);
        self.dots(w, stride, &mut acc);
        self.acc = acc;
        &self.acc
    }

    /// `out[i] = Σ_j w[i·stride + j]·x[j]` for every `i < out.len()` (row-major matrix,
    /// rows of x's length), exactly.
    pub fn dots(&self, w: &[i16], stride: usize, out: &mut [i64]) {
        let n = self.raw.len();
        assert!(out.is_empty() || (out.len() - 1) * stride + n <= w.len());
        #[cfg(target_arch = "x86_64")]
        if self.avx512 && n <= BLOCK && self.max_abs <= NARROW_MAX {
            // SAFETY: the CPU supports AVX-512 F, BW and VNNI (checked at construction);
            // |x| ≤ NARROW_MAX.
            unsafe { x86::dots_narrow_avx512(w, stride, &self.raw, out) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if self.avx2 && n <= BLOCK {
            if self.max_abs <= NARROW_MAX {
                // SAFETY: the CPU supports AVX2 (checked at construction); |x| ≤ NARROW_MAX.
                unsafe { x86::dots_narrow_avx2(w, stride, &self.raw, out) };
            } else {
                // SAFETY: the CPU supports AVX2 (checked at construction).
                unsafe { x86::dots_avx2(w, stride, &self.lo, &self.hi, out) };
            }
            return;
        }
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.dot(&w[i * stride..i * stride + n]);
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn block(&self, w: &[i16], l: &[i16], h: &[i16]) -> (i32, i32) {
        if self.avx2 {
            // SAFETY: the CPU supports AVX2 (checked at construction).
            unsafe { x86::block_avx2(w, l, h) }
        } else {
            // SAFETY: SSE2 is part of the x86-64 baseline.
            unsafe { x86::block_sse2(w, l, h) }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn block(&self, w: &[i16], l: &[i16], h: &[i16]) -> (i32, i32) {
        block_portable(w, l, h)
    }
}

impl Default for Split {
    fn default() -> Self {
        Split::new()
    }
}

/// (Σ w·l, Σ w·h) over one block, plain Rust.
pub fn block_portable(w: &[i16], l: &[i16], h: &[i16]) -> (i32, i32) {
    let mut sl = 0i32;
    let mut sh = 0i32;
    for ((&a, &b), &c) in w.iter().zip(l).zip(h) {
        sl += a as i32 * b as i32;
        sh += a as i32 * c as i32;
    }
    (sl, sh)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::block_portable;
    use std::arch::x86_64::*;

    /// [`super::Split::dots`] for rows of at most `BLOCK` columns whose inputs `x`
    /// satisfy |x| ≤ `NARROW_MAX` (see the module comment): one multiply per weight,
    /// four rows at a time, lanes widened to i64 before the horizontal sums.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dots_narrow_avx2(w: &[i16], stride: usize, x: &[i16], out: &mut [i64]) {
        let n = x.len();
        let rows = out.len();
        if rows == 0 {
            return;
        }
        assert!(n <= super::BLOCK && (rows - 1) * stride + n <= w.len());
        debug_assert!(x.iter().all(|&v| (v as i32).abs() <= super::NARROW_MAX));
        let full = n / 16 * 16;
        let tail = |r: usize| -> i64 {
            let row = &w[r * stride + full..r * stride + n];
            row.iter()
                .zip(&x[full..n])
                .map(|(&a, &b)| a as i64 * b as i64)
                .sum()
        };
        // Lanes as i64: [a0+a4, a1+a5, a2+a6, a3+a7] (no i32 overflow, see the bound).
        let widen = |a: __m256i| {
            _mm256_add_epi64(
                _mm256_cvtepi32_epi64(_mm256_castsi256_si128(a)),
                _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(a)),
            )
        };
        let mut i = 0;
        while i + 4 <= rows {
            let mut acc = [_mm256_setzero_si256(); 4];
            // Weights stream from memory once per MVM: fetch the rows two blocks ahead.
            let ahead = (i + 16).min(rows - 1) * stride;
            let end = ((i + 20).min(rows) - 1) * stride + n;
            let mut q = ahead;
            while q < end {
                // SAFETY: prefetch is a hint; q < w.len() (asserted bound).
                unsafe { _mm_prefetch::<_MM_HINT_T0>(w.as_ptr().add(q) as *const i8) };
                q += 32;
            }
            let mut k = 0;
            while k < full {
                // SAFETY: k + 16 <= n and row i + 3 ends within w (asserted above).
                unsafe {
                    let xv = _mm256_loadu_si256(x.as_ptr().add(k) as *const __m256i);
                    for (r, a) in acc.iter_mut().enumerate() {
                        let p = w.as_ptr().add((i + r) * stride + k) as *const __m256i;
                        *a = _mm256_add_epi32(*a, _mm256_madd_epi16(_mm256_loadu_si256(p), xv));
                    }
                }
                k += 16;
            }
            let (s0, s1, s2, s3) = (widen(acc[0]), widen(acc[1]), widen(acc[2]), widen(acc[3]));
            // [s0a s1a s0b s1b] and [s2a s3a s2b s3b] (pairs of lanes added), then the
            // 128-bit halves added: one i64 row sum per lane.
            let u01 =
                _mm256_add_epi64(_mm256_unpacklo_epi64(s0, s1), _mm256_unpackhi_epi64(s0, s1));
            let u23 =
                _mm256_add_epi64(_mm256_unpacklo_epi64(s2, s3), _mm256_unpackhi_epi64(s2, s3));
            let sum = _mm256_add_epi64(
                _mm256_permute2x128_si256::<0x20>(u01, u23),
                _mm256_permute2x128_si256::<0x31>(u01, u23),
            );
            let mut v = [0i64; 4];
            // SAFETY: v holds 4 i64 = one 32-byte store.
            unsafe { _mm256_storeu_si256(v.as_mut_ptr() as *mut __m256i, sum) };
            for r in 0..4 {
                out[i + r] = v[r] + if full < n { tail(i + r) } else { 0 };
            }
            i += 4;
        }
        for r in i..rows {
            let mut a = _mm256_setzero_si256();
            let mut k = 0;
            while k < full {
                // SAFETY: k + 16 <= n and row r ends within w (asserted above).
                unsafe {
                    let xv = _mm256_loadu_si256(x.as_ptr().add(k) as *const __m256i);
                    let p = w.as_ptr().add(r * stride + k) as *const __m256i;
                    a = _mm256_add_epi32(a, _mm256_madd_epi16(_mm256_loadu_si256(p), xv));
                }
                k += 16;
            }
            let mut v = [0i64; 4];
            // SAFETY: v holds 4 i64 = one 32-byte store.
            unsafe { _mm256_storeu_si256(v.as_mut_ptr() as *mut __m256i, widen(a)) };
            out[r] = v.iter().sum::<i64>() + tail(r);
        }
    }

    /// The narrow path with AVX-512 (F, BW, VNNI): the input row (≤ 128 words) stays in
    /// four registers, each weight vector of 32 words is one masked load and one
    /// `vpdpwssd` (multiply pairs and accumulate in i32). Each i32 lane sums 2 products
    /// per 32 columns, at most 8 for 128 columns: |lane| ≤ 8·2¹⁵·4095 < 2³¹; the lanes
    /// are widened to i64 before the horizontal sum. Masked loads read nothing past a
    /// row's `x.len()` columns (the masked-out lanes are zero in both operands).
    ///
    /// # Safety
    /// The CPU must support AVX-512 F, BW and VNNI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn dots_narrow_avx512(w: &[i16], stride: usize, x: &[i16], out: &mut [i64]) {
        let n = x.len();
        let rows = out.len();
        if rows == 0 || n == 0 {
            out.fill(0);
            return;
        }
        assert!(n <= super::BLOCK && (rows - 1) * stride + n <= w.len());
        debug_assert!(x.iter().all(|&v| (v as i32).abs() <= super::NARROW_MAX));
        let chunks = n.div_ceil(32);
        let mut xv = [_mm512_setzero_si512(); 4];
        for (c, v) in xv.iter_mut().enumerate().take(chunks) {
            // SAFETY: the mask covers only words c·32 .. n of x.
            *v = unsafe { _mm512_maskz_loadu_epi16(chunk_mask(n, c), x.as_ptr().add(32 * c)) };
        }
        for (r, o) in out.iter_mut().enumerate() {
            if r % 4 == 0 && r + 16 < rows {
                // Weights stream from memory once per MVM: fetch four rows, 16 ahead.
                let a = (r + 16) * stride;
                let end = ((r + 20).min(rows) - 1) * stride + n;
                let mut q = a;
                while q < end {
                    // SAFETY: prefetch is a hint; q < w.len() (asserted bound).
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(w.as_ptr().add(q) as *const i8) };
                    q += 32;
                }
            }
            // SAFETY: row r's words r·stride .. r·stride + n lie within w (asserted).
            *o = unsafe { row_avx512(w.as_ptr().add(r * stride), n, &xv[..chunks]) };
        }
    }

    /// Lane mask of chunk `c` (32 words) of a row of `n` words.
    #[inline]
    fn chunk_mask(n: usize, c: usize) -> __mmask32 {
        let left = n - 32 * c;
        if left >= 32 { !0 } else { (1u32 << left) - 1 }
    }

    /// Σ_j p[j]·x[j] for j < n (x as 32-word chunks, zero past n), exactly.
    ///
    /// # Safety
    /// AVX-512 F/BW/VNNI; p[..n] readable; |x| ≤ NARROW_MAX and n ≤ 128.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn row_avx512(p: *const i16, n: usize, xv: &[__m512i]) -> i64 {
        let mut acc = _mm512_setzero_si512();
        for (c, &xc) in xv.iter().enumerate() {
            // SAFETY: the mask covers only words c·32 .. n of the row.
            let wv = unsafe { _mm512_maskz_loadu_epi16(chunk_mask(n, c), p.add(32 * c)) };
            acc = _mm512_dpwssd_epi32(acc, wv, xc);
        }
        let lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc));
        let hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(acc));
        _mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi))
    }

    pub fn avx512_available() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }

    /// [`super::Split::dots`] for rows of at most `BLOCK` columns, one call per matrix.
    /// Four rows at a time share the input loads; their eight accumulators are reduced
    /// together by horizontal adds.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dots_avx2(w: &[i16], stride: usize, l: &[i16], h: &[i16], out: &mut [i64]) {
        let n = l.len().min(h.len());
        let rows = out.len();
        if rows == 0 {
            return;
        }
        assert!((rows - 1) * stride + n <= w.len());
        let full = n / 16 * 16;
        let mut i = 0;
        while i + 4 <= rows {
            let mut acc = [_mm256_setzero_si256(); 8];
            // Weights stream from memory once per MVM: fetch the rows two blocks ahead.
            let ahead = (i + 16).min(rows - 1) * stride;
            let end = ((i + 20).min(rows) - 1) * stride + n;
            let mut q = ahead;
            while q < end {
                // SAFETY: prefetch is a hint; q < w.len() (asserted bound).
                unsafe { _mm_prefetch::<_MM_HINT_T0>(w.as_ptr().add(q) as *const i8) };
                q += 32;
            }
            let mut k = 0;
            while k < full {
                // SAFETY: k + 16 <= n and row i + 3 ends within w (asserted above).
                unsafe {
                    let lv = _mm256_loadu_si256(l.as_ptr().add(k) as *const __m256i);
                    let hv = _mm256_loadu_si256(h.as_ptr().add(k) as *const __m256i);
                    for r in 0..4 {
                        let p = w.as_ptr().add((i + r) * stride + k) as *const __m256i;
                        let wv = _mm256_loadu_si256(p);
                        acc[2 * r] = _mm256_add_epi32(acc[2 * r], _mm256_madd_epi16(wv, lv));
                        acc[2 * r + 1] =
                            _mm256_add_epi32(acc[2 * r + 1], _mm256_madd_epi16(wv, hv));
                    }
                }
                k += 16;
            }
            // [l0 h0 l1 h1] and [l2 h2 l3 h3], each lane a full row sum.
            let a = _mm256_hadd_epi32(
                _mm256_hadd_epi32(acc[0], acc[1]),
                _mm256_hadd_epi32(acc[2], acc[3]),
            );
            let b = _mm256_hadd_epi32(
                _mm256_hadd_epi32(acc[4], acc[5]),
                _mm256_hadd_epi32(acc[6], acc[7]),
            );
            let a = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256::<1>(a));
            let b = _mm_add_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256::<1>(b));
            let mut v = [0i32; 8];
            // SAFETY: v holds 8 i32 = two 16-byte stores.
            unsafe {
                _mm_storeu_si128(v.as_mut_ptr() as *mut __m128i, a);
                _mm_storeu_si128(v.as_mut_ptr().add(4) as *mut __m128i, b);
            }
            for r in 0..4 {
                let row = &w[(i + r) * stride..(i + r) * stride + n];
                let (tl, th) = block_portable(&row[full..], &l[full..n], &h[full..n]);
                out[i + r] = (v[2 * r] + tl) as i64 + 256 * (v[2 * r + 1] + th) as i64;
            }
            i += 4;
        }
        for r in i..rows {
            // SAFETY: AVX2 is enabled in this function.
            let (sl, sh) = unsafe { block_avx2(&w[r * stride..r * stride + n], l, h) };
            out[r] = sl as i64 + 256 * sh as i64;
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn block_avx2(w: &[i16], l: &[i16], h: &[i16]) -> (i32, i32) {
        let n = w.len().min(l.len()).min(h.len());
        let full = n / 16 * 16;
        let mut al = _mm256_setzero_si256();
        let mut ah = _mm256_setzero_si256();
        let mut k = 0;
        while k < full {
            // SAFETY: k + 16 <= n, so each 32-byte unaligned load stays in bounds.
            let (wv, lv, hv) = unsafe {
                (
                    _mm256_loadu_si256(w.as_ptr().add(k) as *const __m256i),
                    _mm256_loadu_si256(l.as_ptr().add(k) as *const __m256i),
                    _mm256_loadu_si256(h.as_ptr().add(k) as *const __m256i),
                )
            };
            al = _mm256_add_epi32(al, _mm256_madd_epi16(wv, lv));
            ah = _mm256_add_epi32(ah, _mm256_madd_epi16(wv, hv));
            k += 16;
        }
        let sl = _mm_add_epi32(
            _mm256_castsi256_si128(al),
            _mm256_extracti128_si256::<1>(al),
        );
        let sh = _mm_add_epi32(
            _mm256_castsi256_si128(ah),
            _mm256_extracti128_si256::<1>(ah),
        );
        let (rl, rh) = block_portable(&w[full..n], &l[full..n], &h[full..n]);
        (hsum128(sl) + rl, hsum128(sh) + rh)
    }

    #[target_feature(enable = "sse2")]
    pub fn block_sse2(w: &[i16], l: &[i16], h: &[i16]) -> (i32, i32) {
        let n = w.len().min(l.len()).min(h.len());
        let full = n / 8 * 8;
        let mut al = _mm_setzero_si128();
        let mut ah = _mm_setzero_si128();
        let mut k = 0;
        while k < full {
            // SAFETY: k + 8 <= n, so each 16-byte unaligned load stays in bounds.
            let (wv, lv, hv) = unsafe {
                (
                    _mm_loadu_si128(w.as_ptr().add(k) as *const __m128i),
                    _mm_loadu_si128(l.as_ptr().add(k) as *const __m128i),
                    _mm_loadu_si128(h.as_ptr().add(k) as *const __m128i),
                )
            };
            al = _mm_add_epi32(al, _mm_madd_epi16(wv, lv));
            ah = _mm_add_epi32(ah, _mm_madd_epi16(wv, hv));
            k += 8;
        }
        let (rl, rh) = block_portable(&w[full..n], &l[full..n], &h[full..n]);
        (hsum128(al) + rl, hsum128(ah) + rh)
    }

    #[target_feature(enable = "sse2")]
    fn hsum128(v: __m128i) -> i32 {
        let s = _mm_add_epi32(v, _mm_shuffle_epi32::<0b01_00_11_10>(v));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        _mm_cvtsi128_si32(s)
    }

    #[cfg(test)]
    pub fn avx2_available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(w: &[i16], x: &[i32]) -> i64 {
        w.iter()
            .zip(x)
            .map(|(&a, &b)| a as i64 * b as i16 as i64)
            .sum()
    }

    fn rng(seed: u64) -> impl FnMut() -> i32 {
        let mut st = seed;
        move || {
            st = st
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((st >> 33) as i64 % 65536 - 32768) as i32
        }
    }

    /// Every path (dispatching, portable, SSE2, AVX2 where present) equals the i64
    /// reference on random data, all-extreme data (-32768 · -32768 pairs, which would
    /// overflow an unsplit `pmaddwd`) and lengths that are not multiples of the vector width.
    #[test]
    fn all_paths_equal_reference() {
        let mut next = rng(7);
        for &n in &[1usize, 7, 8, 15, 16, 17, 100, 128, 129, 300, 512] {
            for case in 0..4 {
                let (w, x): (Vec<i16>, Vec<i32>) = match case {
                    0 => (0..n).map(|_| (next() as i16, next())).unzip(),
                    1 => (vec![i16::MIN; n], vec![-32768; n]),
                    2 => (vec![i16::MAX; n], vec![-32768; n]),
                    _ => (0..n)
                        .map(|i| {
                            let e = [i16::MIN, i16::MAX, -1, 0][(i + case) % 4];
                            (e, [32767, -32768, 255, -256][i % 4])
                        })
                        .unzip(),
                };
                let want = reference(&w, &x);
                let mut s = Split::new();
                s.set(&x);
                assert_eq!(s.dot(&w), want, "dispatch n={n} case={case}");
                s.split_bytes();
                assert_eq!(s.dot(&w), want, "split n={n} case={case}");
                let mut acc = [0i64; 3];
                for (k, wb) in w.chunks(BLOCK).enumerate() {
                    let r = k * BLOCK..k * BLOCK + wb.len();
                    let (l, h) = (&s.lo[r.clone()], &s.hi[r]);
                    let mut add =
                        |i: usize, (a, b): (i32, i32)| acc[i] += a as i64 + 256 * b as i64;
                    add(0, block_portable(wb, l, h));
                    #[cfg(target_arch = "x86_64")]
                    {
                        // SAFETY: SSE2 is part of the x86-64 baseline.
                        add(1, unsafe { x86::block_sse2(wb, l, h) });
                        if x86::avx2_available() {
                            // SAFETY: AVX2 is available.
                            add(2, unsafe { x86::block_avx2(wb, l, h) });
                        } else {
                            add(2, block_portable(wb, l, h));
                        }
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    {
                        add(1, block_portable(wb, l, h));
                        add(2, block_portable(wb, l, h));
                    }
                }
                assert_eq!(acc, [want; 3], "paths n={n} case={case}");
            }
        }
    }

    /// The narrow path (|x| ≤ NARROW_MAX, one multiply per weight) equals the reference,
    /// including its worst case (every product −32768 · ±4095, 16 per i32 lane), and
    /// inputs just past the bound (4096, −32768) take the general path correctly.
    #[test]
    fn narrow_path_equals_reference_at_its_bound() {
        let mut next = rng(5);
        for &(rows, cols, stride) in &[
            (128, 128, 128),
            (7, 100, 128),
            (5, 16, 16),
            (9, 33, 40),
            (21, 127, 128),
            (3, 1, 1),
            (40, 64, 128),
            (17, 97, 100),
        ] {
            for case in 0..5 {
                let w: Vec<i16> = (0..(rows - 1) * stride + cols)
                    .map(|_| match case {
                        0 | 3 => i16::MIN,
                        1 => i16::MAX,
                        _ => next() as i16,
                    })
                    .collect();
                let x: Vec<i32> = (0..cols)
                    .map(|j| match case {
                        0 => NARROW_MAX,
                        1 => -NARROW_MAX,
                        2 => next() % (NARROW_MAX + 1),
                        3 => {
                            if j == 0 {
                                -32768
                            } else {
                                4096
                            }
                        }
                        _ => next(),
                    })
                    .collect();
                let mut s = Split::new();
                s.set(&x);
                assert_eq!(s.max_abs <= NARROW_MAX, case < 3, "case {case}");
                let want: Vec<i64> = (0..rows)
                    .map(|r| reference(&w[r * stride..r * stride + cols], &x))
                    .collect();
                let mut out = vec![0i64; rows];
                s.dots(&w, stride, &mut out);
                assert_eq!(out, want, "rows={rows} cols={cols} case={case}");
                assert_eq!(s.dots_buf(&w, stride, rows), &want[..]);
                #[cfg(target_arch = "x86_64")]
                if case < 3 && x86::avx2_available() {
                    let mut out = vec![0i64; rows];
                    // SAFETY: AVX2 is available; |x| ≤ NARROW_MAX (asserted above).
                    unsafe { x86::dots_narrow_avx2(&w, stride, &s.raw, &mut out) };
                    assert_eq!(
                        out, want,
                        "narrow kernel rows={rows} cols={cols} case={case}"
                    );
                }
                #[cfg(target_arch = "x86_64")]
                if case < 3 && x86::avx512_available() {
                    let mut out = vec![0i64; rows];
                    // SAFETY: AVX-512 F/BW/VNNI are available; |x| ≤ NARROW_MAX.
                    unsafe { x86::dots_narrow_avx512(&w, stride, &s.raw, &mut out) };
                    assert_eq!(
                        out, want,
                        "avx512 kernel rows={rows} cols={cols} case={case}"
                    );
                }
            }
        }
    }

    /// The matrix path (four rows at a time, strided rows, row counts that are not a
    /// multiple of four, ragged column counts) equals the reference row by row.
    #[test]
    fn dots_equal_reference() {
        let mut next = rng(11);
        for &(rows, cols, stride) in &[
            (1, 128, 128),
            (4, 128, 128),
            (7, 100, 128),
            (9, 33, 40),
            (128, 128, 128),
            (6, 128, 256),
            (3, 300, 300),
        ] {
            for extreme in [false, true] {
                let w: Vec<i16> = (0..(rows - 1) * stride + cols)
                    .map(|_| if extreme { i16::MIN } else { next() as i16 })
                    .collect();
                let x: Vec<i32> = (0..cols)
                    .map(|_| if extreme { -32768 } else { next() })
                    .collect();
                let mut s = Split::new();
                s.set(&x);
                let mut out = vec![0i64; rows];
                s.dots(&w, stride, &mut out);
                for r in 0..rows {
                    assert_eq!(
                        out[r],
                        reference(&w[r * stride..r * stride + cols], &x),
                        "rows={rows} cols={cols} r={r}"
                    );
                }
            }
        }
    }
}
