//! Task scheduling of the integer GEMM and the portable micro-kernel. The SIMD
//! micro-kernels live in `qgemm_x86.rs` / `qgemm_neon.rs`; each instruction set also has
//! a task entry compiled with its target features, so the packing, the zero-point
//! correction and the sink (requantization) around the micro-kernel are vectorized
//! for the same set.

use super::qgemm::{ColSource, PackedA, QGemm, Sink, Zp, pack_a};
use super::{Isa, threads};
use rayon::prelude::*;
use std::cell::RefCell;

/// Dispatch a runtime (rows, vectors) pair to a const-generic kernel.
macro_rules! by_shape {
    ($f:ident, $mr:expr, $nv:expr, [$($m:literal),*], [$($n:literal),*], $args:tt) => {
        by_shape!(@nv $f, $mr, $nv, [$($m),*], [$($n),*], $args)
    };
    (@nv $f:ident, $mr:expr, $nv:expr, $ms:tt, [$($n:literal),*], $args:tt) => {
        match $nv {
            $($n => by_shape!(@mr $f, $mr, $n, $ms, $args),)*
            _ => unreachable!("vector count out of range"),
        }
    };
    (@mr $f:ident, $mr:expr, $n:literal, [$($m:literal),*], $args:tt) => {
        match $mr {
            $($m => $f::<$m, $n> $args,)*
            _ => unreachable!("row count out of range"),
        }
    };
}
#[allow(unused_imports)]
pub(crate) use by_shape;

/// Row stride of a tile of accumulators, and its most columns.
pub(crate) const TILE_LD: usize = 48;
/// Most rows of a tile.
pub(crate) const MAX_MR: usize = 8;
/// One tile of int32 accumulators, `[MAX_MR][TILE_LD]`.
pub(crate) type Tile = [i32; MAX_MR * TILE_LD];

/// A micro-kernel: raw sums `sum_k a[r][k] * b[k][c]` (s8 x u8) of one tile.
pub(crate) trait MicroKernel {
    /// Rows per packed block of A (and most rows per tile).
    const MR: usize;
    /// Columns per vector.
    const VEC: usize;
    /// Most vectors per tile: a panel has `VEC * NV <= TILE_LD` columns.
    const NV: usize;
    /// `out[r * TILE_LD + c]` for r < mr, c < nv * VEC: `a` is a packed block
    /// `[k4][MR][4]` (i8), `b` a packed panel `[k4][nv * VEC][4]` (u8).
    ///
    /// # Safety
    /// The host supports the kernel's instruction set; `a`, `b` hold k4 groups as
    /// described; `out` has room for a [`Tile`]; mr <= MR, 1 <= nv <= NV.
    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32);
}

/// Everything a task reads: the problem, packed A, the column zero-point shift.
pub(crate) struct Prepared<'p, 'a, C: ColSource> {
    g: &'p QGemm<'a, C>,
    pa: PackedA,
    /// 128 when B is stored as i8 (its zero point moves with the bit flip).
    zc_shift: i32,
    /// Column sums are needed when some row zero point is not 0.
    need_colsum: bool,
    /// Without column sums and with one column zero point, the whole correction is a
    /// constant per row: `zc * (K * zr - rowsum)`.
    row_corr: Option<Vec<i32>>,
}

/// One task: a column panel and a range of row blocks.
#[derive(Clone, Copy)]
pub(crate) struct Task {
    panel: usize,
    blocks: (usize, usize),
}

