//! Integer encodings: the weights a crossbar stores (offset or sign-magnitude, cut into
//! cell slices) and the inputs a DAC streams (unsigned, cut into DAC slices), with the
//! digital terms that restore the signed product exactly:
//!
//! x_int = 2^sx * x_u + base,   w_int = 2^sw * w,
//! sum_i x_int w_int = 2^(sx+sw) * sum_i x_u w + 2^sw * base * sum_i w.
//!
//! The crossbar computes sum_i x_u w; the rest is digital and exact.

use crate::config::Geometry;

/// Integer weights of one crossbar matrix, `k` inputs (rows) x `n` outputs (columns),
/// row-major, already fitted to the encodable range.
#[derive(Clone, Debug, PartialEq)]
pub struct IntWeights {
    pub k: usize,
    pub n: usize,
    pub w: Vec<i32>,
    /// w_int = 2^shift * w (weights with more bits than the cells hold lose LSBs).
    pub shift: u32,
    /// Sum over rows of each column (for the input-offset correction).
    pub colsum: Vec<i64>,
}

/// The integer weights an array can hold: a differential pair stores |w| in its slices'
/// S x c bits; an offset array stores w + 2^(b-1) in them.
fn encodable(geom: &Geometry) -> (i64, i64) {
    let cap = (1i64 << (geom.slices() as u32 * geom.cell_bits).min(40)) - 1;
    if geom.differential {
        (-cap, cap)
    } else {
        let half = 1i64 << (geom.weight_bits - 1);
        (-half, cap - half)
    }
}

