//! The component library: what each part of a crossbar accelerator costs, read from a TOML
//! file under `arch/components/` through the one architecture loader. A file describes one
//! published design point (its `[design]`: array geometry and precisions), the hierarchy
//! array → PE → tile → chip, and per component its group's active power, static power, area
//! and what one operation of it is. Every value cites its source (`source`); values no
//! primary source gives are marked `unverified = true`.

use pimkit_engine::Checks;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What drives a component's dynamic energy: the activity count the cost engine computes
/// for each layer (docs/cost.md, "Counts").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// One read pulse of one array, scaled by the fraction of its rows driven.
    Array,
    /// One DAC pulse (one driven row, one input slice).
    Dac,
    /// One ADC conversion (one column, one input slice).
    Adc,
    /// One sample-and-hold (one column, one input slice).
    SampleHold,
    /// One shift-and-add of a conversion's result.
    ShiftAdd,
    /// One byte written into a PE's input register.
    InputRegister,
    /// One byte read from a PE's output register.
    OutputRegister,
    /// One byte read from or written to the tile buffer.
    Buffer,
    /// One byte between the tile buffer and a PE.
    Bus,
    /// One byte carried one hop by the on-chip network.
    Router,
    /// One byte of a layer's output on a shared global bus (no hops: NeuroSim's X-Y bus).
    GlobalBus,
    /// One element through an activation unit (ReLU, sigmoid, ...).
    Activation,
    /// One element through a pooling unit.
    Pooling,
    /// One element of any other digital vector operation (add, multiply, normalization).
    Vector,
    /// One byte in or out of the chip.
    Offchip,
    /// No activity count: static power and area only (control, clocking).
    Control,
}

impl Kind {
    pub const ALL: [Kind; 16] = [
        Kind::Array,
        Kind::Dac,
        Kind::Adc,
        Kind::SampleHold,
        Kind::ShiftAdd,
        Kind::InputRegister,
        Kind::OutputRegister,
        Kind::Buffer,
        Kind::Bus,
        Kind::Router,
        Kind::GlobalBus,
        Kind::Activation,
        Kind::Pooling,
        Kind::Vector,
        Kind::Offchip,
        Kind::Control,
    ];

    /// The name used in TOML, JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Array => "array",
            Kind::Dac => "dac",
            Kind::Adc => "adc",
            Kind::SampleHold => "sample_hold",
            Kind::ShiftAdd => "shift_add",
            Kind::InputRegister => "input_register",
            Kind::OutputRegister => "output_register",
            Kind::Buffer => "buffer",
            Kind::Bus => "bus",
            Kind::Router => "router",
            Kind::GlobalBus => "global_bus",
            Kind::Activation => "activation",
            Kind::Pooling => "pooling",
            Kind::Vector => "vector",
            Kind::Offchip => "offchip",
            Kind::Control => "control",
        }
    }

    /// Whether one operation moves bytes (its energy is per byte).
    pub fn per_byte(self) -> bool {
        matches!(
            self,
            Kind::InputRegister
                | Kind::OutputRegister
                | Kind::Buffer
                | Kind::Bus
                | Kind::Router
                | Kind::GlobalBus
                | Kind::Offchip
        )
    }

    /// Whether the count depends on the input values (the analog read-out path).
    pub fn analog(self) -> bool {
        matches!(
            self,
            Kind::Array | Kind::Dac | Kind::Adc | Kind::SampleHold | Kind::ShiftAdd
        )
    }
}

/// Where a component's group sits in the hierarchy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Per crossbar array.
    Array,
    /// Per processing element (ISAAC's IMA, PUMA's core, NeuroSim's PE).
    Pe,
    /// Per tile.
    Tile,
    /// Once per chip.
    Chip,
}

