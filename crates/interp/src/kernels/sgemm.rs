//! f32 matrix products: the packed GEMM (`kernels::fgemm`) for matrices, with a constant
//! B operand packed once per session ([`sgemm_const_b`]), and vectorized dot products /
//! axpys for matrix-vector shapes (a fully connected layer on one sample, one RNN step),
//! where packing would cost more than the product. No reduction is split, so the thread
//! count does not change any result.

use super::fgemm::{AOp, BOp, Panels, StridedB, fgemm};
use super::fgemm_kernels::{Fk, fk};
use super::{SendPtr, threads};
use crate::prepared::{Prepared, Slot};
use rayon::prelude::*;

/// `c[m x n] = alpha * a * b + beta * c` with element strides (row, column) for a and
/// b; c is row-major contiguous. `beta == 0` ignores the old contents of c.
///
/// Matrix-vector shapes with a contiguous operand (a fully connected layer on one
/// sample: m == 1) go to the register-blocked [`gemv`] path: packing the whole weight
/// matrix at every call cost more than the product itself (MobileNetV2's classifier:
/// 1.3 ms of a 16 ms run). Every other shape goes to the packed GEMM (both operands
/// packed per call). [`sgemm_rnn`] also takes the matrix-vector path for any strides.
/// The bounds every entry point checks before its unchecked kernels: c holds m x n, and
/// (when k > 0) the last element a (m x k) and b (k x n) address lies inside them.
/// Callers return early on m == 0 or n == 0.
fn check_operands(
    (m, k, n): (usize, usize, usize),
    a: &[f32],
    sa: (usize, usize),
    b: &[f32],
    sb: (usize, usize),
    c: &[f32],
) {
    assert!(c.len() >= m * n, "sgemm: output buffer too small");
    if k > 0 {
        assert!(
            a.len() > (m - 1) * sa.0 + (k - 1) * sa.1,
            "sgemm: a too small"
        );
        assert!(
            b.len() > (k - 1) * sb.0 + (n - 1) * sb.1,
            "sgemm: b too small"
        );
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    (rsa, csa): (usize, usize),
    b: &[f32],
    (rsb, csb): (usize, usize),
    beta: f32,
    c: &mut [f32],
) {
    if m == 0 || n == 0 {
        return;
    }
    check_operands((m, k, n), a, (rsa, csa), b, (rsb, csb), c);
    if k > 0 && gemv_fast(m, n, (rsa, csa), (rsb, csb)) {
        gemv(m, k, n, alpha, a, (rsa, csa), b, (rsb, csb), beta, c);
        return;
    }
    let sb = StridedB {
        data: b,
        rs: rsb,
        cs: csb,
        n,
    };
    product(
        fk(),
        (m, k, n),
        alpha,
        (a, (rsa, csa)),
        &BOp::Source(&sb),
        beta,
        c,
    );
}

/// [`sgemm`] with a B operand that does not change between runs (a constant of the
/// graph): packed once into `prep` (the node's session slot) and reused; without a
/// slot it is packed for this call. Same results as [`sgemm`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgemm_const_b(
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    a: &[f32],
    sa: (usize, usize),
    b: &[f32],
    sb: (usize, usize),
    prep: Option<&Slot>,
    beta: f32,
    c: &mut [f32],
) {
    let panels = match prep {
        Some(slot) if packs_b(m, k, n, sa, sb) => {
            match slot.get_or_init(|| Prepared::MatB(Panels::pack_b(fk(), b, sb, k, n))) {
                Prepared::MatB(p) => Some(p),
                _ => None,
            }
        }
        _ => None,
    };
    sgemm_packed_b((m, k, n), alpha, a, sa, b, sb, panels, beta, c)
}

/// True when [`sgemm`] runs this shape on the packed GEMM (so a B packed ahead of time
/// can stand in for its per-call packing).
pub(crate) fn packs_b(
    m: usize,
    k: usize,
    n: usize,
    sa: (usize, usize),
    sb: (usize, usize),
) -> bool {
    m > 0 && n > 0 && k > 0 && !gemv_fast(m, n, sa, sb)
}

/// [`sgemm`] with B already packed (`p`: `Panels::pack_b` of this `b`, kept by the
/// caller): the same product and bits as [`sgemm`], which it falls back to where
/// [`sgemm`] would not pack B or the panels do not fit the shape or kernel family.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgemm_packed_b(
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    a: &[f32],
    sa: (usize, usize),
    b: &[f32],
    sb: (usize, usize),
    p: Option<&Panels>,
    beta: f32,
    c: &mut [f32],
) {
    let fk = fk();
    match p {
        Some(p) if packs_b(m, k, n, sa, sb) && p.fk == fk && p.rows == n && p.k == k => {
            check_operands((m, k, n), a, sa, b, sb, c);
            product(fk, (m, k, n), alpha, (a, sa), &BOp::Packed(p), beta, c)
        }
        _ => sgemm(m, k, n, alpha, a, sa, b, sb, beta, c),
    }
}

