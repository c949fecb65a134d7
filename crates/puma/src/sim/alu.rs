//! Functional semantics of the vector ALU in fixed point (docs/puma.md "ALU ops").

use crate::fixed::{Fmt, NumMode};
use crate::isa::AluOp;

fn fx(fmt: Fmt, mode: NumMode, x: f64) -> i32 {
    fmt.from_f64(x, mode)
}

/// Apply `op` elementwise: `out[i] = op(a[i], b[i])` (values are raw 16-bit words).
pub fn apply(fmt: Fmt, mode: NumMode, op: AluOp, a: &[i32], b: &[i32], out: &mut [i32]) {
    let one = fmt.one() as i32;
    let r = |x: i32| x as i16 as i64;
    let bool_ = |c: bool| if c { one } else { 0 };
    match op {
        AluOp::LogSoftmax | AluOp::LogSoftmaxd => {
            let xs: Vec<f64> = a.iter().map(|&x| fmt.to_f64(x as i16 as i32)).collect();
            let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let lse = m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
            for (o, x) in out.iter_mut().zip(&xs) {
                *o = if op == AluOp::LogSoftmax {
                    fx(fmt, mode, x - lse)
                } else {
                    fx(fmt, mode, 1.0 - (x - lse).exp())
                };
            }
            return;
        }
        // the other ops are computed lane by lane below
        _ => {}
    }
    // The most frequent ops as tight loops (same arithmetic as the general loop below).
    let y = |i: usize| if b.is_empty() { 0 } else { r(b[i]) };
    match op {
        AluOp::Add => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = fmt.fit(r(a[i]) + y(i), mode);
            }
            return;
        }
        AluOp::Sub => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = fmt.fit(r(a[i]) - y(i), mode);
            }
            return;
        }
        AluOp::Max => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = r(a[i]).max(y(i)) as i32;
            }
            return;
        }
        AluOp::Relu => {
            for (i, o) in out.iter_mut().enumerate() {
                *o = r(a[i]).max(0) as i32;
            }
            return;
        }
        // the other ops are computed lane by lane below
        _ => {}
    }
    for i in 0..out.len() {
        let x = r(a[i]);
        let y = if b.is_empty() { 0 } else { r(b[i]) };
        let xf = x as f64 / fmt.one() as f64;
        out[i] = match op {
            AluOp::Add => fmt.fit(x + y, mode),
            AluOp::Sub => fmt.fit(x - y, mode),
            AluOp::Mul => fmt.mul(x as i32, y as i32, mode),
            AluOp::Div => {
                if y == 0 {
                    // Saturate toward the dividend's sign (0/0 = 0).
                    fmt.fit(x.signum() * fmt.max(), NumMode::Exact)
                } else {
                    fmt.fit(Fmt::div_round(x * fmt.one(), y), mode)
                }
            }
            AluOp::Max => x.max(y) as i32,
            AluOp::Min => x.min(y) as i32,
            AluOp::Relu => x.max(0) as i32,
            AluOp::Relud => bool_(x > 0),
            AluOp::Sig => fx(fmt, mode, 1.0 / (1.0 + (-xf).exp())),
            AluOp::Tanh => fx(fmt, mode, xf.tanh()),
            AluOp::Exp => fx(fmt, mode, xf.exp()),
            AluOp::Erf => fx(fmt, mode, erf(xf)),
            AluOp::Sqrt => fx(fmt, mode, xf.max(0.0).sqrt()),
            AluOp::Log => {
                if x <= 0 {
                    fmt.min() as i32
                } else {
                    fx(fmt, mode, xf.ln())
                }
            }
            AluOp::And => bool_(x != 0 && y != 0),
            AluOp::Or => bool_(x != 0 || y != 0),
            AluOp::Not => bool_(x == 0),
            AluOp::Eq => bool_(x == y),
            AluOp::Neq => bool_(x != y),
            AluOp::Lt => bool_(x < y),
            AluOp::Leq => bool_(x <= y),
            AluOp::Gt | AluOp::Rndcmp => bool_(x > y),
            AluOp::Geq => bool_(x >= y),
            AluOp::Mse => {
                let d = fmt.fit(x - y, mode);
                fmt.mul(d, d, mode)
            }
            AluOp::LogSoftmax | AluOp::LogSoftmaxd => unreachable!(),
        };
    }
}

/// `x` (frac `from`) in frac `to`, rounded to nearest (ties away from zero), not yet fit
/// into a word (clamped far outside it so that it stays an i64).
fn rescale(x: i128, from: u32, to: u32) -> i64 {
    let v = if to >= from {
        x << (to - from).min(64)
    } else {
        let d = 1i128 << (from - to).min(126);
        let q = x / d;
        let r = x % d;
        if 2 * r.abs() >= d { q + x.signum() } else { q }
    };
    v.clamp(-(1i128 << 62), 1i128 << 62) as i64
}

