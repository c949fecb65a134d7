//! A component library applied to the crossbar geometry being evaluated: each component's
//! energy per operation, power and area after the stated scaling laws, the read pulse
//! time, and the chip's peak figures (docs/cost.md).

use crate::components::{Component, Components, Kind, Level};
use serde::Serialize;

/// The crossbar geometry and precisions being evaluated (the `--arch` file's; for the
/// library's own published figures, its `[design]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Geometry {
    pub rows: usize,
    pub cols: usize,
    pub cell_bits: u32,
    pub weight_bits: u32,
    pub input_bits: u32,
    pub dac_bits: u32,
    pub adc_bits: u32,
    pub differential: bool,
}

impl Geometry {
    /// The library's published design point.
    pub fn of_design(lib: &Components) -> Geometry {
        let d = &lib.design;
        Geometry {
            rows: d.rows,
            cols: d.cols,
            cell_bits: d.cell_bits,
            weight_bits: d.weight_bits,
            input_bits: d.input_bits,
            dac_bits: d.dac_bits,
            adc_bits: d.adc_bits,
            differential: d.differential,
        }
    }

    /// Read pulses per input vector (bit-serial slices through the DACs).
    pub fn pulses(&self) -> u32 {
        self.input_bits.div_ceil(self.dac_bits)
    }

    /// Physical columns one weight takes (cell slices x polarity).
    pub fn cols_per_weight(&self) -> usize {
        self.weight_bits.div_ceil(self.cell_bits) as usize * if self.differential { 2 } else { 1 }
    }

    /// Bytes of one activation (inputs and outputs move at the input precision).
    pub fn act_bytes(&self) -> f64 {
        self.input_bits as f64 / 8.0
    }
}

/// One component group after scaling to the evaluated geometry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scaled {
    pub name: String,
    pub kind: Kind,
    pub level: Level,
    /// Energy of one operation (per byte for per-byte kinds), pJ.
    pub energy_pj: f64,
    /// Group area and static power at one instance of its level.
    pub area_mm2: f64,
    pub static_mw: f64,
    /// Operations per ns the group performs at peak (all arrays busy).
    pub peak_ops_per_ns: f64,
    pub unverified: bool,
}

/// A library applied to a geometry.
#[derive(Clone, Debug, Serialize)]
pub struct Model {
    pub library: String,
    pub geometry: Geometry,
    pub components: Vec<Scaled>,
    /// One read pulse, ns: the array read, or longer when the ADCs cannot convert every
    /// column within it.
    pub pulse_ns: f64,
    /// What sets the pulse time: "array read" or "ADC".
    pub pulse_bound: &'static str,
    pub arrays_per_pe: usize,
    pub pes_per_tile: usize,
    pub tiles_per_chip: usize,
    pub clock_ghz: f64,
    pub programming_pj_per_cell: f64,
    pub programming_ns_per_row: f64,
    /// The laws applied (and to what), for notes.
    pub scaling: Vec<String>,
}

/// Walden's figure of merit at a fixed sample rate: a converter's energy per conversion (and,
/// for the capacitor or current-source arrays that dominate its area, its area) doubles with
/// each bit. Passes through each library's own ADC/DAC point.
pub fn bits_law(bits: u32, at: u32) -> f64 {
    2f64.powi(bits as i32 - at as i32)
}

/// Operations per ns of `kind` at one array running at peak (one pulse every `pulse_ns`).
fn per_array_rate(kind: Kind, g: &Geometry, pulse_ns: f64) -> f64 {
    let vec_ns = pulse_ns * g.pulses() as f64;
    let outs = (g.cols / g.cols_per_weight()).max(1) as f64;
    let in_bytes = g.rows as f64 * g.act_bytes();
    let out_bytes = outs * g.act_bytes();
    match kind {
        Kind::Array => 1.0 / pulse_ns,
        Kind::Dac => g.rows as f64 / pulse_ns,
        Kind::Adc | Kind::SampleHold | Kind::ShiftAdd => g.cols as f64 / pulse_ns,
        Kind::InputRegister => in_bytes / vec_ns,
        Kind::OutputRegister | Kind::Router | Kind::GlobalBus => out_bytes / vec_ns,
        // Each input vector's new elements: at peak a vector brings `rows` inputs.
        Kind::Buffer | Kind::Bus => (in_bytes + out_bytes) / vec_ns,
        Kind::Activation | Kind::Pooling | Kind::Vector => outs / vec_ns,
        // Off-chip traffic has no rate implied by the arrays; its row gives one (checked).
        Kind::Offchip | Kind::Control => 0.0,
    }
}