/// One component group (a row of a published table): `count` units at each instance of
/// `level`; power and area are the group's totals, as the tables give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Component {
    pub kind: Kind,
    pub level: Level,
    /// Units in the group (may be fractional: a router shared by 4 tiles is 0.25 per tile).
    pub count: f64,
    /// Active power of the whole group, mW (0 where only `energy_pj` is known).
    #[serde(default)]
    pub power_mw: f64,
    /// Static (leakage) power of the whole group, mW; 0 where the source gives only active power.
    #[serde(default)]
    pub static_mw: f64,
    /// Area of the whole group, mm².
    #[serde(default)]
    pub area_mm2: f64,
    /// Energy of one operation of one unit, pJ: given directly, or derived as unit power
    /// times the operation's time (`op_ns`, `1 / rate_gsps`, the array read, or one clock).
    pub energy_pj: Option<f64>,
    /// Time of one operation of one unit, ns.
    pub op_ns: Option<f64>,
    /// Operations per ns of one unit (an ADC's sample rate in GS/s); with `energy_pj` it
    /// only times the operation (an ADC shared by columns sets the read pulse).
    pub rate_gsps: Option<f64>,
    /// Bytes one operation moves (per-byte kinds), default 1.
    pub bytes_per_op: Option<f64>,
    /// Resolution (ADC and DAC), bits.
    pub bits: Option<u32>,
    /// Where every value of this row comes from.
    pub source: String,
    /// True when no primary source gives the values (estimates, derived guesses).
    #[serde(default)]
    pub unverified: bool,
}

/// The design point the library's values were published for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesignPoint {
    pub rows: usize,
    pub cols: usize,
    pub cell_bits: u32,
    pub weight_bits: u32,
    pub input_bits: u32,
    pub dac_bits: u32,
    pub adc_bits: u32,
    /// Positive and negative weights on separate columns.
    pub differential: bool,
    /// One array read (one input slice), ns.
    pub read_ns: f64,
    pub source: String,
}

/// How many of each level: arrays per PE, PEs per tile, tiles per chip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hierarchy {
    pub arrays_per_pe: usize,
    pub pes_per_tile: usize,
    pub tiles_per_chip: usize,
    pub source: String,
}

/// Writing weights into the arrays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Programming {
    /// Energy to program one cell (set/reset with verify), pJ.
    pub energy_pj_per_cell: f64,
    /// Time to program one row of one array (all its cells in parallel), ns; arrays of a
    /// chip are programmed in parallel.
    pub ns_per_row: f64,
    pub source: String,
    #[serde(default)]
    pub unverified: bool,
}

/// A component library: one published design's components and hierarchy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Components {
    pub name: String,
    /// What the values describe and where they come from, in one line.
    pub description: String,
    pub technology_nm: u32,
    /// Digital clock, GHz (one operation of a per-byte component without `op_ns` takes one cycle).
    pub clock_ghz: f64,
    /// A preset this file's keys are laid over (only in user files; see docs/cost.md).
    #[serde(default, skip_serializing)]
    pub base: Option<String>,
    pub design: DesignPoint,
    pub hierarchy: Hierarchy,
    pub programming: Programming,
    /// Skip the ADC conversions of a read whose driven rows are all zero.
    pub zero_skip: bool,
    /// Which convolution positions the analog read-out is counted for (`all`, default:
    /// every output position the network computes; `valid`: only where the kernel lies
    /// inside the unpadded input, NeuroSim's count).
    #[serde(default)]
    pub positions: Positions,
    pub components: BTreeMap<String, Component>,
}

/// The convolution positions whose reads are counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Positions {
    /// Every output position (what the network computes).
    #[default]
    All,
    /// Only positions whose window lies inside the unpadded input (NeuroSim V1.4's
    /// numInVector = (H - K + 1)/s x (W - K + 1)/s, Chip.cpp@9e6742c:657).
    Valid,
}

impl Component {
    /// Energy of one operation of one unit, pJ, at the library's design point.
    pub fn unit_energy_pj(&self, lib: &Components) -> f64 {
        if let Some(e) = self.energy_pj {
            return e;
        }
        let unit_mw = if self.count > 0.0 {
            self.power_mw / self.count
        } else {
            0.0
        };
        let t = self
            .op_ns
            .or(self.rate_gsps.map(|r| 1.0 / r))
            .unwrap_or(match self.kind {
                Kind::Array | Kind::Dac | Kind::SampleHold => lib.design.read_ns,
                _ => 1.0 / lib.clock_ghz,
            });
        // mW x ns = pJ
        let per_op = unit_mw * t;
        if self.kind.per_byte() {
            per_op / self.bytes_per_op.unwrap_or(1.0)
        } else {
            per_op
        }
    }
}