/// Apply `op` with explicit formats (`AluFmt`): operands are `a[i] / 2^fa` and
/// `b[i] / 2^fb`, the result is rounded once to `fd` fraction bits. Returns how many
/// results did not fit the word (saturated in exact mode, wrapped in bit-serial mode).
#[allow(clippy::too_many_arguments)]
pub fn apply_fmt(
    bits: u32,
    mode: NumMode,
    op: AluOp,
    (fa, fb, fd): (u32, u32, u32),
    a: &[i32],
    b: &[i32],
    out: &mut [i32],
) -> u64 {
    let f = Fmt { bits, frac: fd };
    let one = 1i64 << fd;
    let r = |x: i32| x as i16 as i64;
    let mut sat = 0u64;
    let mut fit = |v: i64| {
        if v < f.min() || v > f.max() {
            sat += 1;
        }
        f.fit(v, mode)
    };
    if matches!(op, AluOp::LogSoftmax | AluOp::LogSoftmaxd) {
        let xs: Vec<f64> = a
            .iter()
            .map(|&x| r(x) as f64 / (1i64 << fa) as f64)
            .collect();
        let m = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
        for (o, x) in out.iter_mut().zip(&xs) {
            let y = if op == AluOp::LogSoftmax {
                x - lse
            } else {
                1.0 - (x - lse).exp()
            };
            *o = fit((y * one as f64).round().clamp(-1e15, 1e15) as i64);
        }
        return sat;
    }
    if let Some(n) = fast_fmt(f, mode, op, (fa, fb, fd), a, b, out) {
        return n;
    }
    general_fmt(bits, mode, op, (fa, fb, fd), a, b, out)
}

/// [`apply_fmt`] for every op, in 128-bit arithmetic.
fn general_fmt(
    bits: u32,
    mode: NumMode,
    op: AluOp,
    (fa, fb, fd): (u32, u32, u32),
    a: &[i32],
    b: &[i32],
    out: &mut [i32],
) -> u64 {
    let f = Fmt { bits, frac: fd };
    let one = 1i64 << fd;
    let r = |x: i32| x as i16 as i64;
    let mut sat = 0u64;
    let mut fit = |v: i64| {
        if v < f.min() || v > f.max() {
            sat += 1;
        }
        f.fit(v, mode)
    };
    let fx = fa.max(fb);
    for i in 0..out.len() {
        let x = r(a[i]);
        let y = if b.is_empty() { 0 } else { r(b[i]) };
        // Both operands aligned to fx fraction bits (exact).
        let (xa, ya) = ((x as i128) << (fx - fa), (y as i128) << (fx - fb));
        let xf = x as f64 / (1i64 << fa) as f64;
        let real = |v: f64| (v * one as f64).round().clamp(-1e15, 1e15) as i64;
        let bool_ = |c: bool| if c { one } else { 0 };
        let v = match op {
            AluOp::Add => rescale(xa + ya, fx, fd),
            AluOp::Sub => rescale(xa - ya, fx, fd),
            AluOp::Mul => rescale(x as i128 * y as i128, fa + fb, fd),
            AluOp::Mse => {
                let d = xa - ya;
                rescale(d * d, 2 * fx, fd)
            }
            AluOp::Div => {
                if y == 0 {
                    x.signum() * f.max()
                } else {
                    // x / y at fd fraction bits: (x · 2^(fb + fd − fa)) / y, rounded.
                    let e = fb as i32 + fd as i32 - fa as i32;
                    let (n, d) = if e >= 0 {
                        ((x as i128) << e, y as i128)
                    } else {
                        (x as i128, (y as i128) << -e)
                    };
                    let q = n / d;
                    let r = n % d;
                    let q = if 2 * r.abs() >= d.abs() {
                        q + if (n < 0) != (d < 0) { -1 } else { 1 }
                    } else {
                        q
                    };
                    q.clamp(-(1i128 << 62), 1i128 << 62) as i64
                }
            }
            AluOp::Max => rescale(xa.max(ya), fx, fd),
            AluOp::Min => rescale(xa.min(ya), fx, fd),
            AluOp::Relu => rescale(x.max(0) as i128, fa, fd),
            AluOp::Relud => bool_(x > 0),
            AluOp::Sig => real(1.0 / (1.0 + (-xf).exp())),
            AluOp::Tanh => real(xf.tanh()),
            AluOp::Exp => real(xf.exp()),
            AluOp::Erf => real(erf(xf)),
            AluOp::Sqrt => real(xf.max(0.0).sqrt()),
            AluOp::Log => {
                if x <= 0 {
                    f.min()
                } else {
                    real(xf.ln())
                }
            }
            AluOp::And => bool_(x != 0 && y != 0),
            AluOp::Or => bool_(x != 0 || y != 0),
            AluOp::Not => bool_(x == 0),
            AluOp::Eq => bool_(xa == ya),
            AluOp::Neq => bool_(xa != ya),
            AluOp::Lt => bool_(xa < ya),
            AluOp::Leq => bool_(xa <= ya),
            AluOp::Gt | AluOp::Rndcmp => bool_(xa > ya),
            AluOp::Geq => bool_(xa >= ya),
            AluOp::LogSoftmax | AluOp::LogSoftmaxd => unreachable!(),
        };
        out[i] = fit(v);
    }
    sat
}