impl Model {
    /// Apply `lib` to `geom`.
    pub fn new(lib: &Components, geom: &Geometry) -> Model {
        let d = &lib.design;
        let design = Geometry::of_design(lib);
        let h = &lib.hierarchy;
        let arrays_at = |level: Level| -> f64 {
            match level {
                Level::Array => 1.0,
                Level::Pe => h.arrays_per_pe as f64,
                Level::Tile => (h.arrays_per_pe * h.pes_per_tile) as f64,
                Level::Chip => (h.arrays_per_pe * h.pes_per_tile * h.tiles_per_chip) as f64,
            }
        };
        let cells = (geom.rows * geom.cols) as f64 / (d.rows * d.cols) as f64;
        let rows = geom.rows as f64 / d.rows as f64;
        let cols = geom.cols as f64 / d.cols as f64;
        let mut scaling = Vec::new();
        // The pulse: the array read, unless the ADCs of an array convert its columns slower.
        let adc_rate_per_array: f64 = lib
            .of_kind(Kind::Adc)
            .filter_map(|(_, k)| k.rate_gsps.map(|r| r * k.count / arrays_at(k.level)))
            .sum();
        let adc_ns = if adc_rate_per_array > 0.0 {
            geom.cols as f64 / adc_rate_per_array
        } else {
            0.0
        };
        let (pulse_ns, pulse_bound) = if adc_ns > d.read_ns * (1.0 + 1e-9) {
            (adc_ns, "ADC")
        } else {
            (d.read_ns, "array read")
        };
        let design_pulse = {
            let a = d.cols as f64 / adc_rate_per_array.max(f64::MIN_POSITIVE);
            if adc_rate_per_array > 0.0 && a > d.read_ns {
                a
            } else {
                d.read_ns
            }
        };
        let components = lib
            .components
            .iter()
            .map(|(name, k)| {
                let peak_design = group_rate(k, &design, design_pulse, arrays_at(k.level));
                let e0 = match (k.energy_pj, k.op_ns, k.rate_gsps) {
                    (None, None, None) if peak_design > 0.0 => {
                        // Table power at full activity over the group's peak rate.
                        k.power_mw / peak_design
                    }
                    _ => k.unit_energy_pj(lib),
                };
                let (e_scale, area_scale, law) = match k.kind {
                    Kind::Array => (cells, cells, "cells (rows x cols)"),
                    Kind::Adc => {
                        let f = bits_law(geom.adc_bits, k.bits.unwrap_or(d.adc_bits));
                        (f, f, "2^bits (Walden FoM)")
                    }
                    Kind::Dac => {
                        let f = bits_law(geom.dac_bits, k.bits.unwrap_or(d.dac_bits));
                        (f, f * rows, "2^bits per DAC, one DAC per row")
                    }
                    Kind::SampleHold => (1.0, cols, "one per column"),
                    // every other component keeps its published energy and area
                    _ => (1.0, 1.0, ""),
                };
                if !law.is_empty() && (e_scale != 1.0 || area_scale != 1.0) {
                    scaling.push(format!(
                        "{name}: energy x{e_scale:.3}, area x{area_scale:.3} ({law})"
                    ));
                }
                Scaled {
                    name: name.clone(),
                    kind: k.kind,
                    level: k.level,
                    energy_pj: e0 * e_scale,
                    area_mm2: k.area_mm2 * area_scale,
                    static_mw: k.static_mw,
                    peak_ops_per_ns: group_rate(k, geom, pulse_ns, arrays_at(k.level)),
                    unverified: k.unverified,
                }
            })
            .collect();
        Model {
            library: lib.name.clone(),
            geometry: geom.clone(),
            components,
            pulse_ns,
            pulse_bound,
            arrays_per_pe: h.arrays_per_pe,
            pes_per_tile: h.pes_per_tile,
            tiles_per_chip: h.tiles_per_chip,
            clock_ghz: lib.clock_ghz,
            programming_pj_per_cell: lib.programming.energy_pj_per_cell,
            programming_ns_per_row: lib.programming.ns_per_row,
            scaling,
        }
    }

