//! The integer GEMM driver: `acc[r][c] = sum_k (A[r][k] - zr[r]) * (B[k][c] - zc[c])`
//! in wrapping int32, for u8 or i8 operands.
//!
//! The micro-kernels multiply unsigned bytes (the column operand, B) by signed bytes
//! (the row operand, A), as `vpdpbusd` does. Any operand of the other signedness is
//! converted exactly by flipping its top bit (`v ^ 0x80`: u8 v -> i8 v - 128, i8 v ->
//! u8 v + 128) and moving its zero point by the same 128. The zero points are applied
//! after the product, MLAS style:
//! `acc = sum(a*b) + zc[c]*(K*zr[r] - rowsum[r]) - zr[r]*colsum[c]`, an identity in
//! Z/2^32, so the result equals the direct formula for every input.
//!
//! Work is split into (column panel, row range) tasks: each task packs its panel of B
//! (at most 48 columns, `[k/4][columns][4]` bytes) into a thread-local buffer and runs
//! the micro-kernel over its row blocks; A is packed once per call.

use super::interleave::{interleave4, transpose_groups4};
use super::qgemm_kernels::{TILE_LD, Tile, run_tasks};
use super::{Isa, isa};

/// An operand stored as u8 or i8 bytes: element (index, k) is
/// `data[index * s_idx + k * s_k]`, where index is the row (A) or column (B).
#[derive(Clone, Copy)]
pub(crate) struct Strided<'a> {
    pub data: &'a [u8],
    pub signed: bool,
    pub s_idx: usize,
    pub s_k: usize,
}

/// Zero points of an operand: one value, or one per row (A) / column (B).
#[derive(Clone, Copy)]
pub(crate) enum Zp<'a> {
    Scalar(i32),
    Each(&'a [i32]),
}

impl Zp<'_> {
    pub(crate) fn get(&self, i: usize) -> i32 {
        match self {
            Zp::Scalar(z) => *z,
            Zp::Each(v) => v[i],
        }
    }
}

/// Source of the column operand B, packed panel by panel.
pub(crate) trait ColSource: Sync {
    /// True when the stored bytes are i8 (they are converted to u8 with `^ 0x80`).
    fn signed(&self) -> bool;
    /// Write columns `n0..n0 + w` for k in `0..k` as u8 into `dst` laid out
    /// `[ceil(k/4)][pw][4]`; every byte of `dst` past the data (k tail, columns `w..pw`)
    /// must be 0.
    fn pack(&self, n0: usize, w: usize, pw: usize, k: usize, dst: &mut [u8]);
}

/// Receives the finished accumulators, one tile at a time.
pub(crate) trait Sink: Sync {
    /// Output (r0 + r, c0 + c) is `acc[r * TILE_LD + c] + row_add[r]` (wrapping) for
    /// r < nr, c < nc: `row_add` carries the zero-point correction when it is constant
    /// along a row, so a requantizing sink folds it into its bias.
    fn tile(&self, r0: usize, nr: usize, c0: usize, nc: usize, acc: &Tile, row_add: &[i32]);
}

/// A GEMM problem: M rows of A, N columns of B, reduction length K.
pub(crate) struct QGemm<'a, C: ColSource> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub a: Strided<'a>,
    pub a_zp: Zp<'a>,
    pub b: &'a C,
    pub b_zp: Zp<'a>,
    /// onnxruntime's AVX2 u8 x s8 products (`OrtKernels::u8s8_pair_saturation`): the raw
    /// bytes of B (u8) and A (s8) multiplied and summed in pairs k = 2j, 2j + 1 with
    /// 16-bit saturation (`vpmaddubsw`) before the int32 sum. Needs unflipped operands
    /// (A stored as i8, B as u8); the zero points are applied after, exactly, as MLAS does.
    pub sat16: bool,
}

/// A packed into row blocks of `mr` rows: block `i` holds `[k4][mr][4]` i8 bytes
/// (rows past M and k past K are 0), plus per-row sums and effective zero points.
pub(crate) struct PackedA {
    pub mr: usize,
    pub k4: usize,
    pub data: Vec<u8>,
    pub row_sum: Vec<i32>,
    pub zp: Vec<i32>,
}

