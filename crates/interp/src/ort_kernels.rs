//! Which of onnxruntime's CPU kernels the interpreter reproduces. MLAS dispatches some
//! quantized and activation kernels by instruction set, and they round differently
//! (shared/reference/onnxruntime-quantized.md, docs/interpreter.md "onnxruntime kernel
//! variants"):
//!
//! | variant | QLinearAdd | logistic (Sigmoid, QLinearSigmoid, RNN gates) | u8 x s8 GEMM / conv |
//! |---|---|---|---|
//! | `sse2` (baseline x86-64) | f32 ops rounded one by one, A then B | separate mul + add | exact (16-bit widening) |
//! | `avx2` (AVX2+FMA, no VNNI) | fused multiply-adds, B then A | FMA | pairs of u8·s8 products saturate at 16 bits (vpmaddubsw) |
//! | `avx2-vnni` (AVX-VNNI or AVX-512 VNNI) | as avx2 | FMA | exact (vpdpbusds) |
//! | `neon` (AArch64) | fixed point (shift + two multipliers), float fallback | FMA | exact |
//!
//! The default is the host's: what onnxruntime would pick on this CPU.

use std::sync::atomic::{AtomicU8, Ordering};

/// One onnxruntime CPU dispatch path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrtKernels {
    Sse2,
    Avx2,
    Avx2Vnni,
    Neon,
}

impl OrtKernels {
    pub const ALL: [OrtKernels; 4] = [
        OrtKernels::Sse2,
        OrtKernels::Avx2,
        OrtKernels::Avx2Vnni,
        OrtKernels::Neon,
    ];

    pub fn name(self) -> &'static str {
        match self {
            OrtKernels::Sse2 => "sse2",
            OrtKernels::Avx2 => "avx2",
            OrtKernels::Avx2Vnni => "avx2-vnni",
            OrtKernels::Neon => "neon",
        }
    }

    /// `auto` (the host's) or a variant name.
    pub fn parse(s: &str) -> Option<Option<OrtKernels>> {
        if s == "auto" {
            return Some(None);
        }
        OrtKernels::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .map(Some)
    }

    /// The path onnxruntime's MLAS picks on this CPU.
    pub fn host() -> OrtKernels {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                let vnni = std::arch::is_x86_feature_detected!("avx512vnni")
                    || std::arch::is_x86_feature_detected!("avxvnni");
                return if vnni {
                    OrtKernels::Avx2Vnni
                } else {
                    OrtKernels::Avx2
                };
            }
            OrtKernels::Sse2
        }
        #[cfg(target_arch = "aarch64")]
        {
            OrtKernels::Neon
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            OrtKernels::Sse2
        }
    }

    /// QLinearAdd's FMA form (every AVX2 and AVX-512 machine).
    pub fn qladd_fma(self) -> bool {
        matches!(self, OrtKernels::Avx2 | OrtKernels::Avx2Vnni)
    }

    /// The logistic function's multiply-adds are fused (FMA3 assembly, NEON vfmaq).
    pub fn logistic_fma(self) -> bool {
        self != OrtKernels::Sse2
    }

    /// u8 x s8 products are summed in pairs with 16-bit saturation (vpmaddubsw).
    pub fn u8s8_pair_saturation(self) -> bool {
        self == OrtKernels::Avx2
    }
}

/// 0 = the host's, else 1 + index into `OrtKernels::ALL`.
static SELECTED: AtomicU8 = AtomicU8::new(0);

/// Choose the variant every later interpreter run reproduces (`None`: the host's).
pub fn set_ort_kernels(k: Option<OrtKernels>) {
    let v = match k {
        None => 0,
        Some(k) => 1 + OrtKernels::ALL.iter().position(|&x| x == k).unwrap_or(0) as u8,
    };
    SELECTED.store(v, Ordering::Relaxed);
}

/// The variant in effect.
pub fn ort_kernels() -> OrtKernels {
    match SELECTED.load(Ordering::Relaxed) {
        0 => OrtKernels::host(),
        v => OrtKernels::ALL[(v - 1) as usize],
    }
}

thread_local! {
    /// Set while an engine's reference run wants exact u8 x s8 sums.
    static EXACT_PRODUCTS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` (interpreter runs on this thread) with every u8 x s8 product summed exactly,
/// whatever the variant. The `avx2` variant's 16-bit pair saturation is a property of
/// onnxruntime's kernels on such a CPU, not of the model: the engines (VPU, loop nests)
/// model hardware whose integer sums are exact and check them against this.
pub fn with_exact_products<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            EXACT_PRODUCTS.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(EXACT_PRODUCTS.with(|c| c.replace(true)));
    f()
}

/// Whether a [`with_exact_products`] is active on this thread (work handed to other
/// threads re-enters it there).
pub fn exact_products_active() -> bool {
    EXACT_PRODUCTS.with(|c| c.get())
}

/// Whether u8 x s8 GEMMs on this thread reproduce onnxruntime's AVX2 pair saturation:
/// the variant in effect saturates and no [`with_exact_products`] is active.
pub(crate) fn saturating_u8s8() -> bool {
    ort_kernels().u8s8_pair_saturation() && !EXACT_PRODUCTS.with(|c| c.get())
}
