//! Packing helpers of the integer GEMM: four byte rows interleaved column by column
//! (`dst[c * 4 + j] = row_j[c]`, the column operand's layout) and four rows of 4-byte
//! groups transposed (`[group][row][4]`, the row operand's layout); and the inverse for
//! stride-2 rows: a row split into its two column phases ([`split_pairs`]).

/// `even[j] = pairs[j][0]` and `odd[j] = pairs[j][1]` for j below the shortest of the
/// three: a stride-2 row's two column phases. Slices of one length indexed together, so
/// inlined into a vector trampoline it compiles to a de-interleave (a strided iterator
/// or a zip of three iterators is a scalar loop).
#[inline(always)]
pub(crate) fn split_pairs<T: Copy>(pairs: &[[T; 2]], even: &mut [T], odd: &mut [T]) {
    split_pairs_map(pairs, even, odd, |v| v)
}

/// [`split_pairs`] converting each element with `f` on the way (codes widened as they
/// are de-interleaved).
#[inline(always)]
pub(crate) fn split_pairs_map<S: Copy, T>(
    pairs: &[[S; 2]],
    even: &mut [T],
    odd: &mut [T],
    f: impl Fn(S) -> T,
) {
    let n = pairs.len().min(even.len()).min(odd.len());
    let (pairs, even, odd) = (&pairs[..n], &mut even[..n], &mut odd[..n]);
    for j in 0..n {
        even[j] = f(pairs[j][0]);
        odd[j] = f(pairs[j][1]);
    }
}

/// Interleave rows `j < rows` (bytes `data[offs[j]..offs[j] + w]`; rows `rows..4` are
/// zeros) into `dst[c * 4 + j]` for c < w, flipping bits with `xor`.
#[inline(always)]
pub(crate) fn interleave4(
    data: &[u8],
    offs: [usize; 4],
    rows: usize,
    w: usize,
    xor: u8,
    dst: &mut [u8],
) {
    let dst = &mut dst[..w * 4];
    for &o in &offs[..rows] {
        assert!(o + w <= data.len(), "interleave4: row outside the data");
    }
    let done = {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: every row j < rows holds w bytes (asserted); dst holds 4w bytes.
            unsafe { interleave4_sse2(data.as_ptr(), offs, rows, w, xor, dst.as_mut_ptr()) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            0
        }
    };
    for c in done..w {
        for j in 0..4 {
            dst[c * 4 + j] = if j < rows { data[offs[j] + c] ^ xor } else { 0 };
        }
    }
}

/// The first `w / 4 * 4` columns of [`interleave4`] with SSE2 byte/word unpacks (16,
/// then 8, then 4 columns per step); returns how many columns it wrote.
///
/// # Safety
/// Rows j < rows hold `w` readable bytes at `data + offs[j]`; `dst` has `4 w` bytes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn interleave4_sse2(
    data: *const u8,
    offs: [usize; 4],
    rows: usize,
    w: usize,
    xor: u8,
    dst: *mut u8,
) -> usize {
    use std::arch::x86_64::*;
    let full = w / 4 * 4;
    // SAFETY: SSE2 is part of x86_64. Loads read 16, 8 or 4 bytes at column c with
    // c + width <= full <= w inside each valid row; stores write 4 bytes per column at
    // 4c, inside the 4w bytes of dst (the caller's contract).
    unsafe {
        let x = _mm_set1_epi8(xor as i8);
        let get = |j: usize, c: usize, width: usize| {
            if j >= rows {
                return _mm_setzero_si128();
            }
            let p = data.add(offs[j] + c);
            let v = match width {
                16 => _mm_loadu_si128(p as *const __m128i),
                8 => _mm_loadl_epi64(p as *const __m128i),
                _ => _mm_cvtsi32_si128((p as *const i32).read_unaligned()),
            };
            _mm_xor_si128(v, x)
        };
        let mut c = 0;
        while c < full {
            let width = if full - c >= 16 {
                16
            } else if full - c >= 8 {
                8
            } else {
                4
            };
            let (a, b, e, f) = (
                get(0, c, width),
                get(1, c, width),
                get(2, c, width),
                get(3, c, width),
            );
            let (ab_lo, ef_lo) = (_mm_unpacklo_epi8(a, b), _mm_unpacklo_epi8(e, f));
            let p = dst.add(c * 4) as *mut __m128i;
            _mm_storeu_si128(p, _mm_unpacklo_epi16(ab_lo, ef_lo));
            if width >= 8 {
                _mm_storeu_si128(p.add(1), _mm_unpackhi_epi16(ab_lo, ef_lo));
            }
            if width == 16 {
                let (ab_hi, ef_hi) = (_mm_unpackhi_epi8(a, b), _mm_unpackhi_epi8(e, f));
                _mm_storeu_si128(p.add(2), _mm_unpacklo_epi16(ab_hi, ef_hi));
                _mm_storeu_si128(p.add(3), _mm_unpackhi_epi16(ab_hi, ef_hi));
            }
            c += width;
        }
    }
    full
}