    /// Instances of `level` in `tiles` tiles (chip-level components once per chip).
    pub fn instances(&self, level: Level, tiles: f64, chips: f64) -> f64 {
        match level {
            Level::Chip => chips,
            Level::Tile => tiles,
            Level::Pe => tiles * self.pes_per_tile as f64,
            Level::Array => tiles * (self.pes_per_tile * self.arrays_per_pe) as f64,
        }
    }

    /// Energy of one operation of `kind`, pJ: the sum over the components it drives.
    pub fn energy_pj(&self, kind: Kind) -> f64 {
        self.components
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| c.energy_pj)
            .sum()
    }

    /// Whether the library has a component that `kind`'s count drives.
    pub fn has(&self, kind: Kind) -> bool {
        self.components.iter().any(|c| c.kind == kind)
    }

    /// Arrays in one chip.
    pub fn arrays_per_chip(&self) -> usize {
        self.arrays_per_pe * self.pes_per_tile * self.tiles_per_chip
    }

    /// Operations (2 per multiply-accumulate) one array performs per second at peak.
    pub fn array_peak_ops_per_s(&self) -> f64 {
        let g = &self.geometry;
        let outs = (g.cols / g.cols_per_weight()).max(1) as f64;
        2.0 * g.rows as f64 * outs / (self.pulse_ns * g.pulses() as f64) * 1e9
    }

    /// The full chip at peak: every array busy.
    pub fn chip(&self) -> ChipFigures {
        let mut by_level = [(0.0, 0.0, 0.0); 4];
        for c in &self.components {
            let n = self.instances(c.level, self.tiles_per_chip as f64, 1.0);
            let i = c.level as usize;
            by_level[i].0 += c.energy_pj * c.peak_ops_per_ns * n;
            by_level[i].1 += c.static_mw * n;
            by_level[i].2 += c.area_mm2 * n;
        }
        let dynamic_mw: f64 = by_level.iter().map(|l| l.0).sum();
        let static_mw: f64 = by_level.iter().map(|l| l.1).sum();
        let area_mm2: f64 = by_level.iter().map(|l| l.2).sum();
        let peak_ops = self.array_peak_ops_per_s() * self.arrays_per_chip() as f64;
        let power_w = (dynamic_mw + static_mw) / 1e3;
        ChipFigures {
            tiles: self.tiles_per_chip,
            arrays: self.arrays_per_chip(),
            power_w,
            static_w: static_mw / 1e3,
            area_mm2,
            peak_tops: peak_ops / 1e12,
            tops_per_w: peak_ops / 1e12 / power_w,
            tops_per_mm2: peak_ops / 1e12 / area_mm2,
            weight_bytes: self.arrays_per_chip() as f64
                * (self.geometry.rows * self.geometry.cols) as f64
                / self.geometry.cols_per_weight() as f64
                * self.geometry.weight_bits as f64
                / 8.0,
        }
    }

    /// Power and area of one instance of `level` and everything under it, at peak.
    pub fn level_figures(&self, level: Level) -> (f64, f64) {
        let (t, c) = match level {
            Level::Chip => (self.tiles_per_chip as f64, 1.0),
            Level::Tile => (1.0, 0.0),
            Level::Pe => (1.0 / self.pes_per_tile as f64, 0.0),
            Level::Array => (1.0 / (self.pes_per_tile * self.arrays_per_pe) as f64, 0.0),
        };
        let mut mw = 0.0;
        let mut mm2 = 0.0;
        for s in &self.components {
            if s.level > level {
                continue;
            }
            let n = self.instances(s.level, t, c);
            mw += (s.energy_pj * s.peak_ops_per_ns + s.static_mw) * n;
            mm2 += s.area_mm2 * n;
        }
        (mw, mm2)
    }
}

/// Operations per ns one group performs at peak: its own rate where it gives one, else what
/// the arrays under one instance of its level demand.
fn group_rate(k: &Component, g: &Geometry, pulse_ns: f64, arrays: f64) -> f64 {
    match (k.rate_gsps, k.op_ns) {
        (Some(r), _) => r * k.count,
        (None, Some(t)) => k.count / t,
        (None, None) => per_array_rate(k.kind, g, pulse_ns) * arrays,
    }
}

/// A whole chip's peak figures (what the chip provides).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChipFigures {
    pub tiles: usize,
    pub arrays: usize,
    pub power_w: f64,
    pub static_w: f64,
    pub area_mm2: f64,
    pub peak_tops: f64,
    pub tops_per_w: f64,
    pub tops_per_mm2: f64,
    /// Weights the arrays hold, bytes.
    pub weight_bytes: f64,
}