impl PackedA {
    pub(crate) fn block(&self, i: usize) -> &[u8] {
        let len = self.k4 * self.mr * 4;
        &self.data[i * len..(i + 1) * len]
    }
}

/// Pack A for micro-kernels with `mr` rows per block, converting u8 to i8.
#[inline(always)]
pub(crate) fn pack_a(a: Strided, zp: Zp, m: usize, k: usize, mr: usize) -> PackedA {
    let k4 = k.div_ceil(4);
    let blocks = m.div_ceil(mr);
    let mut data = vec![0u8; blocks * k4 * mr * 4];
    let mut row_sum = vec![0i32; m];
    let xor = if a.signed { 0 } else { 0x80 };
    let stride = mr * 4;
    if a.s_k == 1 {
        // Contiguous rows: whole 4-byte groups transposed four rows at a time, then the
        // k tail byte by byte.
        for blk in 0..blocks {
            let block = &mut data[blk * k4 * stride..(blk + 1) * k4 * stride];
            for r4 in (0..mr).step_by(4) {
                let r0 = blk * mr + r4;
                if r0 >= m {
                    break;
                }
                let width = (mr - r4).min(4);
                let rows = (m - r0).min(width);
                let offs = std::array::from_fn(|j| (r0 + j.min(rows - 1)) * a.s_idx);
                transpose_groups4(
                    a.data,
                    offs,
                    (rows, width),
                    k / 4,
                    xor,
                    &mut block[r4 * 4..],
                    stride,
                );
            }
        }
        for r in 0..m {
            let row = &a.data[r * a.s_idx..][..k];
            let (blk, rr) = (r / mr, r % mr);
            for kk in k / 4 * 4..k {
                data[blk * k4 * stride + ((kk / 4) * mr + rr) * 4 + kk % 4] = row[kk] ^ xor;
            }
            row_sum[r] = row
                .iter()
                .fold(0i32, |s, &v| s.wrapping_add((v ^ xor) as i8 as i32));
        }
    } else {
        for r in 0..m {
            let (blk, rr) = (r / mr, r % mr);
            let block = &mut data[blk * k4 * stride..(blk + 1) * k4 * stride];
            let src = &a.data[r * a.s_idx..];
            let mut sum = 0i32;
            for kk in 0..k {
                let v = src[kk * a.s_k] ^ xor;
                sum = sum.wrapping_add(v as i8 as i32);
                block[((kk / 4) * mr + rr) * 4 + kk % 4] = v;
            }
            row_sum[r] = sum;
        }
    }
    let shift = if a.signed { 0 } else { 128 };
    let zp = (0..m).map(|r| zp.get(r).wrapping_sub(shift)).collect();
    PackedA {
        mr,
        k4,
        data,
        row_sum,
        zp,
    }
}

impl ColSource for Strided<'_> {
    fn signed(&self) -> bool {
        self.signed
    }

    #[inline(always)]
    fn pack(&self, n0: usize, w: usize, pw: usize, k: usize, dst: &mut [u8]) {
        let xor = if self.signed { 0x80 } else { 0 };
        let k4 = k.div_ceil(4);
        dst[..k4 * pw * 4].fill(0);
        if self.s_idx == 1 {
            // Each k is a contiguous run of columns (row-major B, NCHW pixels).
            for q in 0..k4 {
                let offs = std::array::from_fn(|j| (q * 4 + j) * self.s_k + n0);
                let rows = (k - q * 4).min(4);
                interleave4(self.data, offs, rows, w, xor, &mut dst[q * pw * 4..]);
            }
        } else if self.s_k == 1 {
            // Each column's k values are contiguous (a transposed operand).
            for c in 0..w {
                let src = &self.data[(n0 + c) * self.s_idx..][..k];
                let mut groups = src.chunks_exact(4);
                for (q, g4) in groups.by_ref().enumerate() {
                    let d = &mut dst[(q * pw + c) * 4..][..4];
                    for j in 0..4 {
                        d[j] = g4[j] ^ xor;
                    }
                }
                let q = k / 4;
                for (j, &v) in groups.remainder().iter().enumerate() {
                    dst[(q * pw + c) * 4 + j] = v ^ xor;
                }
            }
        } else {
            for c in 0..w {
                let src = &self.data[(n0 + c) * self.s_idx..];
                for kk in 0..k {
                    dst[((kk / 4) * pw + c) * 4 + kk % 4] = src[kk * self.s_k] ^ xor;
                }
            }
        }
    }
}

