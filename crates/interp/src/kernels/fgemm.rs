//! The f32 GEMM: `c[m x n] = a[m x k] * b[k x n]` (+ a per-row bias) on packed panels,
//! BLIS style. A is packed in panels of `MR` rows (`[panel][k][MR]`), B in panels of
//! `NR` columns (`[panel][k][NR]`); a micro-kernel multiplies one `MR x NR` tile over a
//! block of k. Either operand may be packed once and kept ([`Panels`]: constant weights,
//! see `exec`'s prepared-operand cache), packed per call from a strided matrix, packed
//! straight from a convolution input ([`PackB`], e.g. `kernels::fim2col`), or, for B,
//! read in place when its rows are contiguous (a 1x1 convolution's input).
//!
//! Every output element is one chain of fused multiply-adds in k order, starting at 0,
//! with the bias added last (where the kernel family has FMA: every x86 path here
//! and aarch64; the portable path on other hosts multiplies and adds). Blocking,
//! thread count and tile position therefore never change a result, and the AVX-512,
//! AVX2 and portable-with-FMA paths give the same bits.

use super::act::Act;
use super::fgemm_kernels::{Fk, kernel};
use super::{SendPtr, threads};
use rayon::prelude::*;
use std::cell::RefCell;

/// Depth of one k block (B's micro-panel `KC x NR` stays in L1 across the row tiles).
const KC: usize = 256;
/// Rows of A per block (the `MC x KC` block of A stays in L2).
const MC: usize = 192;

/// Columns of B packed per block (a multiple of every NR).
const NC: usize = 1024;

/// A matrix packed once in the panel layout of one kernel family: `rows` (m of A or n
/// of B) split into panels of `w` (MR or NR), each `[k][w]`, zero-padded.
pub(crate) struct Panels {
    pub fk: Fk,
    pub rows: usize,
    pub k: usize,
    w: usize,
    data: Vec<f32>,
}

impl Panels {
    /// Pack `a(i, kk) = a[i * rs + kk * cs]` (`rows x k`) as the A operand.
    pub(crate) fn pack_a(
        fk: Fk,
        a: &[f32],
        (rs, cs): (usize, usize),
        rows: usize,
        k: usize,
    ) -> Panels {
        Panels::pack(fk, fk.mr(), rows, k, |i, kk| a[i * rs + kk * cs])
    }

    /// Pack `b(kk, j) = b[kk * rs + j * cs]` (`k x cols`) as the B operand.
    pub(crate) fn pack_b(
        fk: Fk,
        b: &[f32],
        (rs, cs): (usize, usize),
        k: usize,
        cols: usize,
    ) -> Panels {
        Panels::pack(fk, fk.nr(), cols, k, |j, kk| b[kk * rs + j * cs])
    }

    fn pack(fk: Fk, w: usize, rows: usize, k: usize, at: impl Fn(usize, usize) -> f32) -> Panels {
        let np = rows.div_ceil(w);
        let mut data = vec![0f32; np * k * w];
        for (p, panel) in data.chunks_mut((k * w).max(1)).enumerate().take(np) {
            for l in 0..w.min(rows - p * w) {
                let r = p * w + l;
                for kk in 0..k {
                    panel[kk * w + l] = at(r, kk);
                }
            }
        }
        Panels {
            fk,
            rows,
            k,
            w,
            data,
        }
    }

    /// Panel `p` from depth `k0` on: `kc x w` contiguous.
    fn at(&self, p: usize, k0: usize) -> *const f32 {
        self.data[(p * self.k + k0) * self.w..].as_ptr()
    }
}

/// A B operand packed per call, block by block: write rows `k0..k0+kc` and columns
/// `j0..j0+nc` as panels of `nr` columns (`dst[q * kc * nr + p * nr + l]` = b(k0 + p,
/// j0 + q * nr + l)), zeros past the last column.
pub(crate) trait PackB: Sync {
    fn pack(&self, k0: usize, kc: usize, j0: usize, nc: usize, nr: usize, dst: &mut [f32]);
}

