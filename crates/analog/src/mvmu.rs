//! One matrix-vector unit at a time (PUMA's MVMU): signed fixed-point weights and input
//! words through the same crossbar model as whole networks. PUMA's simulator calls
//! [`Mvmu::mvm`] for every `mvm` instruction when `--nonideal` is set.

use crate::adc::Adc;
use crate::config::{AnalogSpec, Config, DeviceSpec, Geometry};
use crate::device::{Arrays, MatMap, program};
use crate::encode::IntWeights;
use crate::error::{AnalogError, Result};
use crate::mvm::{Coding, Readout, mvm};
use crate::rng::mix;
use serde::{Deserialize, Serialize};

/// The text of the built-in `[analog]` and `[device]` sections (arch/rram-128.toml).
const DEFAULT_SECTIONS: &str = include_str!("../../../arch/rram-128.toml");

/// `[analog]` and `[device]` from an architecture TOML (other tables are ignored); the
/// built-in arch/rram-128.toml's when `text` is None.
pub fn read_sections(text: Option<&str>) -> Result<(AnalogSpec, DeviceSpec)> {
    #[derive(Deserialize)]
    struct Sections {
        analog: Option<AnalogSpec>,
        device: Option<DeviceSpec>,
    }
    let bad = |m: String| AnalogError::Config {
        field: "nonideal",
        msg: m,
    };
    let s: Sections = toml::from_str::<toml::Table>(text.unwrap_or(DEFAULT_SECTIONS))
        .map_err(|e| bad(e.to_string()))
        .and_then(|t| {
            let keep: toml::Table = t
                .into_iter()
                .filter(|(k, _)| k == "analog" || k == "device")
                .collect();
            keep.try_into()
                .map_err(|e: toml::de::Error| bad(e.to_string()))
        })?;
    match (s.analog, s.device) {
        (Some(a), Some(d)) => Ok((a, d)),
        _ => Err(bad(
            "the file needs both an [analog] and a [device] section (see arch/rram-128.toml)"
                .into(),
        )),
    }
}

/// What a PUMA run with `--nonideal` adds: read-out range, device and seed (the crossbar
/// geometry, DAC and ADC bits and word width come from the PUMA architecture).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NonIdeal {
    pub analog: AnalogSpec,
    pub device: DeviceSpec,
    pub seed: u64,
}

/// The model of a crossbar MVMU: `word_bits`-bit signed weights and inputs on
/// `xbar`-row crossbars of `cell_bits` cells, one offset-encoded crossbar per weight slice
/// (PUMA's eight 2-bit crossbars for 16-bit weights, paper §3), inputs through
/// `dac_bits` DACs, an `adc_bits` ADC; range policy and device from `analog`/`device`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MvmuModel {
    pub cfg: Config,
    /// Seed of the programming and read-noise draws.
    pub seed: u64,
}

impl MvmuModel {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        xbar: usize,
        cell_bits: u32,
        dac_bits: u32,
        adc_bits: u32,
        word_bits: u32,
        mut analog: AnalogSpec,
        device: DeviceSpec,
        seed: u64,
    ) -> Result<Self> {
        analog.adc_bits = adc_bits;
        let cfg = Config {
            geom: Geometry {
                rows: xbar,
                weight_bits: word_bits,
                cell_bits,
                input_bits: word_bits,
                dac_bits,
                differential: false,
            },
            analog,
            device,
            exact: false,
        };
        cfg.validate()?;
        Ok(MvmuModel { cfg, seed })
    }
}

/// One MVMU's crossbars, programmed once (per run) from its weights.
pub struct Mvmu {
    w: IntWeights,
    arrays: Arrays,
    adc: Option<Adc>,
    cfg: Config,
    seed: u64,
    reads: u64,
}