/// `c = alpha * a * b + beta * c` on the packed GEMM (`beta == 0` ignores c).
fn product(
    fk: Fk,
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    (a, (rs, cs)): (&[f32], (usize, usize)),
    b: &BOp,
    beta: f32,
    c: &mut [f32],
) {
    let a = AOp::Strided { data: a, rs, cs };
    if alpha == 1.0 && beta == 0.0 {
        fgemm(fk, (m, k, n), &a, b, c, n, None);
        return;
    }
    let mut t = vec![0f32; m * n];
    fgemm(fk, (m, k, n), &a, b, &mut t, n, None);
    for (cv, &tv) in c.iter_mut().zip(&t) {
        store(cv, tv, alpha, beta);
    }
}

/// [`sgemm`], with matrix-vector shapes (m == 1 or n == 1) on the register-blocked path
/// below instead of the packed GEMM (which packs both operands at every call): one
/// RNN step is such a product. Sums in a different order, so results differ from
/// [`sgemm`]'s in the last bits.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sgemm_rnn(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    sa: (usize, usize),
    b: &[f32],
    sb: (usize, usize),
    beta: f32,
    c: &mut [f32],
) {
    if k > 0 && (m == 1 || n == 1) {
        check_operands((m, k, n), a, sa, b, sb, c);
        gemv(m, k, n, alpha, a, sa, b, sb, beta, c);
    } else {
        sgemm(m, k, n, alpha, a, sa, b, sb, beta, c);
    }
}

/// True when [`gemv_impl`] has a vectorized loop for this matrix-vector shape (the
/// others fall back to its scalar triple loop, slower than the packed GEMM).
fn gemv_fast(m: usize, n: usize, (_, csa): (usize, usize), (rsb, csb): (usize, usize)) -> bool {
    (m == 1 && ((rsb == 1 && csa == 1) || csb == 1)) || (n == 1 && csa == 1 && rsb == 1)
}

/// Matrix-vector products (m == 1 or n == 1), in the vector trampoline (with fused
/// multiply-adds where the host has FMA).
#[allow(clippy::too_many_arguments)]
fn gemv(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    sa: (usize, usize),
    b: &[f32],
    sb: (usize, usize),
    beta: f32,
    c: &mut [f32],
) {
    // Row-path block width W: with AVX-512, 128 columns (8 zmm accumulators: 64 left
    // 4 dependent FMA chains, latency-bound); 64 otherwise (8 ymm with AVX2). Every
    // column sums in k order whatever W is: the same bits.
    if matches!(super::isa(), super::Isa::Avx512Vnni) {
        super::ewise::simd(
            #[inline(always)]
            || gemv_impl::<true, 128>(m, k, n, alpha, a, sa, b, sb, beta, c),
        )
    } else if super::ewise::has_fma() {
        super::ewise::simd(
            #[inline(always)]
            || gemv_impl::<true, 64>(m, k, n, alpha, a, sa, b, sb, beta, c),
        )
    } else {
        gemv_impl::<false, 64>(m, k, n, alpha, a, sa, b, sb, beta, c)
    }
}

#[inline(always)]
fn mac<const FMA: bool>(acc: f32, x: f32, y: f32) -> f32 {
    if FMA { x.mul_add(y, acc) } else { acc + x * y }
}

/// `alpha * s + beta * c` (`beta == 0` ignores c).
#[inline(always)]
fn store(c: &mut f32, s: f32, alpha: f32, beta: f32) {
    *c = if beta == 0.0 {
        alpha * s
    } else {
        alpha * s + beta * *c
    }
}