/// A strided matrix as a [`PackB`] source: `b(kk, j) = data[kk * rs + j * cs]`, `n` columns.
pub(crate) struct StridedB<'a> {
    pub data: &'a [f32],
    pub rs: usize,
    pub cs: usize,
    pub n: usize,
}

impl PackB for StridedB<'_> {
    fn pack(&self, k0: usize, kc: usize, j0: usize, nc: usize, nr: usize, dst: &mut [f32]) {
        for q in 0..nc.div_ceil(nr) {
            let jq = j0 + q * nr;
            let w = nr.min(self.n - jq);
            let panel = &mut dst[q * kc * nr..][..kc * nr];
            for (p, row) in panel.chunks_exact_mut(nr).enumerate() {
                let base = (k0 + p) * self.rs + jq * self.cs;
                if self.cs == 1 {
                    row[..w].copy_from_slice(&self.data[base..base + w]);
                } else {
                    for (l, d) in row[..w].iter_mut().enumerate() {
                        *d = self.data[base + l * self.cs];
                    }
                }
                row[w..].fill(0.0);
            }
        }
    }
}

/// The A operand of one product.
pub(crate) enum AOp<'a> {
    Packed(&'a Panels),
    /// `a(i, kk) = data[i * rs + kk * cs]`, packed per call.
    Strided {
        data: &'a [f32],
        rs: usize,
        cs: usize,
    },
}

