//! What the model needs to know: the crossbar geometry and encodings (from the engine's
//! architecture file), the read-out (`[analog]`) and the device (`[device]`). The TOML
//! sections deserialize into [`AnalogSpec`] and [`DeviceSpec`]; every default is in the
//! architecture files with its source (arch/rram-128.toml).

use crate::error::{AnalogError, Result};
use serde::{Deserialize, Serialize};

/// How the ADC's input range is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AdcRange {
    /// The largest partial sum an array can produce: rows x (2^dac-1) x (2^cell-1)
    /// (MNSIM FIX mode, CrossSim MAX).
    #[default]
    FullScale,
    /// Per layer, a percentile of |partial sums| of the ideal network on the inputs
    /// (CrossSim CALIBRATED; NeuroSim's min/max, fixed per layer instead of per call).
    Calibrated,
    /// `adc_clip` x full scale; larger partial sums saturate.
    Clipped,
}

impl std::str::FromStr for AdcRange {
    type Err = AnalogError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "full-scale" | "full" => Ok(AdcRange::FullScale),
            "calibrated" | "cal" => Ok(AdcRange::Calibrated),
            "clipped" | "clip" => Ok(AdcRange::Clipped),
            _ => Err(AnalogError::Config {
                field: "analog.adc_range",
                msg: format!("unknown range policy '{s}'; use full-scale, calibrated or clipped"),
            }),
        }
    }
}

/// Distribution of the programming error of one cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum VariationModel {
    /// G(1 + sigma N(0,1)), clipped at 0 (NeuroSim `vari`, CrossSim NormalProportional).
    #[default]
    Gaussian,
    /// G exp(sigma N(0,1)) (median-preserving log-normal).
    Lognormal,
}

impl std::str::FromStr for VariationModel {
    type Err = AnalogError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "gaussian" | "normal" => Ok(VariationModel::Gaussian),
            "lognormal" | "log-normal" => Ok(VariationModel::Lognormal),
            _ => Err(AnalogError::Config {
                field: "device.variation_model",
                msg: format!("unknown variation model '{s}'; use gaussian or lognormal"),
            }),
        }
    }
}

/// The `[analog]` section: read-out and mitigations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalogSpec {
    /// ADC resolution per partial sum; 0 = no ADC quantization.
    pub adc_bits: u32,
    pub adc_range: AdcRange,
    /// `clipped`: the range as a fraction of full scale.
    pub adc_clip: f64,
    /// `calibrated`: percentile of |partial sums| that sets the range (100 = the maximum).
    pub adc_percentile: f64,
    /// Spare columns per array; the columns with the most stuck cells move to them.
    pub spare_cols: usize,
    /// Copies of every array whose column currents are summed (averaged weights).
    pub redundancy: usize,
}

/// The `[device]` section: conductance levels and their errors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// Gmax / Gmin (`inf` for an ideal off state).
    pub on_off_ratio: f64,
    /// Programming error sigma (relative), drawn once per cell and trial.
    pub variation: f64,
    pub variation_model: VariationModel,
    /// Read noise sigma (relative to the cell's conductance), drawn on every read.
    pub read_noise: f64,
    /// Rate of cells stuck at Gmin (stuck-at-off, SA0).
    pub saf_off: f64,
    /// Rate of cells stuck at Gmax (stuck-at-on, SA1).
    pub saf_on: f64,
    /// Wire resistance per cell segment (row and column lines), ohm; 0 = no IR drop.
    pub wire_resistance_ohm: f64,
    /// Gmax in microsiemens (only the IR drop uses absolute conductance).
    pub g_max_us: f64,
}

/// The crossbar as the mapping sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// Weight rows one array holds (the mapping's rows per crossbar).
    pub rows: usize,
    pub weight_bits: u32,
    pub cell_bits: u32,
    /// Bits of a float layer's inputs (quantized layers stream their own 8 bits, at most this).
    pub input_bits: u32,
    pub dac_bits: u32,
    /// Signed weights on a pair of cells (G+ - G-, subtracted before the ADC); otherwise
    /// offset weights w + 2^(b-1) on one cell and a reference column at Gmin.
    pub differential: bool,
}

impl Geometry {
    /// Cells (slices) per weight and polarity: ceil(weight_bits / cell_bits).
    pub fn slices(&self) -> usize {
        self.weight_bits.div_ceil(self.cell_bits) as usize
    }
    /// Largest level of one cell.
    pub fn max_level(&self) -> u32 {
        (1u32 << self.cell_bits) - 1
    }
}

/// Everything the functional model needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub geom: Geometry,
    pub analog: AnalogSpec,
    pub device: DeviceSpec,
    /// The reference itself: float layers keep their exact float weights and inputs (no
    /// weight, DAC or ADC quantization). Only `Config::exact` sets it; a configuration
    /// read from a file never does, so `adc_bits = 0` there still quantizes weights and
    /// inputs (the DAC + weight floor).
    #[serde(skip)]
    pub exact: bool,
}

