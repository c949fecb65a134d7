//! 16-bit two's-complement fixed point (Q4.12 by default) and the functional MVM.
//!
//! Two arithmetic modes (see docs/puma.md, "Fixed-point error"):
//! * [`NumMode::Exact`]: every op is computed exactly on the integers and rounded once
//!   (nearest, ties away from zero) to the result format, saturating on overflow.
//! * [`NumMode::BitSerial`]: reproduces the original simulator (reference §3.3): the MVM
//!   rounds each of the 16 bit-stream partials to Q4.12 before shifting it inside the
//!   16-bit word, and every op wraps on overflow.

pub use crate::dot::Split;

/// Default relative-error tolerance of a fixed-point result: 2 % of the reference
/// outputs' range (docs/puma.md "Fixed point per tensor").
pub const DEFAULT_TOLERANCE: f64 = 0.02;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NumMode {
    #[default]
    Exact,
    BitSerial,
}

/// Fixed-point format: total bits (≤ 16 stored in i16/i32 words) and fraction bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fmt {
    pub bits: u32,
    pub frac: u32,
}

impl Fmt {
    pub const Q4_12: Fmt = Fmt { bits: 16, frac: 12 };
    pub fn max(self) -> i64 {
        (1i64 << (self.bits - 1)) - 1
    }
    pub fn min(self) -> i64 {
        -(1i64 << (self.bits - 1))
    }
    pub fn one(self) -> i64 {
        1i64 << self.frac
    }
    /// Quantization step.
    pub fn ulp(self) -> f64 {
        1.0 / self.one() as f64
    }
    /// Saturate (exact mode) or wrap (bit-serial mode) an integer into the format.
    pub fn fit(self, v: i64, mode: NumMode) -> i32 {
        match mode {
            NumMode::Exact => v.clamp(self.min(), self.max()) as i32,
            NumMode::BitSerial => {
                let m = 1i64 << self.bits;
                let w = v.rem_euclid(m);
                (if w > self.max() { w - m } else { w }) as i32
            }
        }
    }
    /// Real → fixed point, round to nearest (ties away from zero).
    pub fn from_f64(self, x: f64, mode: NumMode) -> i32 {
        if x.is_nan() {
            return 0;
        }
        let s = (x * self.one() as f64).round();
        let s = s.clamp(-1e15, 1e15) as i64;
        self.fit(s, mode)
    }
    pub fn to_f64(self, v: i32) -> f64 {
        v as f64 / self.one() as f64
    }
    /// Integer division rounding to nearest, ties away from zero.
    pub fn div_round(n: i64, d: i64) -> i64 {
        let q = n / d;
        let r = n % d;
        if 2 * r.abs() >= d.abs() {
            q + if (n < 0) != (d < 0) { -1 } else { 1 }
        } else {
            q
        }
    }
    /// Product of two fixed-point numbers, rounded.
    pub fn mul(self, a: i32, b: i32, mode: NumMode) -> i32 {
        self.fit(Self::div_round(a as i64 * b as i64, self.one()), mode)
    }
}

/// `out[i] = Σ_j w[i*stride + j] · x[j]` for `i < rows`, `j < cols` (one MVMU; row-major
/// weights, row = output; x holds 16-bit words).
pub fn mvm(
    fmt: Fmt,
    mode: NumMode,
    w: &[i16],
    stride: usize,
    rows: usize,
    cols: usize,
    x: &[i32],
    out: &mut [i32],
) {
    mvm_with(
        &mut Split::new(),
        fmt,
        mode,
        fmt.frac as i32,
        w,
        stride,
        rows,
        cols,
        x,
        out,
    );
}