thread_local! {
    static PANEL: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Pack one panel of B (into `buf`) and run every row block of the task through `K`.
/// Everything here is inlined into the instruction set's task entry; the thread-local
/// buffer is fetched outside it (`LocalKey::with` would not be inlined, and its body
/// would lose the entry's target features).
#[inline(always)]
pub(crate) fn task_body<K: MicroKernel, C: ColSource, S: Sink>(
    p: &Prepared<C>,
    sink: &S,
    t: Task,
    buf: &mut Vec<u8>,
) {
    let g = p.g;
    let full = K::VEC * K::NV;
    let n0 = t.panel * full;
    let w = full.min(g.n - n0);
    let pw = w.div_ceil(K::VEC) * K::VEC;
    let k4 = p.pa.k4;
    {
        if buf.len() < k4 * pw * 4 {
            buf.resize(k4 * pw * 4, 0);
        }
        let panel = &mut buf[..k4 * pw * 4];
        g.b.pack(n0, w, pw, g.k, panel);
        let mut zc = [0i32; TILE_LD];
        let mut cs = [0i32; TILE_LD];
        for c in 0..w {
            zc[c] = g.b_zp.get(n0 + c).wrapping_add(p.zc_shift);
        }
        if p.need_colsum {
            for q in panel.chunks_exact(pw * 4) {
                for (c, s) in cs[..w].iter_mut().enumerate() {
                    let v = &q[c * 4..c * 4 + 4];
                    *s = s.wrapping_add(v[0] as i32 + v[1] as i32 + v[2] as i32 + v[3] as i32);
                }
            }
        }
        let mut tile: Tile = [0; MAX_MR * TILE_LD];
        for mb in t.blocks.0..t.blocks.1 {
            let r0 = mb * K::MR;
            let nr = K::MR.min(g.m - r0);
            let a = p.pa.block(mb);
            // SAFETY: the ISA was checked when the kernel was chosen; a and panel hold
            // k4 groups in the layouts the kernel expects; nr <= MR, pw / VEC <= NV.
            unsafe {
                K::tile(
                    nr,
                    pw / K::VEC,
                    k4,
                    a.as_ptr(),
                    panel.as_ptr(),
                    tile.as_mut_ptr(),
                )
            };
            if let Some(rc) = &p.row_corr {
                sink.tile(r0, nr, n0, w, &tile, &rc[r0..r0 + nr]);
                continue;
            }
            for r in 0..nr {
                let zr = p.pa.zp[r0 + r];
                let t = (g.k as i32)
                    .wrapping_mul(zr)
                    .wrapping_sub(p.pa.row_sum[r0 + r]);
                let row = &mut tile[r * TILE_LD..r * TILE_LD + w];
                for ((v, &z), &s) in row.iter_mut().zip(&zc[..w]).zip(&cs[..w]) {
                    *v = v
                        .wrapping_add(z.wrapping_mul(t))
                        .wrapping_sub(zr.wrapping_mul(s));
                }
            }
            sink.tile(r0, nr, n0, w, &tile, &[0; MAX_MR][..nr]);
        }
    }
}

/// Pack A for `K`, cut the problem into tasks and run them (in parallel when the pool
/// has more than one thread). `entry` runs one task with K's target features.
fn run_with<K: MicroKernel, C: ColSource, S: Sink>(
    g: &QGemm<C>,
    sink: &S,
    entry: impl Fn(&Prepared<C>, &S, Task, &mut Vec<u8>) + Sync,
) {
    // Packed with the host's vector instructions.
    let pa = super::ewise::simd(
        #[inline(always)]
        || pack_a(g.a, g.a_zp, g.m, g.k, K::MR),
    );
    let need_colsum = pa.zp.iter().any(|&z| z != 0);
    let zc_shift = if g.b.signed() { 128 } else { 0 };
    let row_corr = match g.b_zp {
        Zp::Scalar(z) if !need_colsum => {
            let zc = z.wrapping_add(zc_shift);
            let k = g.k as i32;
            Some(
                (0..g.m)
                    .map(|r| zc.wrapping_mul(k.wrapping_mul(pa.zp[r]).wrapping_sub(pa.row_sum[r])))
                    .collect(),
            )
        }
        _ => None,
    };
    let p = Prepared {
        g,
        pa,
        zc_shift,
        need_colsum,
        row_corr,
    };
    let panels = g.n.div_ceil(K::VEC * K::NV);
    let blocks = g.m.div_ceil(K::MR);
    let th = threads();
    // Split rows as well when there are too few panels to feed every thread.
    let chunks = if th == 1 {
        1
    } else {
        (4 * th).div_ceil(panels).clamp(1, blocks)
    };
    let per = blocks.div_ceil(chunks);
    let task = |i: usize| {
        let (panel, c) = (i / chunks, i % chunks);
        Task {
            panel,
            blocks: ((c * per).min(blocks), ((c + 1) * per).min(blocks)),
        }
    };
    let total = panels * chunks;
    let run = |i: usize| PANEL.with(|b| entry(&p, sink, task(i), &mut b.borrow_mut()));
    if th == 1 || total == 1 || g.m * g.n * g.k < 1 << 16 {
        (0..total).for_each(run);
    } else {
        (0..total).into_par_iter().for_each(run);
    }
}

/// Run the GEMM with the micro-kernels of `isa` (which the host must support).
pub(crate) fn run_tasks<C: ColSource, S: Sink>(isa: Isa, g: &QGemm<C>, sink: &S) {
    assert!(
        isa.supported(),
        "qgemm: {} is not supported here",
        isa.name()
    );
    if g.sat16 {
        assert!(
            g.a.signed && !g.b.signed(),
            "qgemm: 16-bit pair saturation needs s8 rows and u8 columns"
        );
        #[cfg(target_arch = "x86_64")]
        if isa != Isa::Portable && Isa::Avx2.supported() {
            use super::qgemm_x86::{Avx2Sat, task_avx2sat};
            // SAFETY: the host supports AVX2 (checked above).
            return run_with::<Avx2Sat, C, S>(g, sink, |p, s, t, b| unsafe {
                task_avx2sat(p, s, t, b)
            });
        }
        return run_with::<PortableSat, C, S>(g, sink, |p, s, t, b| {
            task_body::<PortableSat, C, S>(p, s, t, b)
        });
    }
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512Vnni => {
            use super::qgemm_x86::{Avx512Vnni, task_avx512vnni};
            // SAFETY: the host supports AVX-512 VNNI (asserted above).
            run_with::<Avx512Vnni, C, S>(g, sink, |p, s, t, b| unsafe {
                task_avx512vnni(p, s, t, b)
            })
        }
        #[cfg(target_arch = "x86_64")]
        Isa::AvxVnni => {
            use super::qgemm_x86::{AvxVnni, task_avxvnni};
            // SAFETY: the host supports AVX-VNNI (asserted above).
            run_with::<AvxVnni, C, S>(g, sink, |p, s, t, b| unsafe { task_avxvnni(p, s, t, b) })
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => {
            use super::qgemm_x86::{Avx2, task_avx2};
            // SAFETY: the host supports AVX2 (asserted above).
            run_with::<Avx2, C, S>(g, sink, |p, s, t, b| unsafe { task_avx2(p, s, t, b) })
        }
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => {
            use super::qgemm_neon::{Neon, task_neon};
            // SAFETY: the host supports NEON (asserted above).
            run_with::<Neon, C, S>(g, sink, |p, s, t, b| unsafe { task_neon(p, s, t, b) })
        }
        _ => run_with::<Portable, C, S>(g, sink, |p, s, t, b| {
            task_body::<Portable, C, S>(p, s, t, b)
        }),
    }
}

/// Plain Rust micro-kernel: 4 rows x 16 columns of wrapping int32 sums.
pub(crate) struct Portable;

impl MicroKernel for Portable {
    const MR: usize = 4;
    const VEC: usize = 8;
    const NV: usize = 2;

    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
        // SAFETY: forwarded trait contract.
        unsafe { portable_tile(mr, nv, k4, a, b, out, |pair| pair) }
    }
}

