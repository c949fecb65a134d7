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