impl Mvmu {
    /// Program `w[i * stride + j]` (output i < `rows`, input j < `cols`) as unit `unit`
    /// of the run (its draws come from (seed, unit)).
    pub fn program(
        model: &MvmuModel,
        w: &[i16],
        stride: usize,
        rows: usize,
        cols: usize,
        unit: u64,
    ) -> Mvmu {
        // The crossbar holds W^T: inputs on its rows, outputs on its columns.
        let mut t = vec![0i64; cols * rows];
        for i in 0..rows {
            for j in 0..cols {
                t[j * rows + i] = w[i * stride + j] as i64;
            }
        }
        let iw = IntWeights::fit(cols, rows, &t, &model.cfg.geom);
        let map = MatMap::uniform(cols, model.cfg.geom.rows, rows.max(1));
        let seed = mix(model.seed, &[unit]);
        let adc = Adc::for_layer(&model.cfg, None, false, iw.max_level(&model.cfg.geom));
        Mvmu {
            arrays: program(&iw, &map, &model.cfg, seed),
            w: iw,
            adc,
            cfg: model.cfg.clone(),
            seed,
            reads: 0,
        }
    }

    /// out[i] = sum_j w[i][j] x[j] through the crossbars, the inputs taken as signed
    /// `word_bits`-bit words (their low bits, two's complement) and streamed bit-serially
    /// as PUMA does, the top bit's stream subtracted (with wider DACs: offset binary and a
    /// digital correction). Exact (an integer) with an ideal device and an ADC that
    /// resolves every level.
    pub fn mvm(&mut self, x: &[i32], out: &mut [f64]) {
        let bits = self.cfg.geom.input_bits;
        let half = 1i64 << (bits - 1);
        let mask = (1i64 << bits) - 1;
        let twos = self.cfg.geom.dac_bits == 1;
        let xu: Vec<u16> = x[..self.w.k]
            .iter()
            .map(|&v| {
                let u = (v as i64) & mask;
                (if twos { u } else { u ^ half }) as u16
            })
            .collect();
        let ro = Readout {
            coding: if twos {
                Coding::TwosComplement
            } else {
                Coding::Unsigned
            },
            adc: self.adc,
            noise_seed: mix(self.seed, &[self.reads]),
            profile: None,
        };
        self.reads += 1;
        let acc = mvm(&self.arrays, &self.cfg, &xu, 1, bits, &ro);
        let f = (1u64 << self.w.shift) as f64;
        let base = if twos { 0.0 } else { -(half as f64) };
        for ((o, a), &cs) in out.iter_mut().zip(&acc).zip(&self.w.colsum) {
            *o = (a + base * cs as f64) * f;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ideal_mvmu_is_exact_and_a_noisy_one_is_seeded() {
        let (rows, cols) = (50, 128);
        let w: Vec<i16> = (0..rows * cols)
            .map(|k| ((k * 7919) % 65536) as i32 as i16)
            .collect();
        let x: Vec<i32> = (0..cols)
            .map(|k| ((k * 104_729) % 65536) as i32 - 32768)
            .collect();
        let (a, mut d) = read_sections(None).unwrap();
        let ideal = DeviceSpec::ideal();
        let m = MvmuModel::new(128, 2, 1, 24, 16, a.clone(), ideal, 1).unwrap();
        let mut u = Mvmu::program(&m, &w, cols, rows, cols, 0);
        let mut out = vec![0f64; rows];
        u.mvm(&x, &mut out);
        for i in 0..rows {
            let want: i64 = (0..cols)
                .map(|j| w[i * cols + j] as i64 * x[j] as i64)
                .sum();
            assert_eq!(out[i], want as f64, "row {i}");
        }
        d.variation = 0.05;
        let noisy = MvmuModel::new(128, 2, 1, 8, 16, a, d, 1).unwrap();
        let (mut p, mut q) = (
            Mvmu::program(&noisy, &w, cols, rows, cols, 3),
            Mvmu::program(&noisy, &w, cols, rows, cols, 3),
        );
        let (mut o1, mut o2) = (vec![0f64; rows], vec![0f64; rows]);
        p.mvm(&x, &mut o1);
        q.mvm(&x, &mut o2);
        assert_eq!(o1, o2);
        assert_ne!(o1, out);
        assert!(read_sections(Some("[analog]\nadc_bits = 8\n")).is_err());
    }
}