/// Round-half-even right shift of a signed integer.
pub fn shr_round(v: i64, sh: u32) -> i64 {
    if sh == 0 {
        return v;
    }
    let d = 1i64 << sh;
    let q = v.div_euclid(d);
    let r = v.rem_euclid(d);
    let half = d / 2;
    if r > half || (r == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

impl IntWeights {
    /// Fit signed integer weights (e.g. w_q - w_zp of a quantized model) into the
    /// geometry's range, dropping LSBs only when they do not fit.
    pub fn fit(k: usize, n: usize, w: &[i64], geom: &Geometry) -> IntWeights {
        let (lo, hi) = encodable(geom);
        let mut shift = 0;
        while w
            .iter()
            .any(|&v| shr_round(v, shift) < lo || shr_round(v, shift) > hi)
        {
            shift += 1;
        }
        let w: Vec<i32> = w.iter().map(|&v| shr_round(v, shift) as i32).collect();
        let mut colsum = vec![0i64; n];
        for row in w.chunks(n.max(1)) {
            for (c, &v) in colsum.iter_mut().zip(row) {
                *c += v as i64;
            }
        }
        IntWeights {
            k,
            n,
            w,
            shift,
            colsum,
        }
    }

    /// Symmetric per-column quantization of float weights to `weight_bits`: returns the
    /// integer weights and each column's scale (w ~ scale * w_int).
    pub fn quantize(k: usize, n: usize, w: &[f32], geom: &Geometry) -> (IntWeights, Vec<f64>) {
        let qmax = ((1i64 << (geom.weight_bits - 1)) - 1).max(1) as f64;
        let mut scale = vec![0f64; n];
        for row in w.chunks(n.max(1)) {
            for (s, &v) in scale.iter_mut().zip(row) {
                *s = s.max((v as f64).abs());
            }
        }
        for s in &mut scale {
            *s = if *s > 0.0 { *s / qmax } else { 1.0 };
        }
        let ints: Vec<i64> = w
            .iter()
            .enumerate()
            .map(|(i, &v)| ((v as f64) / scale[i % n]).round_ties_even() as i64)
            .collect();
        (IntWeights::fit(k, n, &ints, geom), scale)
    }

    /// Offset added to every weight of an offset-encoded array (0 when differential).
    pub fn offset(geom: &Geometry) -> i64 {
        if geom.differential {
            0
        } else {
            1i64 << (geom.weight_bits - 1)
        }
    }

    /// Largest level any slice of these weights puts in a cell.
    pub fn max_level(&self, geom: &Geometry) -> u64 {
        let mut m = 0u32;
        for &v in &self.w {
            for s in 0..geom.slices() {
                let (p, n) = Self::levels(v, s, geom);
                m = m.max(p).max(n);
            }
        }
        m as u64
    }

    /// Nominal cell levels of slice `s` for weight `v`: (positive cell, negative cell);
    /// an offset-encoded array has only the first.
    #[inline]
    pub fn levels(v: i32, s: usize, geom: &Geometry) -> (u32, u32) {
        let c = geom.cell_bits;
        let mask = geom.max_level();
        if geom.differential {
            let m = v.unsigned_abs() >> (c as usize * s);
            let l = m & mask;
            if v >= 0 { (l, 0) } else { (0, l) }
        } else {
            let u = (v as i64 + Self::offset(geom)) as u64;
            (((u >> (c as usize * s)) as u32) & mask, 0)
        }
    }
}

/// How a layer's inputs were made unsigned integers for the DACs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputEnc {
    /// Bits of x_u (planes = ceil(bits / dac_bits)).
    pub bits: u32,
    /// x_int = 2^shift * x_u + base.
    pub shift: u32,
    pub base: i64,
    /// Real value of one x_int step (1 for integer layers).
    pub scale: f64,
    /// How the codes stream (unsigned, or sign-magnitude for signed float inputs).
    pub coding: Coding,
}

/// Quantized inputs: codes of a `qbits`-bit type with minimum `qmin` and zero point `zp`
/// become x_u = q - qmin (x_int = q - zp = x_u + qmin - zp), with LSBs dropped when
/// the DAC stream is narrower than the type.
pub fn encode_quantized(
    q: &[i32],
    qbits: u32,
    qmin: i32,
    zp: i32,
    geom: &Geometry,
) -> (Vec<u16>, InputEnc) {
    let bits = qbits.min(geom.input_bits);
    let shift = qbits - bits;
    let top = (1i64 << bits) - 1;
    let x: Vec<u16> = q
        .iter()
        .map(|&v| shr_round((v - qmin) as i64, shift).clamp(0, top) as u16)
        .collect();
    let enc = InputEnc {
        bits,
        shift,
        base: (qmin - zp) as i64,
        scale: 1.0,
        coding: Coding::Unsigned,
    };
    (x, enc)
}

/// The input quantizer of a float layer, from the range its inputs take in the ideal run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FloatInputQuant {
    pub bits: u32,
    pub signed: bool,
    pub scale: f64,
}

impl FloatInputQuant {
    /// Unsigned `input_bits` codes when the range is non-negative; otherwise a sign and
    /// `input_bits - 1` magnitude bits of a symmetric range (a signed DAC drives the
    /// magnitude's planes with the sign's polarity, MNSIM's sign x magnitude, [ni] §3).
    pub fn new(lo: f64, hi: f64, geom: &Geometry) -> Self {
        let bits = geom.input_bits;
        let signed = lo < 0.0 && bits > 1;
        let (m, levels) = if signed {
            (
                lo.abs().max(hi.abs()),
                ((1i64 << (bits - 1)) - 1).max(1) as f64,
            )
        } else {
            (hi.max(0.0), ((1i64 << bits) - 1) as f64)
        };
        let scale = if m > 0.0 && m.is_finite() {
            m / levels
        } else {
            1.0
        };
        FloatInputQuant {
            bits,
            signed,
            scale,
        }
    }

