//! The ADC that digitizes each partial sum (one array row chunk, one input slice, one
//! cell slice, one column): a uniform quantizer with round-to-nearest and saturation
//! (CrossSim's ideal quantizer, MNSIM's rounding; NeuroSim floors instead), and the
//! per-layer profile of ideal partial sums that a calibrated range is taken from.

use crate::config::{AdcRange, Config, Geometry};
use serde::{Deserialize, Serialize};

/// Largest partial sum an array can produce whatever it holds: rows x (2^dac - 1) x
/// (2^cell - 1) level steps (the span of a profile of partial sums).
pub fn full_scale(cfg: &Config) -> f64 {
    let g = &cfg.geom;
    g.rows as f64 * ((1u64 << g.dac_bits) - 1) as f64 * g.max_level() as f64
}

/// Largest value one DAC plane takes under the input coding: unsigned codes of
/// `input_bits` bits, or sign x magnitude codes with `input_bits - 1` magnitude bits
/// (a symmetric quantizer's largest magnitude is 2^(b-1) - 1).
pub fn plane_bound(g: &Geometry, signed_inputs: bool) -> u64 {
    let dac = (1u64 << g.dac_bits) - 1;
    let code = if signed_inputs {
        ((1u64 << (g.input_bits - 1)) - 1).max(1)
    } else {
        (1u64 << g.input_bits) - 1
    };
    dac.min(code)
}

/// Largest cell level the weight coding puts in a slice: a differential pair holds |w| of
/// a signed `weight_bits`-bit weight (at most 2^(b-1)); an offset array holds w + 2^(b-1),
/// at most 2^b - 1.
pub fn level_bound(g: &Geometry) -> u64 {
    let cell = g.max_level() as u64;
    let code = if g.differential {
        1u64 << (g.weight_bits - 1)
    } else {
        (1u64 << g.weight_bits) - 1
    };
    cell.min(code)
}

/// The ADC's full-scale range derived from the coding: rows x the largest DAC plane x the
/// largest cell level (`max_level`: the layer's own largest level when its integer weights
/// exceed the coding's bound, so a legal weight never saturates). For signed inputs on
/// differential arrays with one plane and one slice this is a quarter of `full_scale`.
pub fn coded_full_scale(cfg: &Config, signed_inputs: bool, max_level: u64) -> f64 {
    let g = &cfg.geom;
    let level = level_bound(g).max(max_level).min(g.max_level() as u64);
    (g.rows as u64 * plane_bound(g, signed_inputs) * level) as f64
}

/// A `bits`-bit quantizer of partial sums in level steps.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Adc {
    /// Level steps per code (at least 1: ideal partial sums are integers).
    pub step: f32,
    /// Smallest and largest code.
    pub lo: f32,
    pub hi: f32,
}

impl Adc {
    /// Unsigned codes 0..2^B-1 over [0, range] (offset arrays), or symmetric codes
    /// -(2^(B-1)-1)..2^(B-1)-1 over [-range, range] (differential arrays).
    pub fn new(bits: u32, signed: bool, range: f64) -> Adc {
        let top = if signed {
            ((1u64 << (bits - 1)) - 1) as f64
        } else {
            ((1u64 << bits) - 1) as f64
        };
        let step = (range / top).max(1.0);
        Adc {
            step: step as f32,
            lo: if signed { -top as f32 } else { 0.0 },
            hi: top as f32,
        }
    }

    /// The layer's ADC under `cfg`'s range policy (`calibrated` = that layer's profiled
    /// range), or None without ADC quantization. Signed codes for differential arrays and
    /// for signed inputs (`signed_inputs`: sign x magnitude DACs). The full scale comes
    /// from the coding (`coded_full_scale`; `max_level`: the layer's largest cell level).
    pub fn for_layer(
        cfg: &Config,
        calibrated: Option<f64>,
        signed_inputs: bool,
        max_level: u64,
    ) -> Option<Adc> {
        let a = &cfg.analog;
        if a.adc_bits == 0 {
            return None;
        }
        let fs = coded_full_scale(cfg, signed_inputs, max_level);
        let range = match a.adc_range {
            AdcRange::FullScale => fs,
            AdcRange::Clipped => a.adc_clip * fs,
            AdcRange::Calibrated => calibrated.unwrap_or(fs).clamp(1.0, fs),
        };
        Some(Adc::new(
            a.adc_bits,
            cfg.geom.differential || signed_inputs,
            range,
        ))
    }
}

