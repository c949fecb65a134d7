//! What a trial is judged by: per-layer signal-to-quantization-noise ratio against the
//! ideal network, top-1 agreement with the ideal model (accuracy against labels when
//! given) and the output's relative error; summaries over trials.

use pimkit_ir::Tensor;
use serde::{Deserialize, Serialize};

/// (sum of squared reference values, sum of squared errors) of `out` against `reference`,
/// values taken relative to a quantized output's zero point.
pub fn signal_error(reference: &Tensor, out: &Tensor, zp: f64) -> (f64, f64) {
    let (r, o) = (reference.to_f64_vec(), out.to_f64_vec());
    let mut s = 0.0;
    let mut e = 0.0;
    for (&a, &b) in r.iter().zip(&o) {
        s += (a - zp) * (a - zp);
        e += (b - a) * (b - a);
    }
    (s, e)
}

/// 10 log10(signal / noise) in dB; +inf when there is no error.
pub fn sqnr_db(signal: f64, noise: f64) -> f64 {
    if noise == 0.0 {
        f64::INFINITY
    } else if signal == 0.0 {
        f64::NEG_INFINITY
    } else {
        10.0 * (signal / noise).log10()
    }
}

/// Index of the largest value along the last axis, for every row (NaN never wins; the
/// first of equal values does). None for outputs with one value per row.
pub fn top1(t: &Tensor) -> Option<Vec<usize>> {
    let c = *t.shape.last()?;
    if c < 2 {
        return None;
    }
    let v = t.to_f64_vec();
    Some(
        v.chunks(c)
            .map(|row| {
                let mut best = 0;
                for (i, &x) in row.iter().enumerate() {
                    if x > row[best] || row[best].is_nan() && !x.is_nan() {
                        best = i;
                    }
                }
                best
            })
            .collect(),
    )
}

/// ||y - y_ref|| / ||y_ref|| (0 when both are zero).
pub fn rel_error(y: &Tensor, y_ref: &Tensor) -> f64 {
    let (a, b) = (y.to_f64_vec(), y_ref.to_f64_vec());
    let num: f64 = a.iter().zip(&b).map(|(x, r)| (x - r) * (x - r)).sum();
    let den: f64 = b.iter().map(|r| r * r).sum();
    if num == 0.0 {
        0.0
    } else if den == 0.0 {
        f64::INFINITY
    } else {
        (num / den).sqrt()
    }
}

/// Mean, sample standard deviation, minimum and maximum over trials.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    pub fn of(v: &[f64]) -> Stat {
        if v.is_empty() {
            return Stat {
                mean: f64::NAN,
                std: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let (min, max) = (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        );
        let std = if v.len() > 1 && mean.is_finite() && min < max {
            (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Stat {
            mean: if min == max { min } else { mean },
            std,
            min,
            max,
        }
    }
}

/// Wilson score interval of a binomial rate (k of n) at z standard deviations.
pub fn wilson(k: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let d = 1.0 + z * z / n;
    let c = (p + z * z / (2.0 * n)) / d;
    let h = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / d;
    ((c - h).max(0.0), (c + h).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_intervals() {
        let s = Stat::of(&[1.0, 2.0, 3.0]);
        assert_eq!((s.mean, s.std, s.min, s.max), (2.0, 1.0, 1.0, 3.0));
        let (lo, hi) = wilson(10, 1000, 1.96);
        assert!(lo < 0.01 && hi > 0.01 && lo > 0.004 && hi < 0.02);
        assert_eq!(sqnr_db(100.0, 1.0), 20.0);
        let t = Tensor::from_f32(vec![2, 3], vec![0.0, 2.0, 1.0, 5.0, 5.0, -1.0]);
        assert_eq!(top1(&t), Some(vec![1, 0]));
    }
}
