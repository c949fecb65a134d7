//! An activation fused into the output write of the kernel that produces its input (a
//! Conv followed by Clip or Relu, see `exec`): the same per-element formulas as the
//! in-place Clip / Relu (`ewise::clip_in_place`, `ewise::relu_in_place` call these very
//! functions), applied while the output is still in cache instead of in one more pass
//! over a megabyte-sized activation. min / max do not round, so the bits are those of
//! the unfused pair.

use super::ewise::simd;

/// A fused activation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Act {
    /// `Clip(lo, hi)`: NaN stays NaN.
    Clip(f32, f32),
    /// `max(x, 0)`: NaN becomes 0, as `f32::max` does.
    Relu,
}

impl Act {
    /// Apply to `x` in place. Callers run inside a vector trampoline (`ewise::simd`, or
    /// a kernel's own) so the loop compiles to the host's vector instructions.
    #[inline(always)]
    pub(crate) fn apply(self, x: &mut [f32]) {
        match self {
            Act::Clip(lo, hi) => clip_row(x, lo, hi),
            Act::Relu => relu_row(x),
        }
    }

    /// Apply to the `rows x cols` tile at `c` (row stride `ldc`), in a trampoline.
    ///
    /// # Safety
    /// The tile is valid for reads and writes and no other thread touches it.
    pub(crate) unsafe fn apply_tile(self, c: *mut f32, rows: usize, cols: usize, ldc: usize) {
        simd(
            #[inline(always)]
            || {
                for i in 0..rows {
                    // SAFETY: row i of the tile, per the contract.
                    let r = unsafe { std::slice::from_raw_parts_mut(c.add(i * ldc), cols) };
                    self.apply(r);
                }
            },
        )
    }
}

/// `Clip` in place (NaN stays NaN): `min(hi, max(lo, p))` with each step "the bound if
/// it compares beyond p, else p", which a NaN never does, so a NaN p (or bound) leaves p
/// as it is, and of equal values (-0, +0) p stays. That is exactly what
/// `if p.is_nan() { p } else { p.max(lo).min(hi) }` compiled to on x86 (`maxps(lo, p)`,
/// `minps(hi, ·)`), without the NaN select the compiler turned into a masked store
/// (`vmaskmovps`, microcoded on AMD: 12-16 % of MobileNetV2's samples were that store).
/// Whole groups of 8 first: a fused tile row is only 16 floats, which a plain loop
/// would leave to its scalar remainder.
#[inline(always)]
pub(crate) fn clip_row(x: &mut [f32], lo: f32, hi: f32) {
    #[inline(always)]
    fn one(p: &mut f32, lo: f32, hi: f32) {
        let t = if lo > *p { lo } else { *p };
        *p = if hi < t { hi } else { t };
    }
    let (groups, rest) = x.as_chunks_mut::<8>();
    for g in groups {
        for p in g.iter_mut() {
            one(p, lo, hi);
        }
    }
    for p in rest {
        one(p, lo, hi);
    }
}

/// Relu in place (`max(x, 0)`: NaN becomes 0), in groups of 8 as [`clip_row`].
#[inline(always)]
pub(crate) fn relu_row(x: &mut [f32]) {
    let (groups, rest) = x.as_chunks_mut::<8>();
    for g in groups {
        for p in g.iter_mut() {
            *p = p.max(0.0);
        }
    }
    for p in rest {
        *p = p.max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::ewise::{clip_in_place, relu_in_place};

    /// Specials: quiet and signalling NaNs with payloads, signed zeros, infinities,
    /// values on and beyond the bounds.
    fn specials() -> Vec<f32> {
        let mut v = vec![
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7fc1_2345),
            f32::from_bits(0x7f80_0001),
            f32::from_bits(0xff80_0777),
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            6.0,
            -6.0,
            f32::MIN_POSITIVE,
            -1e-45,
        ];
        v.extend((0..40).map(|i| (i as f32 - 20.0) * 0.37));
        v
    }

    /// The in-place Clip (and so the fused one) gives the bits of the formula it
    /// replaced, on every length (vector groups and scalar rest) and bound.
    #[test]
    fn clip_keeps_the_bits_of_the_nan_select() {
        let x = specials();
        let bounds = [
            (0.0, 6.0),
            (-0.0, 0.0),
            (0.0, -0.0),
            (-1.5, f32::INFINITY),
            (f32::NEG_INFINITY, 0.25),
            (f32::NAN, 2.0),
            (-2.0, f32::NAN),
            (3.0, -3.0),
        ];
        for (lo, hi) in bounds {
            for len in [0, 1, 7, 8, 9, 16, 17, x.len()] {
                let mut got = x[..len].to_vec();
                clip_in_place(&mut got, lo, hi);
                let mut tile = x[..len].to_vec();
                // SAFETY: a 1 x len tile of our own vector.
                unsafe { Act::Clip(lo, hi).apply_tile(tile.as_mut_ptr(), 1, len, len) };
                for (i, &p) in x[..len].iter().enumerate() {
                    let want = if p.is_nan() { p } else { p.max(lo).min(hi) };
                    assert_eq!(got[i].to_bits(), want.to_bits(), "clip({p}, {lo}, {hi})");
                    assert_eq!(tile[i].to_bits(), want.to_bits(), "tile clip({p})");
                }
            }
        }
        let mut got = x.clone();
        relu_in_place(&mut got);
        let mut tile = x.clone();
        // SAFETY: as above.
        unsafe { Act::Relu.apply_tile(tile.as_mut_ptr(), 1, x.len(), x.len()) };
        for (i, &p) in x.iter().enumerate() {
            assert_eq!(got[i].to_bits(), p.max(0.0).to_bits(), "relu({p})");
            assert_eq!(tile[i].to_bits(), got[i].to_bits(), "tile relu({p})");
        }
    }
}