/// [`mvm`] with a reusable input buffer (the simulator keeps one per run) and the
/// MVMU's output shift: `out = Σ w·x / 2^shift` (the weights' plus the input's minus
/// the output's fraction bits; `fmt.frac` when all are in the architecture's format).
/// Returns how many outputs did not fit the word (saturated or wrapped).
#[allow(clippy::too_many_arguments)]
pub fn mvm_with(
    split: &mut Split,
    fmt: Fmt,
    mode: NumMode,
    shift: i32,
    w: &[i16],
    stride: usize,
    rows: usize,
    cols: usize,
    x: &[i32],
    out: &mut [i32],
) -> u64 {
    let mut unfit = 0u64;
    match mode {
        NumMode::Exact => {
            // Exact integer dot products (crate::dot: byte-split 16-bit multiply-adds).
            split.set(&x[..cols]);
            let (lo, hi) = (fmt.min(), fmt.max());
            let acc = split.dots_buf(w, stride, rows);
            if shift >= 63 {
                // |Σ w·x| < 2^46: nothing is left after the shift.
                out[..rows].fill(0);
            } else if shift >= 0 {
                let sh = shift as u32;
                let half = 1u64 << sh >> 1;
                for (o, &a) in out[..rows].iter_mut().zip(acc) {
                    // a / 2^shift rounded to nearest, ties away from zero (= div_round),
                    // then saturated (= fit in exact mode).
                    // Branch-free sign (the signs of MVM outputs are unpredictable):
                    // (m ^ s) − s is −m for s = −1 and m for s = 0.
                    let m = ((a.unsigned_abs() + half) >> sh) as i64;
                    let s = a >> 63;
                    let q = (m ^ s) - s;
                    let c = q.clamp(lo, hi);
                    unfit += (c != q) as u64;
                    *o = c as i32;
                }
            } else {
                let sh = (-shift) as u32;
                for (o, &a) in out[..rows].iter_mut().zip(acc) {
                    let q = a.saturating_mul(1 << sh);
                    let c = q.clamp(lo, hi);
                    unfit += (c != q) as u64;
                    *o = c as i32;
                }
            }
        }
        NumMode::BitSerial => {
            // Input bit k of every element forms stream k (LSB first). Each stream's
            // partial Σ_j bit·2^-frac·w_j is rounded to the format, shifted left by k
            // inside the word (upper bits dropped) and added with wrap-around.
            let mask = (1i64 << fmt.bits) - 1;
            let bits: Vec<u32> = x[..cols]
                .iter()
                .map(|&v| (v as i64 & mask) as u32)
                .collect();
            for i in 0..rows {
                let row = &w[i * stride..i * stride + cols];
                let mut acc: i64 = 0;
                for k in 0..fmt.bits {
                    let s: i64 = row
                        .iter()
                        .zip(&bits)
                        .filter(|(_, b)| (**b >> k) & 1 == 1)
                        .map(|(&a, _)| a as i64)
                        .sum();
                    let r = if shift >= 63 {
                        0
                    } else if shift >= 0 {
                        Fmt::div_round(s, 1i64 << shift)
                    } else {
                        s << -shift
                    };
                    unfit += (r < fmt.min() || r > fmt.max()) as u64;
                    let p = fmt.fit(r, mode) as i64;
                    acc = (acc + (p << k)) & mask;
                }
                out[i] = fmt.fit(acc, mode);
            }
        }
    }
    unfit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_and_saturate_or_wrap() {
        let f = Fmt::Q4_12;
        assert_eq!(f.from_f64(1.0, NumMode::Exact), 4096);
        assert_eq!(f.from_f64(-0.5 / 4096.0, NumMode::Exact), -1);
        assert_eq!(f.from_f64(100.0, NumMode::Exact), 32767);
        assert_eq!(f.from_f64(8.0, NumMode::BitSerial), -32768);
        assert_eq!(f.mul(4096 * 2, 2048, NumMode::Exact), 4096);
    }

    #[test]
    fn mvm_exact_matches_integer_dot_and_bitserial_differs_only_by_rounding() {
        let f = Fmt::Q4_12;
        let w: Vec<i16> = vec![4096, -2048, 1, 3, 100, -7];
        let x = [4096, 4096, 2048, -1, 5, 9];
        let mut o = vec![0; 2];
        mvm(f, NumMode::Exact, &w, 3, 2, 3, &x[..3], &mut o);
        // 1 - 0.5 + 2^-12 * 0.5 = 2048.5 units, rounded away from zero.
        assert_eq!(o, vec![2049, 100]);
        let mut ob = vec![0; 2];
        mvm(f, NumMode::BitSerial, &w, 3, 2, 3, &x[..3], &mut ob);
        // Stream 12 carries 0.5 units, rounded to 1 before the shift by 12: the quirk
        // of the original (reference §3.3) turns 0.5 into 1.0.
        assert_eq!(ob, vec![4096, 0]);
    }

    #[test]
    fn exact_mvm_equals_i64_reference_at_extremes() {
        let f = Fmt::Q4_12;
        let (rows, cols) = (5, 300);
        let mut st = 12345u64;
        let mut next = || {
            st = st
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((st >> 33) as i64 % 65536 - 32768) as i32
        };
        let mut w: Vec<i16> = (0..rows * cols).map(|_| next() as i16).collect();
        let mut x: Vec<i32> = (0..cols).map(|_| next()).collect();
        w[0..cols].fill(i16::MIN);
        x[..cols / 2].fill(-32768);
        let mut o = vec![0; rows];
        mvm(f, NumMode::Exact, &w, cols, rows, cols, &x, &mut o);
        for i in 0..rows {
            let acc: i64 = (0..cols)
                .map(|j| w[i * cols + j] as i64 * x[j] as i64)
                .sum();
            assert_eq!(o[i], f.fit(Fmt::div_round(acc, 4096), NumMode::Exact));
        }
    }

    /// The simulator's MVM (SIMD kernel, shift rounding) equals i64 dot products rounded
    /// by `div_round` on full crossbars and used sub-blocks, random and extreme words.
    #[test]
    fn exact_mvm_equals_reference_on_crossbar_blocks() {
        let f = Fmt::Q4_12;
        let mut st = 99u64;
        let mut next = || {
            st = st
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((st >> 33) as i64 % 65536 - 32768) as i32
        };
        let mut split = Split::new();
        for &(rows, cols) in &[(128usize, 128usize), (7, 100), (128, 5), (1, 1), (33, 128)] {
            for extreme in [false, true] {
                let w: Vec<i16> = (0..128 * 128)
                    .map(|k| {
                        if extreme && k % 3 != 2 {
                            i16::MIN
                        } else {
                            next() as i16
                        }
                    })
                    .collect();
                let x: Vec<i32> = (0..128)
                    .map(|j| {
                        if extreme && j % 5 != 4 {
                            -32768
                        } else {
                            next()
                        }
                    })
                    .collect();
                let mut o = vec![0; rows];
                mvm_with(
                    &mut split,
                    f,
                    NumMode::Exact,
                    12,
                    &w,
                    128,
                    rows,
                    cols,
                    &x,
                    &mut o,
                );
                for i in 0..rows {
                    let acc: i64 = (0..cols).map(|j| w[i * 128 + j] as i64 * x[j] as i64).sum();
                    let want = f.fit(Fmt::div_round(acc, 4096), NumMode::Exact);
                    assert_eq!(o[i], want, "rows {rows} cols {cols} row {i}");
                }
            }
        }
    }
}