    pub fn encode(&self, x: &[f32]) -> (Vec<u16>, InputEnc) {
        let inv = 1.0 / self.scale;
        let top = if self.signed {
            (1i64 << (self.bits - 1)) - 1
        } else {
            (1i64 << self.bits) - 1
        };
        let v = x
            .iter()
            .map(|&f| {
                let q = ((f as f64) * inv).round_ties_even();
                let q = if q.is_nan() {
                    0
                } else {
                    (q as i64).clamp(-top, top)
                };
                if self.signed {
                    (if q < 0 { 0x8000 } else { 0 }) | q.unsigned_abs() as u16
                } else {
                    q.max(0) as u16
                }
            })
            .collect();
        (
            v,
            InputEnc {
                bits: if self.signed {
                    self.bits - 1
                } else {
                    self.bits
                },
                shift: 0,
                base: 0,
                scale: self.scale,
                coding: if self.signed {
                    Coding::SignMagnitude
                } else {
                    Coding::Unsigned
                },
            },
        )
    }

    /// The code of 0 (convolution padding).
    pub fn pad_code(&self) -> u16 {
        0
    }
}

/// How the input codes stream through the DACs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Coding {
    /// Unsigned codes, every plane added (offset inputs carry their correction digitally).
    #[default]
    Unsigned,
    /// Two's complement `x_bits`-bit words streamed bit by bit (1-bit DACs): the top
    /// plane is subtracted (PUMA's bit-serial inputs).
    TwosComplement,
    /// Bit 15 is the sign, the rest the magnitude; a signed DAC drives the magnitude's
    /// planes with the sign's polarity (MNSIM's sign x magnitude inputs).
    SignMagnitude,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(bits: u32, cell: u32, diff: bool) -> Geometry {
        Geometry {
            rows: 128,
            weight_bits: bits,
            cell_bits: cell,
            input_bits: 8,
            dac_bits: 1,
            differential: diff,
        }
    }

    #[test]
    fn slices_rebuild_every_weight() {
        for diff in [false, true] {
            for cell in [1, 2, 3, 8] {
                let g = geom(8, cell, diff);
                for v in -128..=127 {
                    let mut sum = 0i64;
                    for s in 0..g.slices() {
                        let (p, m) = IntWeights::levels(v, s, &g);
                        assert!(p <= g.max_level() && m <= g.max_level());
                        sum += ((p as i64) - (m as i64)) << (cell as usize * s);
                    }
                    assert_eq!(
                        sum - IntWeights::offset(&g),
                        v as i64,
                        "{v} diff {diff} cell {cell}"
                    );
                }
            }
        }
    }

    #[test]
    fn weights_that_do_not_fit_lose_lsbs() {
        let g = geom(4, 2, false);
        let w = IntWeights::fit(1, 3, &[-16, 7, 13], &g);
        assert_eq!(w.shift, 1);
        assert_eq!(w.w, vec![-8, 4, 6]);
        let g8 = geom(8, 2, false);
        assert_eq!(IntWeights::fit(1, 2, &[-128, 127], &g8).shift, 0);
    }

    #[test]
    fn quantized_inputs_round_trip() {
        let g = geom(8, 2, false);
        let (x, e) = encode_quantized(&[-128, 0, 127], 8, -128, 3, &g);
        assert_eq!(x, vec![0, 128, 255]);
        let back: Vec<i64> = x
            .iter()
            .map(|&u| ((u as i64) << e.shift) + e.base)
            .collect();
        assert_eq!(back, vec![-131, -3, 124]);
    }

    #[test]
    fn float_inputs_use_the_sign_of_their_range() {
        let g = geom(8, 2, false);
        let q = FloatInputQuant::new(0.0, 2.55, &g);
        let (x, e) = q.encode(&[0.0, 1.0, 2.55, 9.0]);
        assert_eq!((x.clone(), e.base), (vec![0, 100, 255, 255], 0));
        let s = FloatInputQuant::new(-1.0, 0.5, &g);
        let (x, e) = s.encode(&[-1.0, 0.0, 0.5]);
        assert_eq!((e.base, e.bits, e.coding), (0, 7, Coding::SignMagnitude));
        assert_eq!(x, vec![0x8000 | 127, 0, 64]);
    }
}
