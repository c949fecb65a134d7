//! The crossbar architecture and compiler settings, read from a TOML file such as
//! `arch/rram-128.toml`. Every default there cites the paper or the reference notes.

use crate::error::{Result, XbarError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The text of `arch/rram-128.toml`, the default architecture.
pub const RRAM_128_TOML: &str = include_str!("../../../arch/rram-128.toml");

/// The text of `arch/rram-128-2bit.toml`: 2-bit cells on differential pairs (accuracy studies).
pub const RRAM_128_2BIT_TOML: &str = include_str!("../../../arch/rram-128-2bit.toml");

/// Which rule set the compiler follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Fixed rules: all maximal spaces, correct DFTRC axes, balanced S_DW split, bit slicing,
    /// packing-aware duplication search, ceil-based layer time.
    #[default]
    Pimkit,
    /// The public RNC code's rules and quirks (see docs/xbar.md).
    RncCompat,
}

impl std::str::FromStr for Mode {
    type Err = XbarError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "pimkit" => Ok(Mode::Pimkit),
            "rnc-compat" | "rnc" => Ok(Mode::RncCompat),
            _ => Err(XbarError::Option {
                option: "mode",
                msg: format!("unknown mode '{s}'; use 'pimkit' or 'rnc-compat'"),
            }),
        }
    }
}

/// How grouped and depthwise convolutions become boxes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DepthwiseMapping {
    /// RNC's box: (k*k*Cin/g) x Cout, one group per read, g*Hout*Wout cycles; split by S_DW.
    #[default]
    Compact,
    /// Groups on the diagonal of a crossbar: as many groups per crossbar as fit, Hout*Wout
    /// cycles, mostly-zero area. S_DW does not apply.
    Blockdiag,
}

impl std::str::FromStr for DepthwiseMapping {
    type Err = XbarError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "compact" => Ok(DepthwiseMapping::Compact),
            "blockdiag" | "block-diagonal" => Ok(DepthwiseMapping::Blockdiag),
            _ => Err(XbarError::Option {
                option: "depthwise",
                msg: format!("unknown depthwise mapping '{s}'; use 'compact' or 'blockdiag'"),
            }),
        }
    }
}