/// Columns `4q..4q+4` (those below n) of the contiguous-columns case of [`gemv_impl`].
///
/// # Safety
/// `c` points at n writable elements, and no other thread writes columns 4q..4q+4.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn quad<const FMA: bool>(
    av: &[f32],
    b: &[f32],
    csb: usize,
    n: usize,
    q: usize,
    (alpha, beta): (f32, f32),
    c: *mut f32,
) {
    let (j0, k) = (q * 4, av.len());
    let cols = 4.min(n - j0);
    let col = |i: usize| &b[(j0 + i.min(cols - 1)) * csb..][..k];
    let s = dot4::<FMA>(av, [col(0), col(1), col(2), col(3)]);
    for (i, &v) in s.iter().enumerate().take(cols) {
        // SAFETY: j0 + i < n (the caller's contract).
        store(unsafe { &mut *c.add(j0 + i) }, v, alpha, beta);
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn gemv_impl<const FMA: bool, const W: usize>(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    (rsa, csa): (usize, usize),
    b: &[f32],
    (rsb, csb): (usize, usize),
    beta: f32,
    c: &mut [f32],
) {
    let ab = (alpha, beta);
    if m == 1 && rsb == 1 && csa == 1 {
        // c[j] = dot(a, column j of b), each column contiguous (an RNN's R as stored, a
        // transposed weight): four columns at a time share the loads of a.
        let av = &a[..k];
        let quads = n.div_ceil(4);
        assert!(c.len() >= n, "gemv: output too small");
        if threads() > 1 && n * k >= 1 << 18 {
            let cp = SendPtr(c.as_mut_ptr());
            // SAFETY: every quad writes its own four columns of c (n long, asserted).
            (0..quads)
                .into_par_iter()
                .with_min_len(8)
                .for_each(|q| unsafe { quad::<FMA>(av, b, csb, n, q, ab, cp.get()) });
        } else {
            for q in 0..quads {
                // SAFETY: as above, one quad at a time.
                unsafe { quad::<FMA>(av, b, csb, n, q, ab, c.as_mut_ptr()) };
            }
        }
    } else if m == 1 && csb == 1 {
        // c[j] = sum_k a[k] * b[k][j]: rows of b scaled and added, W columns at a time
        // kept in registers.
        for j0 in (0..n).step_by(W) {
            let w = W.min(n - j0);
            let mut acc = [0f32; W];
            if w == W {
                // A fixed trip count and constant indices only, so the loop becomes
                // W / lanes vector FMAs on accumulators held in registers (mixed with
                // the variable-length loop below they were kept on the stack).
                for kk in 0..k {
                    let av = a[kk * csa];
                    if let Some(row) = b[kk * rsb + j0..].first_chunk::<W>() {
                        for l in 0..W {
                            acc[l] = mac::<FMA>(acc[l], av, row[l]);
                        }
                    }
                }
            } else {
                for kk in 0..k {
                    let av = a[kk * csa];
                    let row = &b[kk * rsb + j0..kk * rsb + j0 + w];
                    for (s, &v) in acc.iter_mut().zip(row) {
                        *s = mac::<FMA>(*s, av, v);
                    }
                }
            }
            for (cj, &s) in c[j0..j0 + w].iter_mut().zip(&acc) {
                store(cj, s, alpha, beta);
            }
        }
    } else if n == 1 && csa == 1 && rsb == 1 {
        let bv = &b[..k];
        for i in 0..m {
            let s = dot4::<FMA>(bv, [&a[i * rsa..i * rsa + k]; 4])[0];
            store(&mut c[i], s, alpha, beta);
        }
    } else {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for kk in 0..k {
                    s = mac::<FMA>(s, a[i * rsa + kk * csa], b[kk * rsb + j * csb]);
                }
                store(&mut c[i * n + j], s, alpha, beta);
            }
        }
    }
}

/// Four dot products with one vector: 16 interleaved partial sums each (lane l takes
/// the elements i with i % 16 == l, in order), added up in a fixed order.
#[inline(always)]
fn dot4<const FMA: bool>(x: &[f32], ys: [&[f32]; 4]) -> [f32; 4] {
    let len = ys.iter().fold(x.len(), |l, y| l.min(y.len()));
    let (xb, xt) = x[..len].as_chunks::<16>();
    let yb = ys.map(|y| y[..len].as_chunks::<16>());
    let mut acc = [[0f32; 16]; 4];
    // Fixed-size chunks and constant lane indices only, so the sums stay in vector
    // registers (with a variable-length tail in the same function they were kept on the
    // stack, one scalar FMA at a time).
    for (c, xc) in xb.iter().enumerate() {
        for (a, (yc, _)) in acc.iter_mut().zip(&yb) {
            let yc = &yc[c];
            for l in 0..16 {
                a[l] = mac::<FMA>(a[l], xc[l], yc[l]);
            }
        }
    }
    // The tail as one more chunk, padded with -0 · +0 = -0 products, which leave every
    // sum unchanged (s + -0 == s for every s, signed zeros included).
    let mut xp = [-0f32; 16];
    xp[..xt.len()].copy_from_slice(xt);
    let mut out = [0f32; 4];
    for ((o, a), (_, yt)) in out.iter_mut().zip(acc.iter_mut()).zip(&yb) {
        let mut yp = [0f32; 16];
        yp[..yt.len()].copy_from_slice(yt);
        for l in 0..16 {
            a[l] = mac::<FMA>(a[l], xp[l], yp[l]);
        }
        let mut w = 16;
        while w > 1 {
            w /= 2;
            for l in 0..w {
                a[l] += a[l + w];
            }
        }
        *o = a[0];
    }
    out
}