/// Round half to even for |x| < 2^22 without SSE4.1 (vectorizes on baseline x86-64).
#[inline(always)]
pub fn round_fast(x: f32) -> f32 {
    const M: f32 = 12_582_912.0; // 1.5 * 2^23
    (x + M) - M
}

const BINS: usize = 4096;

/// Histogram of |ideal partial sums| of one layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub full_scale: f64,
    pub max: f64,
    pub count: u64,
    pub bins: Vec<u64>,
}

impl Profile {
    pub fn new(full_scale: f64) -> Profile {
        Profile {
            full_scale: full_scale.max(1.0),
            max: 0.0,
            count: 0,
            bins: vec![0; BINS],
        }
    }

    #[inline]
    pub fn add(&mut self, v: f32) {
        let a = v.abs() as f64;
        self.max = self.max.max(a);
        self.count += 1;
        let b = ((a / self.full_scale) * BINS as f64) as usize;
        self.bins[b.min(BINS - 1)] += 1;
    }

    /// `n` partial sums that are exactly zero (inputs all zero).
    pub fn add_zeros(&mut self, n: u64) {
        self.count += n;
        self.bins[0] += n;
    }

    pub fn merge(&mut self, o: &Profile) {
        self.max = self.max.max(o.max);
        self.count += o.count;
        for (a, b) in self.bins.iter_mut().zip(&o.bins) {
            *a += b;
        }
    }

    /// The `p`-th percentile of |partial sums| (100 = the exact maximum; otherwise the
    /// upper edge of the histogram bin holding it, at most the maximum).
    pub fn percentile(&self, p: f64) -> f64 {
        if p >= 100.0 || self.count == 0 {
            return self.max;
        }
        let want = (p / 100.0 * self.count as f64).ceil() as u64;
        let mut seen = 0;
        for (i, &b) in self.bins.iter().enumerate() {
            seen += b;
            if seen >= want {
                return ((i + 1) as f64 * self.full_scale / BINS as f64).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_cover_the_range_and_never_resolve_below_one_step() {
        let a = Adc::new(8, false, 384.0);
        assert_eq!((a.lo, a.hi), (0.0, 255.0));
        assert!((a.step - 384.0 / 255.0).abs() < 1e-6);
        let b = Adc::new(10, false, 384.0);
        assert_eq!(b.step, 1.0);
        let s = Adc::new(4, true, 70.0);
        assert_eq!((s.lo, s.hi, s.step), (-7.0, 7.0, 10.0));
    }

    fn cfg(cell_bits: u32, dac_bits: u32, differential: bool) -> Config {
        Config::ideal(Geometry {
            rows: 128,
            weight_bits: 8,
            cell_bits,
            input_bits: 8,
            dac_bits,
            differential,
        })
    }

    /// Signed 8-bit inputs on one 8-bit DAC plane reach 127, not 255; a differential pair's
    /// 8-bit cell holds |w| <= 128, not 255: the coded range is a quarter of the array's.
    #[test]
    fn full_scale_follows_the_coding() {
        let c = cfg(8, 8, true);
        assert_eq!(full_scale(&c), 128.0 * 255.0 * 255.0);
        assert_eq!(coded_full_scale(&c, true, 0), 128.0 * 127.0 * 128.0);
        assert!((full_scale(&c) / coded_full_scale(&c, true, 0) - 4.0).abs() < 0.02);
        // Unsigned inputs on an offset array use every code: the ranges agree.
        let o = cfg(8, 8, false);
        assert_eq!(coded_full_scale(&o, false, 0), full_scale(&o));
        // Bit slices and 1-bit DACs fill their cells and planes whatever the coding.
        let s = cfg(2, 1, true);
        assert_eq!(coded_full_scale(&s, true, 0), full_scale(&s));
        // A layer whose integer weights exceed the signed range keeps its largest level.
        assert_eq!(coded_full_scale(&c, true, 255), 128.0 * 127.0 * 255.0);
    }

    #[test]
    fn fast_rounding_is_half_even() {
        for (x, r) in [
            (0.5f32, 0.0f32),
            (1.5, 2.0),
            (2.5, 2.0),
            (-0.5, 0.0),
            (-1.5, -2.0),
            (3.2, 3.0),
            (-3.7, -4.0),
        ] {
            assert_eq!(round_fast(x), r, "{x}");
        }
    }

    #[test]
    fn percentiles() {
        let mut p = Profile::new(4096.0);
        for v in 0..1000 {
            p.add(v as f32);
        }
        assert_eq!(p.percentile(100.0), 999.0);
        let p99 = p.percentile(99.0);
        assert!((989.0..=992.0).contains(&p99), "{p99}");
    }
}