/// Axis that receives the slices of one weight when a cell holds fewer bits than a weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BitSlice {
    Columns,
    Rows,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossbarSpec {
    pub rows: usize,
    pub cols: usize,
    pub weight_bits: u32,
    pub cell_bits: u32,
    pub bit_slice: BitSlice,
    pub differential: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingSpec {
    pub read_latency_ns: f64,
    pub input_bits: u32,
    pub dac_bits: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackingSpec {
    pub hazard_rule: bool,
    pub layer_threshold: usize,
    pub max_load: usize,
    /// pimkit mode: random-key box orders tried per packing (best kept); 1 is fastest.
    pub restarts: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicationSpec {
    pub margin_start: f64,
    pub margin_step: f64,
    pub margin_min: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub budget: f64,
    pub sdw: usize,
    pub samples: usize,
    pub seed: u64,
    pub depthwise: DepthwiseMapping,
    pub mode: Mode,
}

/// A crossbar target: geometry, timing, packing rules, duplication fallback and run defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arch {
    pub name: String,
    pub crossbar: CrossbarSpec,
    pub timing: TimingSpec,
    pub packing: PackingSpec,
    pub duplication: DuplicationSpec,
    pub defaults: Defaults,
    /// Read-out of the functional (accuracy) model; see docs/accuracy.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analog: Option<pimkit_analog::AnalogSpec>,
    /// Device of the functional (accuracy) model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<pimkit_analog::DeviceSpec>,
}

impl Default for Arch {
    /// The built-in `arch/rram-128.toml`.
    fn default() -> Self {
        pimkit_engine::arch::builtin().expect("built-in arch/rram-128.toml is valid")
    }
}

impl pimkit_engine::ArchSpec for Arch {
    const DEFAULT_TOML: &'static str = RRAM_128_TOML;
    const DEFAULT_PATH: &'static str = "arch/rram-128.toml";
    fn check(&self, c: &mut pimkit_engine::Checks) {
        if let Err(e) = self.validate() {
            match e {
                XbarError::Arch { field, msg } => c.fail_field(field, msg),
                other => c.fail_field("architecture", other.to_string()),
            }
        }
    }
}

impl Arch {
    /// `s` laid over the built-in `arch/rram-128.toml` (a file may set only what differs).
    pub fn from_toml_str(s: &str) -> Result<Arch> {
        pimkit_engine::arch::from_str(s, "architecture TOML").map_err(XbarError::ArchFile)
    }

    pub fn from_file(path: &Path) -> Result<Arch> {
        pimkit_engine::arch::load(Some(path)).map_err(XbarError::ArchFile)
    }

    /// The built-in file overlaid by `file` when given, with square crossbars of `size`
    /// rows and columns when given (the front ends' `--xbar N`), checked.
    pub fn load_sized(file: Option<&Path>, size: Option<usize>) -> Result<Arch> {
        let mut arch: Arch = pimkit_engine::arch::load(file).map_err(XbarError::ArchFile)?;
        if let Some(n) = size {
            arch.crossbar.rows = n;
            arch.crossbar.cols = n;
            arch.validate()?;
        }
        Ok(arch)
    }

    /// Check every field; the first problem is returned with the field's name.
    pub fn validate(&self) -> Result<()> {
        let c = &self.crossbar;
        let bad = |field: &'static str, msg: &str| {
            Err(XbarError::Arch {
                field,
                msg: msg.to_string(),
            })
        };
        if c.rows == 0 || c.rows > 65536 {
            return bad(
                "crossbar.rows",
                "must be between 1 and 65536 (RNC uses 128)",
            );
        }
        if c.cols == 0 || c.cols > 65536 {
            return bad(
                "crossbar.cols",
                "must be between 1 and 65536 (RNC uses 128)",
            );
        }
        if c.weight_bits == 0 || c.weight_bits > 32 {
            return bad("crossbar.weight_bits", "must be between 1 and 32");
        }
        if c.cell_bits == 0 || c.cell_bits > 32 {
            return bad("crossbar.cell_bits", "must be between 1 and 32");
        }
        let t = &self.timing;
        // 1 s per read bounds every latency product far from overflow.
        if !(t.read_latency_ns > 0.0 && t.read_latency_ns <= 1e9) {
            return bad(
                "timing.read_latency_ns",
                "must be a number of nanoseconds in (0, 1e9]",
            );
        }
        if t.input_bits == 0 || t.input_bits > 64 {
            return bad("timing.input_bits", "must be between 1 and 64");
        }
        if t.dac_bits == 0 || t.dac_bits > 64 {
            return bad("timing.dac_bits", "must be between 1 and 64");
        }
        if self.packing.restarts > 100_000 {
            return bad(
                "packing.restarts",
                "must be at most 100000 (each restart is one more packing; 1 is fastest)",
            );
        }
        if self.packing.max_load == 0 || self.packing.max_load > 1 << 20 {
            return bad(
                "packing.max_load",
                "must be between 1 and 1048576 boxes per crossbar",
            );
        }
        let d = &self.duplication;
        if !(d.margin_start > 0.0 && d.margin_start <= 1.0) {
            return bad("duplication.margin_start", "must be in (0, 1]");
        }
        if !(d.margin_min > 0.0 && d.margin_min <= d.margin_start) {
            return bad("duplication.margin_min", "must be in (0, margin_start]");
        }
        if !(d.margin_step > 0.0 && d.margin_step < 1.0) {
            return bad("duplication.margin_step", "must be in (0, 1)");
        }
        let f = &self.defaults;
        if !(f.budget > 0.0 && f.budget <= 1000.0) {
            return bad(
                "defaults.budget",
                "must be a multiple of the ISAAC-like crossbar count in (0, 1000] (as --budget)",
            );
        }
        if f.sdw == 0 || f.sdw > 4096 {
            return bad(
                "defaults.sdw",
                "the depthwise split factor must be between 1 and 4096 (as --sdw)",
            );
        }
        if f.samples == 0 || f.samples > 1 << 20 {
            return bad("defaults.samples", "must be between 1 and 1048576");
        }
        Ok(())
    }

    /// Rows and columns one weight takes (bit slicing and polarity). RNC-compat ignores both.
    pub fn weight_footprint(&self, mode: Mode) -> (usize, usize) {
        if mode == Mode::RncCompat {
            return (1, 1);
        }
        let c = &self.crossbar;
        let slices = c.weight_bits.div_ceil(c.cell_bits) as usize;
        let pol = if c.differential { 2 } else { 1 };
        match c.bit_slice {
            BitSlice::Columns => (1, slices * pol),
            BitSlice::Rows => (slices, pol),
        }
    }

    /// The functional crossbar model of this architecture: geometry from `[crossbar]` and
    /// `[timing]` (weight rows per array = rows / the rows one weight takes), read-out and
    /// device from `[analog]` and `[device]` (the built-in arch/rram-128.toml's sections
    /// when the file has none; the bool says so).
    pub fn analog_config(&self) -> Result<(pimkit_analog::Config, bool)> {
        let (rm, _) = self.weight_footprint(Mode::Pimkit);
        let c = &self.crossbar;
        let geom = pimkit_analog::Geometry {
            rows: (c.rows / rm).max(1),
            weight_bits: c.weight_bits,
            cell_bits: c.cell_bits,
            input_bits: self.timing.input_bits,
            dac_bits: self.timing.dac_bits,
            differential: c.differential,
        };
        let mut fallback = false;
        let (analog, device) = match (&self.analog, &self.device) {
            (Some(a), Some(d)) => (a.clone(), d.clone()),
            (a, d) => {
                fallback = true;
                let base = Arch::from_toml_str(RRAM_128_TOML)?;
                (
                    a.clone()
                        .or(base.analog)
                        .unwrap_or_else(pimkit_analog::AnalogSpec::ideal),
                    d.clone()
                        .or(base.device)
                        .unwrap_or_else(pimkit_analog::DeviceSpec::ideal),
                )
            }
        };
        let cfg = pimkit_analog::Config {
            geom,
            analog,
            device,
            exact: false,
        };
        cfg.validate().map_err(|e| match e {
            pimkit_analog::AnalogError::Config { field, msg } => XbarError::Arch { field, msg },
            other => XbarError::Option {
                option: "arch",
                msg: other.to_string(),
            },
        })?;
        Ok((cfg, fallback))
    }

    /// Nanoseconds per crossbar cycle (one input vector read).
    pub fn cycle_ns(&self) -> f64 {
        let t = &self.timing;
        t.read_latency_ns * t.input_bits.div_ceil(t.dac_bits) as f64
    }

    pub fn area(&self) -> u64 {
        (self.crossbar.rows * self.crossbar.cols) as u64
    }
}