/// Word-at-a-time shift: `v / 2^sh` rounded to nearest, ties away from zero (1 ≤ sh ≤ 62),
/// without a branch on the sign (unpredictable in data): (m ^ s) − s negates m for s = −1.
#[inline(always)]
fn shr_round(v: i64, sh: u32) -> i64 {
    let m = ((v.unsigned_abs() + (1u64 << (sh - 1))) >> sh) as i64;
    let s = v >> 63;
    (m ^ s) - s
}

/// One result of [`fast_fmt`]: `v` (at `fd + down − up` fraction bits) brought to fd
/// (shifted up by `up` or rounded down by `down`, one of them 0), counted when it does
/// not fit the word, and fitted. The branches are the same for every lane of a call.
#[inline(always)]
fn put(f: Fmt, mode: NumMode, (up, down): (u32, u32), v: i64, sat: &mut u64) -> i32 {
    let v = if down > 0 {
        shr_round(v, down)
    } else {
        v << up
    };
    *sat += (v < f.min() || v > f.max()) as u64;
    f.fit(v, mode)
}

/// `out[i] = put(op(a[i], b[i]))` (the loop monomorphized per op).
#[inline(always)]
fn lanes2(
    f: Fmt,
    mode: NumMode,
    sh: (u32, u32),
    a: &[i32],
    b: &[i32],
    out: &mut [i32],
    op: impl Fn(i64, i64) -> i64,
) -> u64 {
    let r = |x: i32| x as i16 as i64;
    let mut sat = 0u64;
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = put(f, mode, sh, op(r(x), r(y)), &mut sat);
    }
    sat
}

/// The common formatted ops in 64-bit arithmetic (same results as the general loop of
/// [`apply_fmt`]): add/sub/max/min with equal operand formats, mul, relu, with shifts
/// that stay below 2^62; sigmoid, tanh and exp lane by lane without the general
/// loop's per-lane dispatch. `None` for anything else.
fn fast_fmt(
    f: Fmt,
    mode: NumMode,
    op: AluOp,
    (fa, fb, fd): (u32, u32, u32),
    a: &[i32],
    b: &[i32],
    out: &mut [i32],
) -> Option<u64> {
    let r = |x: i32| x as i16 as i64;
    // Result at `from` fraction bits brought to fd: (left shift, right shift).
    let conv = |from: u32| {
        if fd >= from {
            (fd - from, 0)
        } else {
            (0, from - fd)
        }
    };
    // |x ± y| < 2^17: left shifts up to 44 bits stay below 2^62.
    let same = fa == fb && fd <= fa + 44;
    let sat = match op {
        AluOp::Add | AluOp::Sub | AluOp::Max | AluOp::Min if same && b.len() == a.len() => {
            let sh = conv(fa);
            match op {
                AluOp::Add => lanes2(f, mode, sh, a, b, out, |x, y| x + y),
                AluOp::Sub => lanes2(f, mode, sh, a, b, out, |x, y| x - y),
                AluOp::Max => lanes2(f, mode, sh, a, b, out, |x, y| x.max(y)),
                // AluOp::Min: the outer arm admits only Add, Sub, Max and Min
                _ => lanes2(f, mode, sh, a, b, out, |x, y| x.min(y)),
            }
        }
        AluOp::Relu if fd <= fa + 44 => {
            let sh = conv(fa);
            let mut sat = 0;
            for (o, &x) in out.iter_mut().zip(a) {
                *o = put(f, mode, sh, r(x).max(0), &mut sat);
            }
            sat
        }
        AluOp::Mul if fa + fb <= 62 && fd + 32 <= fa + fb + 62 && b.len() == a.len() => {
            lanes2(f, mode, conv(fa + fb), a, b, out, |x, y| x * y)
        }
        AluOp::Sig | AluOp::Tanh | AluOp::Exp => {
            // As the general loop: x / 2^fa in f64, the function, × 2^fd rounded.
            let one = (1i64 << fd) as f64;
            let scale = (1i64 << fa) as f64;
            let real = |v: f64| (v * one).round().clamp(-1e15, 1e15) as i64;
            let mut sat = 0;
            for (o, &x) in out.iter_mut().zip(a) {
                let xf = r(x) as f64 / scale;
                let v = match op {
                    AluOp::Sig => real(1.0 / (1.0 + (-xf).exp())),
                    AluOp::Tanh => real(xf.tanh()),
                    // AluOp::Exp: the outer arm admits only Sig, Tanh and Exp
                    _ => real(xf.exp()),
                };
                *o = put(f, mode, (0, 0), v, &mut sat);
            }
            sat
        }
        // ops without an exact wide-accumulator path (the caller falls back to the lane loop)
        _ => return None,
    };
    Some(sat)
}