impl pimkit_engine::ArchSpec for Components {
    const DEFAULT_TOML: &'static str = crate::presets::ISAAC;
    const DEFAULT_PATH: &'static str = "arch/components/isaac.toml";

    fn check(&self, c: &mut Checks) {
        c.int_in("technology_nm", self.technology_nm as u64, 1, 1000);
        c.positive("clock_ghz", self.clock_ghz, 100.0);
        let d = &self.design;
        c.int_in("design.rows", d.rows as u64, 1, 65536);
        c.int_in("design.cols", d.cols as u64, 1, 65536);
        c.int_in("design.cell_bits", d.cell_bits as u64, 1, 16);
        c.int_in("design.weight_bits", d.weight_bits as u64, 1, 32);
        c.int_in("design.input_bits", d.input_bits as u64, 1, 32);
        c.int_in("design.dac_bits", d.dac_bits as u64, 1, 16);
        c.int_in("design.adc_bits", d.adc_bits as u64, 1, 16);
        c.positive("design.read_ns", d.read_ns, 1e9);
        let h = &self.hierarchy;
        c.int_in(
            "hierarchy.arrays_per_pe",
            h.arrays_per_pe as u64,
            1,
            1 << 20,
        );
        c.int_in("hierarchy.pes_per_tile", h.pes_per_tile as u64, 1, 1 << 20);
        c.int_in(
            "hierarchy.tiles_per_chip",
            h.tiles_per_chip as u64,
            1,
            1 << 20,
        );
        let p = &self.programming;
        c.num_in(
            "programming.energy_pj_per_cell",
            p.energy_pj_per_cell,
            0.0,
            1e9,
        );
        c.num_in("programming.ns_per_row", p.ns_per_row, 0.0, 1e12);
        if self.components.is_empty() {
            c.fail_field(
                "components",
                "no component listed; add at least the arrays and ADCs",
            );
        }
        for (name, k) in &self.components {
            let f = |x: &str| format!("components.{name}.{x}");
            c.num_in(&f("count"), k.count, 0.0, 1e9);
            c.num_in(&f("power_mw"), k.power_mw, 0.0, 1e9);
            c.num_in(&f("static_mw"), k.static_mw, 0.0, 1e9);
            c.num_in(&f("area_mm2"), k.area_mm2, 0.0, 1e6);
            for (field, v) in [
                ("energy_pj", k.energy_pj),
                ("op_ns", k.op_ns),
                ("rate_gsps", k.rate_gsps),
                ("bytes_per_op", k.bytes_per_op),
            ] {
                if let Some(v) = v {
                    if field == "energy_pj" {
                        c.num_in(&f(field), v, 0.0, 1e12);
                    } else {
                        c.positive(&f(field), v, 1e12);
                    }
                }
            }
            if k.energy_pj.is_some() && k.op_ns.is_some() {
                c.fail_field(
                    f("energy_pj"),
                    "give either energy_pj or the operation's time op_ns, not both",
                );
            }
            if let Some(b) = k.bits {
                c.int_in(&f("bits"), b as u64, 1, 16);
            }
            if matches!(k.kind, Kind::Adc | Kind::Dac) && k.bits.is_none() {
                c.fail_field(f("bits"), "an ADC or DAC needs its resolution in bits");
            }
            if k.source.trim().is_empty() {
                c.fail_field(
                    f("source"),
                    "every value must cite its source; say where it comes from",
                );
            }
        }
        for need in [Kind::Array, Kind::Adc] {
            if !self.components.values().any(|k| k.kind == need) {
                c.fail_field(
                    "components",
                    format!(
                        "no component of kind '{}'; every crossbar design has one",
                        need.name()
                    ),
                );
            }
        }
    }
}

impl Components {
    /// Instances of `level` in one chip.
    pub fn per_chip(&self, level: Level) -> f64 {
        let h = &self.hierarchy;
        let tiles = h.tiles_per_chip as f64;
        let pes = tiles * h.pes_per_tile as f64;
        match level {
            Level::Chip => 1.0,
            Level::Tile => tiles,
            Level::Pe => pes,
            Level::Array => pes * h.arrays_per_pe as f64,
        }
    }

    /// The components of one kind.
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = (&String, &Component)> {
        self.components.iter().filter(move |(_, k)| k.kind == kind)
    }
}
