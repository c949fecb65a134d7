//! f32 GEMM: `matrixmultiply` (packed AVX2/FMA kernels with runtime dispatch; on this
//! project's hosts it is faster than the `gemm` crate for the conv shapes, see
//! docs/interpreter.md) for matrices, vectorized dot products / axpys for the
//! matrix-vector shapes it is slow at (a fully connected layer on one sample, one RNN
//! step), and rayon over column blocks. No reduction is split, so the thread count does
//! not change any result.

use super::{Isa, SendPtr, isa, threads};
use rayon::prelude::*;

/// `c[m x n] = alpha * a * b + beta * c` with element strides (row, column) for a and
/// b; c is row-major contiguous. `beta == 0` ignores the old contents of c.
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
    assert!(c.len() >= m * n, "sgemm: output buffer too small");
    if k > 0 {
        assert!(
            a.len() > (m - 1) * rsa + (k - 1) * csa,
            "sgemm: a too small"
        );
        assert!(
            b.len() > (k - 1) * rsb + (n - 1) * csb,
            "sgemm: b too small"
        );
    }
    if k > 0 && (m == 1 || n == 1) {
        gemv(m, k, n, alpha, a, (rsa, csa), b, (rsb, csb), beta, c);
        return;
    }
    let th = threads();
    let cols = if th > 1 && m * n * k >= 1 << 21 {
        // Column blocks of at least 64, about four per thread.
        n.div_ceil(4 * th).max(64)
    } else {
        n
    };
    let cp = SendPtr(c.as_mut_ptr());
    let block = |j0: usize| {
        let w = cols.min(n - j0);
        // SAFETY: the asserts above bound every element of a and b that is read
        // (i*rs + j*cs inside the slices); this block writes the disjoint columns
        // j0..j0+w of the m x n output.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                w,
                alpha,
                a.as_ptr(),
                rsa as isize,
                csa as isize,
                b.as_ptr().add(j0 * csb),
                rsb as isize,
                csb as isize,
                beta,
                cp.get().add(j0),
                n as isize,
                1,
            );
        }
    };
    if cols >= n {
        block(0);
    } else {
        (0..n.div_ceil(cols))
            .into_par_iter()
            .for_each(|i| block(i * cols));
    }
}

/// Matrix-vector products (m == 1 or n == 1).
#[allow(clippy::too_many_arguments)]
fn gemv(
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
    let store = |c: &mut f32, s: f32| {
        *c = if beta == 0.0 {
            alpha * s
        } else {
            alpha * s + beta * *c
        }
    };
    if m == 1 && csb == 1 {
        // c[j] = sum_k a[k] * b[k][j]: rows of b scaled and added (axpy).
        let mut acc = vec![0f32; n];
        for kk in 0..k {
            axpy(a[kk * csa], &b[kk * rsb..kk * rsb + n], &mut acc);
        }
        for (cj, s) in c[..n].iter_mut().zip(acc) {
            store(cj, s);
        }
    } else if m == 1 && rsb == 1 && csa == 1 {
        // c[j] = dot(a, column j of b), each column contiguous.
        let av = &a[..k];
        let cp = SendPtr(c.as_mut_ptr());
        let col = |j: usize| {
            let s = dot(av, &b[j * csb..j * csb + k]);
            // SAFETY: j < n <= c.len(); every j is written by one task.
            store(unsafe { &mut *cp.get().add(j) }, s);
        };
        if threads() > 1 && n * k >= 1 << 18 {
            (0..n).into_par_iter().with_min_len(16).for_each(col);
        } else {
            (0..n).for_each(col);
        }
    } else if n == 1 && csa == 1 && rsb == 1 {
        let bv = &b[..k];
        for i in 0..m {
            store(&mut c[i], dot(&a[i * rsa..i * rsa + k], bv));
        }
    } else {
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for kk in 0..k {
                    s += a[i * rsa + kk * csa] * b[kk * rsb + j * csb];
                }
                store(&mut c[i * n + j], s);
            }
        }
    }
}

/// Sum of x[i] * y[i] in 16 interleaved partial sums, added up in a fixed order.
pub(crate) fn dot(x: &[f32], y: &[f32]) -> f32 {
    match isa() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512Vnni | Isa::AvxVnni | Isa::Avx2 => {
            // SAFETY: AVX2 and FMA are available (the ISA was detected).
            unsafe { dot_avx2(x, y) }
        }
        _ => dot_body(x, y),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(x: &[f32], y: &[f32]) -> f32 {
    dot_body(x, y)
}

#[inline(always)]
fn dot_body(x: &[f32], y: &[f32]) -> f32 {
    let len = x.len().min(y.len());
    let (x, y) = (&x[..len], &y[..len]);
    let mut acc = [0f32; 16];
    let (xc, yc) = (x.chunks_exact(16), y.chunks_exact(16));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for l in 0..16 {
            acc[l] += a[l] * b[l];
        }
    }
    for (l, (a, b)) in xr.iter().zip(yr).enumerate() {
        acc[l] += a * b;
    }
    // Pairwise, in a fixed order.
    let mut w = 16;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] += acc[l + w];
        }
    }
    acc[0]
}

/// `y += a * x`.
pub(crate) fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    match isa() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512Vnni | Isa::AvxVnni | Isa::Avx2 => {
            // SAFETY: AVX2 and FMA are available (the ISA was detected).
            unsafe { axpy_avx2(a, x, y) }
        }
        _ => axpy_body(a, x, y),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn axpy_avx2(a: f32, x: &[f32], y: &mut [f32]) {
    axpy_body(a, x, y)
}

#[inline(always)]
fn axpy_body(a: f32, x: &[f32], y: &mut [f32]) {
    for (yv, &xv) in y.iter_mut().zip(x) {
        *yv += a * xv;
    }
}