/// Rows `j < rows` of 4-byte groups (`data[offs[j]..]`, `groups` groups each) stored
/// transposed: group g of row j goes to `dst[g * stride + 4 j..][..4]`, for j < `width`
/// (rows `rows..width` are written as zeros), flipping bits with `xor`.
#[inline(always)]
pub(crate) fn transpose_groups4(
    data: &[u8],
    offs: [usize; 4],
    (rows, width): (usize, usize),
    groups: usize,
    xor: u8,
    dst: &mut [u8],
    stride: usize,
) {
    assert!(
        rows <= width && width <= 4,
        "transpose_groups4: bad row counts"
    );
    for &o in &offs[..rows] {
        assert!(
            o + groups * 4 <= data.len(),
            "transpose_groups4: row outside the data"
        );
    }
    if groups == 0 {
        return;
    }
    assert!(
        (groups - 1) * stride + width * 4 <= dst.len(),
        "transpose_groups4: short dst"
    );
    let done = {
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: bounds asserted above (rows hold `groups` groups, dst every slot).
            unsafe { transpose_sse2(data.as_ptr(), offs, (rows, width), groups, xor, dst, stride) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            0
        }
    };
    for g in done..groups {
        for j in 0..width {
            for b in 0..4 {
                dst[g * stride + j * 4 + b] = if j < rows {
                    data[offs[j] + g * 4 + b] ^ xor
                } else {
                    0
                };
            }
        }
    }
}

/// The first `groups / 4 * 4` groups of [`transpose_groups4`]: 4x4 transposes of
/// 32-bit lanes; returns how many groups it wrote.
///
/// # Safety
/// As [`transpose_groups4`] asserts.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn transpose_sse2(
    data: *const u8,
    offs: [usize; 4],
    (rows, width): (usize, usize),
    groups: usize,
    xor: u8,
    dst: &mut [u8],
    stride: usize,
) -> usize {
    use std::arch::x86_64::*;
    let full = groups / 4 * 4;
    // SAFETY: loads read 16 bytes at group g < full inside each valid row; stores write
    // width * 4 <= 16 bytes at g * stride inside dst (the caller's contract).
    unsafe {
        let x = _mm_set1_epi8(xor as i8);
        let get = |j: usize, g: usize| {
            if j >= rows {
                _mm_setzero_si128()
            } else {
                let v = _mm_loadu_si128(data.add(offs[j] + g * 4) as *const __m128i);
                _mm_xor_si128(v, x)
            }
        };
        let d = dst.as_mut_ptr();
        let mut g = 0;
        while g < full {
            let (a, b, c, e) = (get(0, g), get(1, g), get(2, g), get(3, g));
            let (t0, t1) = (_mm_unpacklo_epi32(a, b), _mm_unpacklo_epi32(c, e));
            let (t2, t3) = (_mm_unpackhi_epi32(a, b), _mm_unpackhi_epi32(c, e));
            let out = [
                _mm_unpacklo_epi64(t0, t1),
                _mm_unpackhi_epi64(t0, t1),
                _mm_unpacklo_epi64(t2, t3),
                _mm_unpackhi_epi64(t2, t3),
            ];
            for (i, o) in out.iter().enumerate() {
                let p = d.add((g + i) * stride);
                match width {
                    4 => _mm_storeu_si128(p as *mut __m128i, *o),
                    _ => {
                        let lanes: [u8; 16] = std::mem::transmute(*o);
                        std::ptr::copy_nonoverlapping(lanes.as_ptr(), p, width * 4);
                    }
                }
            }
            g += 4;
        }
    }
    full
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_matches_the_definition() {
        let data: Vec<u8> = (0..=255).collect();
        for rows in 0..=4 {
            for width in rows.max(1)..=4 {
                for groups in [0, 1, 3, 4, 5, 9, 16] {
                    let offs = [0, 64, 128, 180];
                    let stride = 24;
                    let mut dst = vec![0xAAu8; groups * stride + 16];
                    transpose_groups4(&data, offs, (rows, width), groups, 0x80, &mut dst, stride);
                    for g in 0..groups {
                        for j in 0..4 {
                            for b in 0..4 {
                                let got = dst[g * stride + j * 4 + b];
                                let want = if j >= width {
                                    0xAA
                                } else if j < rows {
                                    data[offs[j] + g * 4 + b] ^ 0x80
                                } else {
                                    0
                                };
                                assert_eq!(got, want, "rows {rows} width {width} g {g} j {j}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn matches_the_definition() {
        let data: Vec<u8> = (0..=255).collect();
        for rows in 0..=4 {
            for w in [0, 1, 3, 4, 7, 8, 12, 16, 19, 33, 48] {
                let offs = [5, 60, 121, 190];
                let mut dst = vec![0xAAu8; w * 4];
                interleave4(&data, offs, rows, w, 0x80, &mut dst);
                for c in 0..w {
                    for j in 0..4 {
                        let want = if j < rows {
                            data[offs[j] + c] ^ 0x80
                        } else {
                            0
                        };
                        assert_eq!(dst[c * 4 + j], want, "rows {rows} w {w} c {c} j {j}");
                    }
                }
            }
        }
    }
}