/// The B operand of one product.
pub(crate) enum BOp<'a> {
    Packed(&'a Panels),
    /// Packed per call, block by block.
    Source(&'a dyn PackB),
    /// `b(kk, j) = data[kk * ld + j]`, read in place by the micro-kernel (full panels;
    /// the last partial panel is packed).
    InPlace {
        data: &'a [f32],
        ld: usize,
    },
}

thread_local! {
    static BUFS: RefCell<(Vec<f32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// `c[i * ldc + j] = sum_kk a(i, kk) * b(kk, j) (+ bias[i])` for `i < m, j < n`, with
/// the kernel family `fk` (packed operands must have been packed for it). Rayon splits
/// the output into tiles of whole rows and columns (never k), so results do not depend
/// on the thread count.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fgemm(
    fk: Fk,
    dims: (usize, usize, usize),
    a: &AOp,
    b: &BOp,
    c: &mut [f32],
    ldc: usize,
    bias: Option<&[f32]>,
) {
    // SAFETY: c is a live slice of c.len() floats.
    unsafe { fgemm_raw(fk, dims, a, b, (c.as_mut_ptr(), c.len()), ldc, bias, None) }
}

/// [`fgemm`] into `c_len` floats at `c`, which need not be initialized: every output
/// `(i, j)` is written before it is read (the first k block stores, later ones add).
/// `act` (when given) is applied to each tile of finished outputs right after its last
/// k block, while the tile is in L1.
///
/// # Safety
/// `c` is valid for reads and writes of `c_len` floats, and nothing else accesses them
/// during the call.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn fgemm_raw(
    fk: Fk,
    (m, k, n): (usize, usize, usize),
    a: &AOp,
    b: &BOp,
    (c, c_len): (*mut f32, usize),
    ldc: usize,
    bias: Option<&[f32]>,
    act: Option<Act>,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(ldc >= n && c_len >= (m - 1) * ldc + n, "fgemm: c too small");
    assert!(bias.is_none_or(|b| b.len() >= m), "fgemm: bias too short");
    match a {
        AOp::Packed(p) => assert!(
            p.fk == fk && p.rows == m && p.k == k,
            "fgemm: A packed for another shape"
        ),
        AOp::Strided { data, rs, cs } => {
            assert!(
                k == 0 || data.len() > (m - 1) * rs + (k - 1) * cs,
                "fgemm: a too small"
            )
        }
    }
    match b {
        BOp::Packed(p) => assert!(
            p.fk == fk && p.rows == n && p.k == k,
            "fgemm: B packed for another shape"
        ),
        BOp::InPlace { data, ld } => {
            assert!(
                *ld >= n && (k == 0 || data.len() >= (k - 1) * ld + n),
                "fgemm: b too small"
            )
        }
        BOp::Source(_) => {}
    }
    if k == 0 {
        for i in 0..m {
            for j in 0..n {
                // SAFETY: row i of c, inside c_len (asserted above).
                unsafe { c.add(i * ldc + j).write(bias.map_or(0.0, |b| b[i])) };
            }
            if let Some(act) = act {
                // SAFETY: as above, now written.
                unsafe { act.apply_tile(c.add(i * ldc), 1, n, ldc) };
            }
        }
        return;
    }
    let (mr, nr) = (fk.mr(), fk.nr());
    let th = threads();
    // Tasks of whole tiles: column blocks first, rows too when columns are too few.
    let (mut tm, mut tn) = (m, n);
    if th > 1 && m * n * k >= 1 << 20 {
        tn = n.div_ceil(4 * th).next_multiple_of(nr).max(nr);
        let cols = n.div_ceil(tn);
        if cols < 2 * th {
            tm = m
                .div_ceil((4 * th).div_ceil(cols))
                .next_multiple_of(mr)
                .max(mr);
        }
    }
    let cp = SendPtr(c);
    let task = |(i0, j0): (usize, usize)| {
        let (mi, nj) = (tm.min(m - i0), tn.min(n - j0));
        // SAFETY: the asserts above bound c; tasks write disjoint tiles.
        unsafe { block(fk, (i0, mi), (j0, nj), k, a, b, cp.get(), ldc, bias, act) };
    };
    let tasks: Vec<(usize, usize)> = (0..m)
        .step_by(tm)
        .flat_map(|i| (0..n).step_by(tn).map(move |j| (i, j)))
        .collect();
    if tasks.len() == 1 {
        task(tasks[0]);
    } else {
        tasks.into_par_iter().for_each(task);
    }
}

/// Rows `i0..i0+m` and columns `j0..j0+n` of the product.
///
/// # Safety
/// `c` is valid for the whole output (checked by [`fgemm`]) and no other thread
/// writes this tile.
#[allow(clippy::too_many_arguments)]
unsafe fn block(
    fk: Fk,
    (i0, m): (usize, usize),
    (j0, n): (usize, usize),
    k: usize,
    a: &AOp,
    b: &BOp,
    c: *mut f32,
    ldc: usize,
    bias: Option<&[f32]>,
    act: Option<Act>,
) {
    let (mr, nr) = (fk.mr(), fk.nr());
    let kern = kernel(fk);
    BUFS.with(|bufs| {
        let (abuf, bbuf) = &mut *bufs.borrow_mut();
        let mut tile = vec![0f32; mr * nr];
        let mut tbias = vec![0f32; mr];
        for jc in (j0..j0 + n).step_by(NC) {
            let nc = NC.min(j0 + n - jc);
            let npan = nc.div_ceil(nr);
            let kblocks = k.div_ceil(KC).max(1);
            for kb in 0..kblocks {
                let pc = kb * KC;
                let kc = KC.min(k - pc);
                let last = kb + 1 == kblocks;
                // B panels of this block: (pointer, row stride) per panel.
                let bsrc = |q: usize, bbuf: &[f32]| -> (*const f32, usize) {
                    match b {
                        BOp::Packed(p) => (p.at((jc + q * nr) / nr, pc), nr),
                        BOp::InPlace { data, ld } if (q + 1) * nr <= nc => {
                            (data[pc * ld + jc + q * nr..].as_ptr(), *ld)
                        }
                        _ => (bbuf[q * kc * nr..].as_ptr(), nr),
                    }
                };
                match b {
                    BOp::Source(s) => {
                        bbuf.resize(npan * kc * nr, 0.0);
                        s.pack(pc, kc, jc, nc, nr, bbuf);
                    }
                    BOp::InPlace { data, ld } if nc % nr != 0 => {
                        // Only the partial last panel is packed (at its own slot).
                        let q = npan - 1;
                        bbuf.resize(npan * kc * nr, 0.0);
                        let src = StridedB {
                            data,
                            rs: *ld,
                            cs: 1,
                            n: j0 + n,
                        };
                        src.pack(
                            pc,
                            kc,
                            jc + q * nr,
                            nc - q * nr,
                            nr,
                            &mut bbuf[q * kc * nr..],
                        );
                    }
                    _ => {}
                }
                for ic in (i0..i0 + m).step_by(MC) {
                    let mc = MC.min(i0 + m - ic);
                    let mpan = mc.div_ceil(mr);
                    if let AOp::Strided { data, rs, cs } = a {
                        abuf.resize(mpan * kc * mr, 0.0);
                        pack_a_block(data, (*rs, *cs), (ic, mc), (pc, kc), mr, abuf);
                    }
                    // A narrow output (few B panels): each A micro-panel stays in L1
                    // across them, so the weights stream from memory once per block;
                    // otherwise each B micro-panel stays in L1 across the A panels.
                    let a_outer = npan <= 2;
                    let (outer, inner) = if a_outer { (mpan, npan) } else { (npan, mpan) };
                    for o in 0..outer {
                        for x in 0..inner {
                            let (q, r) = if a_outer { (x, o) } else { (o, x) };
                            let (bp, ldb) = bsrc(q, bbuf);
                            let nw = nr.min(jc + nc - (jc + q * nr));
                            let jj = jc + q * nr;
                            let ii = ic + r * mr;
                            let mw = mr.min(ic + mc - ii);
                            let ap = match a {
                                AOp::Packed(p) => p.at(ii / mr, pc),
                                AOp::Strided { .. } => abuf[r * kc * mr..].as_ptr(),
                            };
                            let bias_p = match bias {
                                Some(bv) if last => {
                                    if mw == mr {
                                        bv[ii..].as_ptr()
                                    } else {
                                        tbias[..mw].copy_from_slice(&bv[ii..ii + mw]);
                                        tbias.as_ptr()
                                    }
                                }
                                _ => std::ptr::null(),
                            };
                            // SAFETY: ii < i0 + m, jj < j0 + n: inside the caller's tile.
                            let cij = unsafe { c.add(ii * ldc + jj) };
                            let first = kb == 0;
                            // The activation in the micro-kernel's registers, with the
                            // last k block (re-reading the stored tile stalled on it).
                            let act_p = act.filter(|_| last);
                            if mw == mr && nw == nr {
                                // SAFETY: a full tile of c; ap/bp hold kc steps of
                                // MR / NR floats (packed, or NR columns in place).
                                unsafe { kern(kc, ap, bp, ldb, cij, ldc, first, bias_p, act_p) };
                            } else {
                                // Edge tile: through a local MR x NR buffer.
                                if !first {
                                    for i in 0..mw {
                                        for j in 0..nw {
                                            // SAFETY: (ii + i, jj + j) is in the tile.
                                            tile[i * nr + j] = unsafe { *cij.add(i * ldc + j) };
                                        }
                                    }
                                }
                                // SAFETY: tile is MR x NR; as above for ap/bp.
                                unsafe {
                                    let t = tile.as_mut_ptr();
                                    kern(kc, ap, bp, ldb, t, nr, first, bias_p, act_p)
                                };
                                for i in 0..mw {
                                    for j in 0..nw {
                                        // SAFETY: as above.
                                        unsafe { *cij.add(i * ldc + j) = tile[i * nr + j] };
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    });
}

/// Pack rows `i0..i0+mc`, depths `k0..k0+kc` of a strided A into panels of `mr` rows.
fn pack_a_block(
    a: &[f32],
    (rs, cs): (usize, usize),
    (i0, mc): (usize, usize),
    (k0, kc): (usize, usize),
    mr: usize,
    dst: &mut [f32],
) {
    for (r, panel) in dst
        .chunks_exact_mut(kc * mr)
        .enumerate()
        .take(mc.div_ceil(mr))
    {
        let rows = mr.min(mc - r * mr);
        for l in 0..mr {
            if l >= rows {
                for p in 0..kc {
                    panel[p * mr + l] = 0.0;
                }
                continue;
            }
            let base = (i0 + r * mr + l) * rs + k0 * cs;
            for p in 0..kc {
                panel[p * mr + l] = a[base + p * cs];
            }
        }
    }
}
