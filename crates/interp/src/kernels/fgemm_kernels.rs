//! The f32 GEMM's micro-kernels and their runtime choice: AVX-512F (12 x 32 tile),
//! AVX2 + FMA (6 x 16) and a portable tile (4 x 16) the compiler vectorizes, each
//! `c[MR x NR] (=|+=) a_panel * b_panel (+ bias)` over `kc` steps. The portable tile runs
//! in the host's vector trampoline with fused multiply-adds where the host has them, so
//! it gives the same bits as the x86 kernels there.

use super::act::Act;

/// Micro-kernel families.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fk {
    Portable,
    Avx2,
    Avx512,
}

/// `kern(kc, a, b, ldb, c, ldc, first, bias, act)`: for p in 0..kc, tile +=
/// a[p*MR..][..MR] (outer) b[p*ldb..][..NR]; the tile starts at 0 when `first`, else at
/// c; `bias` (MR values, or null) is added after the last step, then `act` (given with
/// the last k block only: `act::clip_row`'s / Relu's formulas); the tile is stored to c
/// (row stride ldc).
pub(crate) type Kern =
    unsafe fn(usize, *const f32, *const f32, usize, *mut f32, usize, bool, *const f32, Option<Act>);

impl Fk {
    /// Rows of a tile (the A panel width).
    pub(crate) fn mr(self) -> usize {
        match self {
            Fk::Portable => 4,
            Fk::Avx2 => 6,
            Fk::Avx512 => 12,
        }
    }

    /// Columns of a tile (the B panel width).
    pub(crate) fn nr(self) -> usize {
        match self {
            Fk::Portable => 16,
            Fk::Avx2 => 16,
            Fk::Avx512 => 32,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Fk::Portable => "portable",
            Fk::Avx2 => "avx2",
            Fk::Avx512 => "avx512f",
        }
    }

    /// Every family this host can run, best first.
    pub(crate) fn available() -> Vec<Fk> {
        let mut v = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            let fma = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
            if fma && is_x86_feature_detected!("avx512f") {
                v.push(Fk::Avx512);
            }
            if fma {
                v.push(Fk::Avx2);
            }
        }
        v.push(Fk::Portable);
        v
    }
}

/// The family the interpreter uses: the best available, capped by `PIMKIT_ISA`
/// (`portable` -> portable, `avx2`/`avxvnni` -> AVX2, see `kernels::isa`).
pub(crate) fn fk() -> Fk {
    use super::Isa;
    static FK: std::sync::OnceLock<Fk> = std::sync::OnceLock::new();
    *FK.get_or_init(|| {
        let best = Fk::available()[0];
        let forced = std::env::var("PIMKIT_ISA").is_ok();
        match super::isa() {
            _ if !forced => best,
            Isa::Avx512Vnni => best,
            Isa::Avx2 | Isa::AvxVnni if best == Fk::Avx512 => Fk::Avx2,
            Isa::Avx2 | Isa::AvxVnni => best,
            _ => Fk::Portable,
        }
    })
}

/// The micro-kernel of a family (which must be available on this host).
pub(crate) fn kernel(fk: Fk) -> Kern {
    assert!(
        Fk::available().contains(&fk),
        "fgemm: {} kernels not available here",
        fk.name()
    );
    match fk {
        #[cfg(target_arch = "x86_64")]
        Fk::Avx512 => super::fgemm_x86::kern_avx512,
        #[cfg(target_arch = "x86_64")]
        Fk::Avx2 => super::fgemm_x86::kern_avx2,
        _ => kern_portable,
    }
}

/// True when the portable tile is compiled with fused multiply-adds.
fn portable_fma() -> bool {
    cfg!(any(target_arch = "aarch64", target_feature = "fma")) || super::ewise::has_fma()
}

/// The portable 4 x 16 tile.
///
/// # Safety
/// As [`Kern`]: a holds kc*4, b kc rows of 16 (stride ldb), c a 4 x 16 tile (stride
/// ldc), bias null or 4 values.
#[allow(clippy::too_many_arguments)]
unsafe fn kern_portable(
    kc: usize,
    a: *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    first: bool,
    bias: *const f32,
    act: Option<Act>,
) {
    if portable_fma() {
        super::ewise::simd(
            #[inline(always)]
            // SAFETY: the caller's contract, forwarded.
            || unsafe { tile::<true>(kc, a, b, ldb, c, ldc, first, bias, act) },
        )
    } else {
        // SAFETY: as above.
        unsafe { tile::<false>(kc, a, b, ldb, c, ldc, first, bias, act) }
    }
}

#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn tile<const FMA: bool>(
    kc: usize,
    a: *const f32,
    b: *const f32,
    ldb: usize,
    c: *mut f32,
    ldc: usize,
    first: bool,
    bias: *const f32,
    act: Option<Act>,
) {
    const MR: usize = 4;
    const NR: usize = 16;
    let mut acc = [[0f32; NR]; MR];
    if !first {
        for (i, row) in acc.iter_mut().enumerate() {
            // SAFETY: c is a MR x NR tile with row stride ldc.
            *row = unsafe { *(c.wrapping_add(i * ldc) as *const [f32; NR]) };
        }
    }
    for p in 0..kc {
        // SAFETY: a holds kc * MR values, b row p has NR values at p * ldb.
        let (av, bv) = unsafe {
            (
                *(a.wrapping_add(p * MR) as *const [f32; MR]),
                *(b.wrapping_add(p * ldb) as *const [f32; NR]),
            )
        };
        for i in 0..MR {
            for j in 0..NR {
                acc[i][j] = if FMA {
                    av[i].mul_add(bv[j], acc[i][j])
                } else {
                    acc[i][j] + av[i] * bv[j]
                };
            }
        }
    }
    for (i, row) in acc.iter_mut().enumerate() {
        if !bias.is_null() {
            // SAFETY: bias holds MR values.
            let bi = unsafe { *bias.wrapping_add(i) };
            row.iter_mut().for_each(|v| *v += bi);
        }
        // The x86 kernels' formulas (`maxps(lo, v)`, `minps(hi, ·)`; `maxps(v, 0)`).
        match act {
            Some(Act::Clip(lo, hi)) => row.iter_mut().for_each(|v| {
                let t = if lo > *v { lo } else { *v };
                *v = if hi < t { hi } else { t };
            }),
            Some(Act::Relu) => row
                .iter_mut()
                .for_each(|v| *v = if *v > 0.0 { *v } else { 0.0 }),
            None => {}
        }
        // SAFETY: as above.
        unsafe { *(c.wrapping_add(i * ldc) as *mut [f32; NR]) = *row };
    }
}