/// Run the GEMM on this host's best kernels, handing every tile to `sink`.
pub(crate) fn qgemm<C: ColSource, S: Sink>(g: &QGemm<C>, sink: &S) {
    qgemm_with(isa(), g, sink)
}

/// [`qgemm`] on a chosen instruction set (tests compare every set the host has).
pub(crate) fn qgemm_with<C: ColSource, S: Sink>(isa: Isa, g: &QGemm<C>, sink: &S) {
    if g.m == 0 || g.n == 0 {
        return;
    }
    run_tasks(isa, g, sink);
}

/// Stores the int32 accumulators: `out[r * ld + c]`, or `out[c * ld + r]` when
/// `transposed` (the GEMM ran on the transposed problem).
pub(crate) struct StoreI32 {
    pub out: super::SendPtr<i32>,
    pub len: usize,
    pub ld: usize,
    pub transposed: bool,
}

impl Sink for StoreI32 {
    #[inline(always)]
    fn tile(&self, r0: usize, nr: usize, c0: usize, nc: usize, acc: &Tile, row_add: &[i32]) {
        for r in 0..nr {
            let row = &acc[r * TILE_LD..r * TILE_LD + nc];
            let add = row_add[r];
            for (c, &v) in row.iter().enumerate() {
                let v = v.wrapping_add(add);
                let i = if self.transposed {
                    (c0 + c) * self.ld + r0 + r
                } else {
                    (r0 + r) * self.ld + c0 + c
                };
                assert!(i < self.len, "StoreI32: tile outside the output");
                // SAFETY: i is inside the buffer (checked) and tiles are disjoint.
                unsafe { *self.out.get().add(i) = v };
            }
        }
    }
}

/// `sum_k (a[m][k] - a_zp[m]) * (b[k][n] - b_zp[n])` for u8/i8 row-major matrices,
/// result row-major `[m][n]` (MatMulInteger, QLinearMatMul, QGemm). The operand with
/// more columns of output goes on the kernels' vector lanes.
pub(crate) fn matmul_i32(
    (m, k, n): (usize, usize, usize),
    a: Strided,
    a_zp: Zp,
    b: Strided,
    b_zp: Zp,
    out: &mut [i32],
) {
    assert!(out.len() >= m * n, "matmul_i32: output too small");
    // onnxruntime's u8 (A) x s8 (B) kernels on AVX2 without VNNI saturate pair sums; the
    // transposed product puts B's raw s8 bytes on the rows and A's raw u8 on the lanes.
    let sat16 = crate::ort_kernels::saturating_u8s8() && !a.signed && b.signed;
    if !sat16 && a.s_k == 1 && b.s_k == 1 && m == 1 {
        // One row against columns contiguous along k: dot products, no packing.
        super::qgemv::gemv_i32(k, (a, a_zp.get(0)), (b, b_zp), n, out, 1);
        return;
    }
    if !sat16 && a.s_k == 1 && b.s_k == 1 && n == 1 {
        super::qgemv::gemv_i32(k, (b, b_zp.get(0)), (a, a_zp), m, out, 1);
        return;
    }
    let ptr = super::SendPtr(out.as_mut_ptr());
    let len = out.len();
    if !sat16 && (n >= 16 || n >= m) {
        // Rows of A on the broadcast side, columns of B on the lanes.
        let g = QGemm {
            m,
            n,
            k,
            a,
            a_zp,
            b: &b,
            b_zp,
            sat16: false,
        };
        let sink = StoreI32 {
            out: ptr,
            len,
            ld: n,
            transposed: false,
        };
        qgemm(&g, &sink);
    } else {
        // C^T = B^T A^T: columns of B become the rows, rows of A the lane columns.
        // A Strided is addressed by (index, k), so both operands keep their strides.
        let g = QGemm {
            m: n,
            n: m,
            k,
            a: b,
            a_zp: b_zp,
            b: &a,
            b_zp: a_zp,
            sat16,
        };
        let sink = StoreI32 {
            out: ptr,
            len,
            ld: n,
            transposed: true,
        };
        qgemm(&g, &sink);
    }
}
