//! Compute kernels under the op implementations: the integer GEMM (packed u8 x s8 ->
//! i32 micro-kernels with runtime CPU dispatch), depthwise convolution, vectorized
//! requantization and the f32 GEMM wrapper.
//!
//! Every integer kernel is exact: products and sums are formed in wrapping int32
//! arithmetic (the ring Z/2^32), so the order of accumulation, the blocking, the
//! instruction set and the thread count cannot change a result.
//!
//! The instruction set is detected once ([`isa`]). `PIMKIT_ISA=portable|avx2|avxvnni|
//! avx512vnni|neon` selects a lower one (for testing every code path on one host); an
//! unavailable request falls back to the best available set.

pub(crate) mod act;
pub(crate) mod depthwise;
pub(crate) mod depthwise_int;
pub(crate) mod ewise;
pub(crate) mod fgemm;
pub(crate) mod fgemm_kernels;
#[cfg(test)]
mod fgemm_tests;
#[cfg(target_arch = "x86_64")]
mod fgemm_x86;
pub(crate) mod fim2col;
pub(crate) mod im2col;
pub(crate) mod im2col_hwc;
mod interleave;
pub(crate) mod pool2d;
pub(crate) mod qbinary;
pub(crate) mod qgemm;
pub(crate) mod qgemm_kernels;
#[cfg(target_arch = "aarch64")]
mod qgemm_neon;
#[cfg(target_arch = "x86_64")]
mod qgemm_x86;
pub(crate) mod qgemv;
pub(crate) mod requant;
pub(crate) mod sgemm;
#[cfg(test)]
mod sgemm_tests;
#[cfg(test)]
mod tests;
pub(crate) mod vmath;

use std::sync::OnceLock;

/// Instruction-set families with their own integer micro-kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// Plain Rust (auto-vectorized by the compiler for the build target).
    Portable,
    /// x86-64 AVX2: u8/s8 widened to i16, `vpmaddwd` (exact, no saturation).
    Avx2,
    /// x86-64 AVX-VNNI: 256-bit `vpdpbusd`.
    AvxVnni,
    /// x86-64 AVX-512 VNNI: 512-bit `vpdpbusd`.
    Avx512Vnni,
    /// aarch64 NEON: widening `smlal` multiply-accumulate.
    Neon,
}

impl Isa {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::AvxVnni => "avxvnni",
            Isa::Avx512Vnni => "avx512vnni",
            Isa::Neon => "neon",
        }
    }

    /// True when this host can run the set.
    pub(crate) fn supported(self) -> bool {
        match self {
            Isa::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Isa::AvxVnni => Isa::Avx2.supported() && is_x86_feature_detected!("avxvnni"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vl")
                    && is_x86_feature_detected!("avx512vnni")
                    && Isa::Avx2.supported()
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every set this host supports, best first.
    pub(crate) fn available() -> Vec<Isa> {
        [
            Isa::Avx512Vnni,
            Isa::AvxVnni,
            Isa::Avx2,
            Isa::Neon,
            Isa::Portable,
        ]
        .into_iter()
        .filter(|i| i.supported())
        .collect()
    }
}

/// The instruction set the kernels use (detected once; see the module docs).
pub(crate) fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(|| {
        let avail = Isa::available();
        let wanted = std::env::var("PIMKIT_ISA").ok();
        wanted
            .and_then(|w| avail.iter().copied().find(|i| i.name() == w.trim()))
            .unwrap_or(avail[0])
    })
}

/// Name of the instruction set the integer kernels run on (for reports and benches).
pub fn isa_name() -> &'static str {
    isa().name()
}

/// A raw pointer that may cross threads: each task writes a disjoint part of the
/// buffer it points into.
#[derive(Clone, Copy)]
pub(crate) struct SendPtr<T>(pub *mut T);
// SAFETY: used only to hand disjoint output regions to rayon tasks.
unsafe impl<T> Send for SendPtr<T> {}
// SAFETY: as above; no two tasks write the same element.
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole `SendPtr`).
    #[inline(always)]
    pub(crate) fn get(&self) -> *mut T {
        self.0
    }
}

/// Reinterpret i8 storage as bytes (same size and alignment).
pub(crate) fn i8_bytes(v: &[i8]) -> &[u8] {
    // SAFETY: i8 and u8 have the same size, alignment and validity (every bit pattern).
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len()) }
}

/// Number of worker threads of the pool this code runs in.
pub(crate) fn threads() -> usize {
    rayon::current_num_threads().max(1)
}