impl AnalogSpec {
    /// No ADC quantization, no mitigations.
    pub fn ideal() -> Self {
        AnalogSpec {
            adc_bits: 0,
            adc_range: AdcRange::FullScale,
            adc_clip: 1.0,
            adc_percentile: 100.0,
            spare_cols: 0,
            redundancy: 1,
        }
    }
}

impl DeviceSpec {
    /// A perfect device: infinite on/off ratio, no errors.
    pub fn ideal() -> Self {
        DeviceSpec {
            on_off_ratio: f64::INFINITY,
            variation: 0.0,
            variation_model: VariationModel::Gaussian,
            read_noise: 0.0,
            saf_off: 0.0,
            saf_on: 0.0,
            wire_resistance_ohm: 0.0,
            g_max_us: 100.0,
        }
    }

    /// True when programming draws random numbers (variation or faults).
    pub fn programming_is_random(&self) -> bool {
        self.variation > 0.0 || self.saf_off > 0.0 || self.saf_on > 0.0
    }

    /// True when two trials can differ.
    pub fn is_random(&self) -> bool {
        self.programming_is_random() || self.read_noise > 0.0
    }

    /// Gmin in units of one level step: (2^c - 1) / (r - 1); 0 for an infinite ratio.
    pub fn g0(&self, max_level: u32) -> f64 {
        if self.on_off_ratio.is_infinite() {
            0.0
        } else {
            max_level as f64 / (self.on_off_ratio - 1.0)
        }
    }
}

fn bad<T>(field: &'static str, msg: impl Into<String>) -> Result<T> {
    Err(AnalogError::Config {
        field,
        msg: msg.into(),
    })
}

impl Config {
    /// The geometry with no ADC quantization and a perfect device: weights and float
    /// inputs are still quantized to the geometry's bits (the DAC + weight floor).
    pub fn ideal(geom: Geometry) -> Self {
        Config {
            geom,
            analog: AnalogSpec::ideal(),
            device: DeviceSpec::ideal(),
            exact: false,
        }
    }

    /// `ideal` with float layers kept exact: reproduces the reference.
    pub fn exact(geom: Geometry) -> Self {
        Config {
            exact: true,
            ..Config::ideal(geom)
        }
    }

    /// True when no part of the model changes a result: float layers then keep their
    /// exact float weights and inputs; integer layers go through the exact integer model.
    /// Float layers quantize unless the configuration is `exact`: an "ADC off" point of a
    /// sweep shows the DAC and weight quantization floor, not the reference.
    /// (A finite on/off ratio alone changes nothing: the Gmin floor cancels in the
    /// differential pair or against the reference column unless something perturbs it.)
    pub fn is_ideal(&self) -> bool {
        let d = &self.device;
        self.exact && self.analog.adc_bits == 0 && !d.is_random() && d.wire_resistance_ohm == 0.0
    }

    /// Check every field; the error names the field and the allowed range.
    pub fn validate(&self) -> Result<()> {
        let g = &self.geom;
        if g.rows == 0 || g.rows > 65536 {
            return bad("crossbar.rows", "must be between 1 and 65536");
        }
        if !(1..=16).contains(&g.weight_bits) {
            return bad("crossbar.weight_bits", "must be between 1 and 16");
        }
        if !(1..=8).contains(&g.cell_bits) {
            return bad("crossbar.cell_bits", "must be between 1 and 8");
        }
        if !(1..=16).contains(&g.input_bits) {
            return bad("timing.input_bits", "must be between 1 and 16");
        }
        if !(1..=8).contains(&g.dac_bits) {
            return bad("timing.dac_bits", "must be between 1 and 8");
        }
        // Partial sums of ideal levels must be exact in f32 (24-bit mantissa).
        let fs = g.rows as f64 * ((1u64 << g.dac_bits) - 1) as f64 * g.max_level() as f64;
        if fs >= (1u64 << 24) as f64 {
            return bad(
                "crossbar.rows",
                format!(
                    "rows x (2^dac_bits - 1) x (2^cell_bits - 1) = {fs} must stay below 2^24 \
                     (partial sums are computed in f32); use fewer rows, DAC bits or cell bits"
                ),
            );
        }
        let a = &self.analog;
        if a.adc_bits == 1 || a.adc_bits > 24 {
            return bad("analog.adc_bits", "must be 0 (no ADC) or between 2 and 24");
        }
        if !(a.adc_clip.is_finite() && a.adc_clip > 0.0 && a.adc_clip <= 1.0) {
            return bad(
                "analog.adc_clip",
                "must be in (0, 1] (a fraction of full scale)",
            );
        }
        if !(a.adc_percentile > 0.0 && a.adc_percentile <= 100.0) {
            return bad("analog.adc_percentile", "must be in (0, 100]");
        }
        if a.spare_cols > 4096 {
            return bad("analog.spare_cols", "must be at most 4096 per array");
        }
        if a.redundancy == 0 || a.redundancy > 64 {
            return bad("analog.redundancy", "must be between 1 and 64 copies");
        }
        let d = &self.device;
        if d.on_off_ratio.is_nan() || d.on_off_ratio <= 1.0 {
            return bad(
                "device.on_off_ratio",
                "must be above 1 (inf for an ideal off state)",
            );
        }
        if !(d.variation.is_finite() && (0.0..=10.0).contains(&d.variation)) {
            return bad("device.variation", "must be a sigma between 0 and 10");
        }
        if !(d.read_noise.is_finite() && (0.0..=10.0).contains(&d.read_noise)) {
            return bad("device.read_noise", "must be a sigma between 0 and 10");
        }
        for (f, v) in [("device.saf_off", d.saf_off), ("device.saf_on", d.saf_on)] {
            if !(0.0..=1.0).contains(&v) {
                return bad(f, "must be a rate between 0 and 1");
            }
        }
        if d.saf_off + d.saf_on > 1.0 {
            return bad("device.saf_on", "saf_off + saf_on must not exceed 1");
        }
        if !(d.wire_resistance_ohm.is_finite() && d.wire_resistance_ohm >= 0.0) {
            return bad("device.wire_resistance_ohm", "must be a resistance >= 0");
        }
        if !(d.g_max_us.is_finite() && d.g_max_us > 0.0) {
            return bad(
                "device.g_max_us",
                "must be a positive conductance in microsiemens",
            );
        }
        Ok(())
    }