/// i16 saturation of a pair sum, as `vpmaddubsw` does.
#[inline(always)]
pub(crate) fn sat16(v: i32) -> i32 {
    v.clamp(i16::MIN as i32, i16::MAX as i32)
}

/// Plain Rust micro-kernel of onnxruntime's AVX2 u8 x s8 arithmetic: within each group
/// of four k, the pairs (0, 1) and (2, 3) of u8 x s8 products are summed and saturated
/// to i16, then added to the wrapping int32 sum (`vpmaddubsw` + `vpmaddwd`).
pub(crate) struct PortableSat;

impl MicroKernel for PortableSat {
    const MR: usize = 4;
    const VEC: usize = 8;
    const NV: usize = 2;

    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
        // SAFETY: forwarded trait contract.
        unsafe { portable_tile(mr, nv, k4, a, b, out, sat16) }
    }
}

/// The portable kernels' tile (4 rows, 8-column vectors): each 4-k group adds
/// `pair(x0*w0 + x1*w1) + pair(x2*w2 + x3*w3)` to the wrapping int32 sum.
///
/// # Safety
/// The [`MicroKernel::tile`] contract with MR = 4, VEC = 8.
#[inline(always)]
unsafe fn portable_tile(
    mr: usize,
    nv: usize,
    k4: usize,
    a: *const u8,
    b: *const u8,
    out: *mut i32,
    pair: impl Fn(i32) -> i32,
) {
    const MR: usize = 4;
    let pw = nv * 8;
    // SAFETY: the caller guarantees the packed layouts and sizes (trait contract).
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a, k4 * MR * 4),
            std::slice::from_raw_parts(b, k4 * pw * 4),
        )
    };
    let mut acc = [[0i32; 16]; MR];
    for (aq, bq) in a.chunks_exact(MR * 4).zip(b.chunks_exact(pw * 4)) {
        for (r, acc_r) in acc.iter_mut().enumerate().take(mr) {
            let w: [i32; 4] = std::array::from_fn(|j| aq[r * 4 + j] as i8 as i32);
            for (c, s) in acc_r[..pw].iter_mut().enumerate() {
                let x = &bq[c * 4..c * 4 + 4];
                let dot = pair(x[0] as i32 * w[0] + x[1] as i32 * w[1])
                    + pair(x[2] as i32 * w[2] + x[3] as i32 * w[3]);
                *s = s.wrapping_add(dot);
            }
        }
    }
    for (r, acc_r) in acc.iter().enumerate().take(mr) {
        for (c, &v) in acc_r[..pw].iter().enumerate() {
            // SAFETY: out has room for a Tile (trait contract).
            unsafe { *out.add(r * TILE_LD + c) = v };
        }
    }
}