/// Results of [`apply`] (the architecture's format) that did not fit the word.
pub fn count_unfit(fmt: Fmt, op: AluOp, a: &[i32], b: &[i32]) -> u64 {
    let r = |x: i32| x as i16 as i64;
    let y = |i: usize| if b.is_empty() { 0 } else { r(b[i]) };
    let unfit = |v: i64| (v < fmt.min() || v > fmt.max()) as u64;
    match op {
        AluOp::Add => (0..a.len()).map(|i| unfit(r(a[i]) + y(i))).sum(),
        AluOp::Sub => (0..a.len()).map(|i| unfit(r(a[i]) - y(i))).sum(),
        AluOp::Mul => (0..a.len())
            .map(|i| unfit(Fmt::div_round(r(a[i]) * y(i), fmt.one())))
            .sum(),
        AluOp::Exp => a
            .iter()
            .map(|&x| unfit((fmt.to_f64(r(x) as i32).exp() * fmt.one() as f64).round() as i64))
            .sum(),
        // the other ops cannot overflow their 16-bit result
        _ => 0,
    }
}

/// The error function (Abramowitz–Stegun 7.1.26 is too coarse for 16-bit words: this
/// is the complementary series/continued fraction of erfc, accurate to ~1e-14).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let s = x.signum();
    let a = x.abs();
    if a < 2.5 {
        // Maclaurin series: erf(x) = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)).
        let mut term = a;
        let mut sum = a;
        let x2 = a * a;
        let mut n = 0.0;
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -x2 / n;
            sum += term / (2.0 * n + 1.0);
        }
        s * sum * std::f64::consts::FRAC_2_SQRT_PI
    } else {
        // Continued fraction of erfc (Lentz), converges fast for x ≥ 2.5.
        let x2 = a * a;
        let mut f = a;
        let mut c = a;
        let mut d = 0.0;
        for k in 1..200 {
            let an = k as f64 / 2.0;
            d = a + an * d;
            d = 1.0 / d;
            c = a + an / c;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        let erfc = (-x2).exp() / (f * std::f64::consts::PI.sqrt());
        s * (1.0 - erfc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 64-bit fast paths equal the general 128-bit loop on random words and formats.
    #[test]
    fn fast_paths_equal_the_general_loop() {
        let mut st = 7u64;
        let mut next = || {
            st ^= st << 13;
            st ^= st >> 7;
            st ^= st << 17;
            st
        };
        for _ in 0..3000 {
            let op = [
                AluOp::Add,
                AluOp::Sub,
                AluOp::Max,
                AluOp::Min,
                AluOp::Relu,
                AluOp::Mul,
                AluOp::Sig,
                AluOp::Tanh,
                AluOp::Exp,
            ][(next() % 9) as usize];
            let fa = (next() % 49) as u32;
            let fb = if next() % 2 == 0 {
                fa
            } else {
                (next() % 49) as u32
            };
            let fd = (next() % 49) as u32;
            let mode = if next() % 2 == 0 {
                NumMode::Exact
            } else {
                NumMode::BitSerial
            };
            let a: Vec<i32> = (0..9).map(|_| (next() % 65536) as i32 - 32768).collect();
            let b: Vec<i32> = (0..9).map(|_| (next() % 65536) as i32 - 32768).collect();
            let (mut x, mut y) = (vec![0; 9], vec![0; 9]);
            let f = Fmt { bits: 16, frac: fd };
            if let Some(n) = fast_fmt(f, mode, op, (fa, fb, fd), &a, &b, &mut x) {
                let m = general_fmt(16, mode, op, (fa, fb, fd), &a, &b, &mut y);
                assert_eq!((x, n), (y, m), "{op:?} {fa} {fb} {fd} {mode:?}");
            }
        }
    }
}