    /// Set one parameter by name (sweeps and command-line overrides).
    pub fn set(&mut self, name: &str, value: f64) -> Result<()> {
        let int = |v: f64, field: &'static str| -> Result<usize> {
            if v.fract() != 0.0 || !(0.0..=1e6).contains(&v) {
                return bad(field, format!("{v} is not a non-negative integer"));
            }
            Ok(v as usize)
        };
        match name {
            "adc_bits" | "adc" => self.analog.adc_bits = int(value, "analog.adc_bits")? as u32,
            "adc_clip" => self.analog.adc_clip = value,
            "adc_percentile" => self.analog.adc_percentile = value,
            "spare_cols" | "spares" => self.analog.spare_cols = int(value, "analog.spare_cols")?,
            "redundancy" => self.analog.redundancy = int(value, "analog.redundancy")?,
            "on_off_ratio" | "on_off" => self.device.on_off_ratio = value,
            "variation" | "var" => self.device.variation = value,
            "read_noise" => self.device.read_noise = value,
            "saf" => {
                self.device.saf_off = value / 2.0;
                self.device.saf_on = value / 2.0;
            }
            "saf_off" | "sa0" => self.device.saf_off = value,
            "saf_on" | "sa1" => self.device.saf_on = value,
            "wire_resistance_ohm" | "wire_resistance" | "r_wire" => {
                self.device.wire_resistance_ohm = value
            }
            "g_max_us" => self.device.g_max_us = value,
            _ => {
                return Err(AnalogError::Config {
                    field: "sweep",
                    msg: format!("unknown parameter '{name}'; one of {}", PARAMS.join(", ")),
                });
            }
        }
        self.validate()
    }

    /// The value of a parameter [`Config::set`] accepts.
    pub fn get(&self, name: &str) -> Option<f64> {
        Some(match name {
            "adc_bits" | "adc" => self.analog.adc_bits as f64,
            "adc_clip" => self.analog.adc_clip,
            "adc_percentile" => self.analog.adc_percentile,
            "spare_cols" | "spares" => self.analog.spare_cols as f64,
            "redundancy" => self.analog.redundancy as f64,
            "on_off_ratio" | "on_off" => self.device.on_off_ratio,
            "variation" | "var" => self.device.variation,
            "read_noise" => self.device.read_noise,
            "saf" => self.device.saf_off + self.device.saf_on,
            "saf_off" | "sa0" => self.device.saf_off,
            "saf_on" | "sa1" => self.device.saf_on,
            "wire_resistance_ohm" | "wire_resistance" | "r_wire" => self.device.wire_resistance_ohm,
            "g_max_us" => self.device.g_max_us,
            _ => return None,
        })
    }
}

/// Parameters [`Config::set`] knows (sweep axes).
pub const PARAMS: &[&str] = &[
    "adc_bits",
    "adc_clip",
    "adc_percentile",
    "spare_cols",
    "redundancy",
    "on_off_ratio",
    "variation",
    "read_noise",
    "saf",
    "saf_off",
    "saf_on",
    "wire_resistance_ohm",
    "g_max_us",
];
