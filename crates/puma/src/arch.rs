//! Architecture description (arch/puma.toml): hierarchy, widths, latencies and
//! energies. Every default cites its source in the TOML file.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The default architecture file, embedded.
pub const DEFAULT_TOML: &str = include_str!("../../../arch/puma.toml");

#[derive(Debug, thiserror::Error)]
pub enum ArchError {
    #[error("architecture field `{field}` = {value}: {msg}")]
    Invalid {
        /// TOML path of the field, e.g. `head.latency.mvm_step_cycles`.
        field: String,
        value: String,
        msg: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConstSet {
    Head,
    Paper,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MvmuCfg {
    pub xbar_size: usize,
    pub bits_per_cell: u32,
    pub dac_bits: u32,
    pub adc_bits: u32,
    pub adcs_per_mvmu: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedCfg {
    pub bits: u32,
    pub frac_bits: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreCfg {
    pub mvmus: usize,
    pub alu_lanes: u64,
    pub data_mem_words: usize,
    pub instr_mem_entries: usize,
    pub mvm_blocking: bool,
    pub pipeline_fill_cycles: u64,
    pub branch_penalty_cycles: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TileCfg {
    pub cores: usize,
    pub shared_mem_words: usize,
    pub instr_mem_entries: usize,
    pub max_transfer_words: usize,
    pub receive_fifo_depth: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeCfg {
    pub tiles: usize,
    /// Nodes of the system (the chip-to-chip network): a program may use up to
    /// `count · tiles` tiles.
    pub count: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetCfg {
    pub latency_cycles: u64,
    pub inter_node_latency_cycles: u64,
    pub flits_per_packet: u64,
    /// Bandwidth of one directed chip-to-chip link; a packet occupies it for its bytes.
    pub inter_node_gbytes_per_s: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    pub mvm_step_cycles: f64,
    pub alu_cycles: u64,
    pub set_cycles_per_word: u64,
    pub copy_cycles: u64,
    pub scalar_cycles: u64,
    pub edram_cycles: u64,
    pub bus_cycles: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Energy {
    pub xbar_pj: f64,
    pub adc_pj: f64,
    pub dac_pj: f64,
    pub snh_pj: f64,
    pub shift_add_pj: f64,
    pub alu_simple_pj: f64,
    pub alu_mul_pj: f64,
    pub alu_div_pj: f64,
    pub transcendental_pj: f64,
    pub xbar_in_read_pj: f64,
    pub xbar_in_write_pj: f64,
    pub xbar_out_pj: f64,
    pub data_mem_pj: f64,
    pub core_imem_pj: f64,
    pub tile_imem_pj: f64,
    pub edram_pj: f64,
    pub edram_bus_pj: f64,
    pub edram_ctrl_pj: f64,
    pub counter_pj: f64,
    pub receive_buffer_pj: f64,
    pub router_flit_pj: f64,
    pub inter_node_packet_pj: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Leakage {
    pub core_pj_per_cycle: f64,
    pub tile_pj_per_cycle: f64,
    pub router_pj_per_cycle: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstTables {
    pub latency: Latency,
    pub energy: Energy,
    pub leakage: Leakage,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arch {
    pub name: String,
    pub constants: ConstSet,
    pub clock_ghz: f64,
    pub mvmu: MvmuCfg,
    pub fixed: FixedCfg,
    pub core: CoreCfg,
    pub tile: TileCfg,
    pub node: NodeCfg,
    pub network: NetCfg,
    pub head: ConstTables,
    pub paper: ConstTables,
}

impl Default for Arch {
    fn default() -> Self {
        pimkit_engine::arch::builtin().expect("embedded arch/puma.toml is valid")
    }
}

/// Largest accepted latency of one operation, in cycles (integer latencies and
/// `mvm_step_cycles`): far beyond any real design, and small enough that cycle sums
/// cannot overflow u64 under the simulator's cycle limit (at most 2^50).
pub const MAX_LATENCY_CYCLES: u64 = 1_000_000_000;
/// Largest accepted energy of one access or one cycle of leakage, in pJ (1 J).
pub const MAX_ENERGY_PJ: f64 = 1e12;

fn inv(field: impl Into<String>, value: impl ToString, msg: &str) -> ArchError {
    ArchError::Invalid {
        field: field.into(),
        value: value.to_string(),
        msg: msg.to_string(),
    }
}

impl pimkit_engine::ArchSpec for Arch {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_PATH: &'static str = "arch/puma.toml";
    fn check(&self, c: &mut pimkit_engine::Checks) {
        if let Err(ArchError::Invalid { field, value, msg }) = self.validate() {
            c.fail(field, value, msg);
        }
    }
}

impl Arch {
    /// `s` laid over the built-in `arch/puma.toml` (a file may set only what differs).
    pub fn from_toml_str(s: &str) -> Result<Arch, pimkit_engine::ArchError> {
        pimkit_engine::arch::from_str(s, "architecture TOML")
    }

    pub fn load(path: &Path) -> Result<Arch, pimkit_engine::ArchError> {
        pimkit_engine::arch::load(Some(path))
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// The selected constant set.
    pub fn tables(&self) -> &ConstTables {
        match self.constants {
            ConstSet::Head => &self.head,
            ConstSet::Paper => &self.paper,
        }
    }

    #[allow(clippy::neg_cmp_op_on_partial_ord)] // `!(x > 0.0)` also rejects NaN
    pub fn validate(&self) -> Result<(), ArchError> {
        let m = &self.mvmu;
        if !m.xbar_size.is_power_of_two() || !(16..=512).contains(&m.xbar_size) {
            return Err(inv(
                "mvmu.xbar_size",
                m.xbar_size,
                "must be a power of two in 16..=512",
            ));
        }
        if ![1, 2, 4, 8].contains(&m.bits_per_cell) {
            return Err(inv(
                "mvmu.bits_per_cell",
                m.bits_per_cell,
                "must be 1, 2, 4 or 8",
            ));
        }
        if m.dac_bits == 0 || !self.fixed.bits.is_multiple_of(m.dac_bits) {
            return Err(inv("mvmu.dac_bits", m.dac_bits, "must divide fixed.bits"));
        }
        if !(1..=16).contains(&m.adc_bits) {
            return Err(inv("mvmu.adc_bits", m.adc_bits, "must be in 1..=16"));
        }
        if self.fixed.bits != 16 {
            return Err(inv(
                "fixed.bits",
                self.fixed.bits,
                "only 16-bit words are supported",
            ));
        }
        if self.fixed.frac_bits >= self.fixed.bits {
            return Err(inv(
                "fixed.frac_bits",
                self.fixed.frac_bits,
                "must be < fixed.bits",
            ));
        }
        if !(1..=8).contains(&self.core.mvmus) {
            return Err(inv(
                "core.mvmus",
                self.core.mvmus,
                "must be in 1..=8 (mvm mask is 8 bits)",
            ));
        }
        if !(1..=1024).contains(&self.core.alu_lanes) {
            return Err(inv(
                "core.alu_lanes",
                self.core.alu_lanes,
                "must be in 1..=1024",
            ));
        }
        if self.core.data_mem_words < 256 {
            return Err(inv(
                "core.data_mem_words",
                self.core.data_mem_words,
                "must be at least 256",
            ));
        }
        if self.reg_space() > 1 << crate::encode::REG_BITS {
            return Err(inv(
                "core.data_mem_words",
                self.core.data_mem_words,
                "register space 2*mvmus*xbar_size + data_mem_words exceeds the 13-bit register field",
            ));
        }
        if self.tile.cores == 0 || self.tile.cores > 64 {
            return Err(inv("tile.cores", self.tile.cores, "must be in 1..=64"));
        }
        if self.tile.max_transfer_words == 0 || self.tile.max_transfer_words > 31 {
            return Err(inv(
                "tile.max_transfer_words",
                self.tile.max_transfer_words,
                "must be in 1..=31",
            ));
        }
        if !(1..=4096).contains(&self.tile.receive_fifo_depth) {
            return Err(inv(
                "tile.receive_fifo_depth",
                self.tile.receive_fifo_depth,
                "must be in 1..=4096",
            ));
        }
        if self.tile.shared_mem_words == 0
            || self.tile.shared_mem_words > 1 << (crate::encode::SET_IMM_BITS - 1)
        {
            return Err(inv(
                "tile.shared_mem_words",
                self.tile.shared_mem_words,
                "must be in 1..=2^21",
            ));
        }
        // Tile ids of the whole system (node.count x node.tiles) stay far below any
        // overflow; the paper's node has 138.
        if !(1..=65536).contains(&self.node.tiles) {
            return Err(inv("node.tiles", self.node.tiles, "must be in 1..=65536"));
        }
        if !(1..=1024).contains(&self.node.count) {
            return Err(inv("node.count", self.node.count, "must be in 1..=1024"));
        }
        let bw = self.network.inter_node_gbytes_per_s;
        if !(bw.is_finite() && bw > 0.0 && bw <= 1e6) {
            return Err(inv(
                "network.inter_node_gbytes_per_s",
                bw,
                "must be a finite bandwidth in (0, 1e6] GB/s",
            ));
        }
        if !(self.clock_ghz.is_finite() && (1e-6..=1e3).contains(&self.clock_ghz)) {
            return Err(inv(
                "clock_ghz",
                self.clock_ghz,
                "must be a finite frequency in 1e-6..=1000 GHz",
            ));
        }
        if !(1..=m.xbar_size as u32).contains(&m.adcs_per_mvmu) {
            return Err(inv(
                "mvmu.adcs_per_mvmu",
                m.adcs_per_mvmu,
                "must be in 1..=mvmu.xbar_size (at most one ADC per crossbar column)",
            ));
        }
        let pc_limit = 1usize << crate::encode::PC_BITS;
        for (field, v) in [
            ("core.instr_mem_entries", self.core.instr_mem_entries),
            ("tile.instr_mem_entries", self.tile.instr_mem_entries),
        ] {
            if !(1..=pc_limit).contains(&v) {
                return Err(inv(
                    field,
                    v,
                    "must be in 1..=1048576 (2^20, the pc field of the ISA)",
                ));
            }
        }
        if !(1..=1_000_000).contains(&self.network.flits_per_packet) {
            return Err(inv(
                "network.flits_per_packet",
                self.network.flits_per_packet,
                "must be in 1..=1000000 (a 16-word packet needs at least one flit)",
            ));
        }
        // Cycle counts that may be 0 (an ideal unit) but must stay bounded.
        for (field, v) in [
            ("core.pipeline_fill_cycles", self.core.pipeline_fill_cycles),
            (
                "core.branch_penalty_cycles",
                self.core.branch_penalty_cycles,
            ),
            ("network.latency_cycles", self.network.latency_cycles),
            (
                "network.inter_node_latency_cycles",
                self.network.inter_node_latency_cycles,
            ),
        ] {
            if v > MAX_LATENCY_CYCLES {
                return Err(inv(field, v, "must be in 0..=1000000000 cycles"));
            }
        }
        for (name, t) in [("head", &self.head), ("paper", &self.paper)] {
            let l = &t.latency;
            let f = l.mvm_step_cycles;
            if !(f.is_finite() && f > 0.0 && f <= MAX_LATENCY_CYCLES as f64) {
                return Err(inv(
                    format!("{name}.latency.mvm_step_cycles"),
                    f,
                    "must be a finite number of cycles in (0, 1000000000]",
                ));
            }
            for (key, v, min, why) in [
                ("alu_cycles", l.alu_cycles, 0, ""),
                ("set_cycles_per_word", l.set_cycles_per_word, 0, ""),
                ("copy_cycles", l.copy_cycles, 0, ""),
                (
                    "scalar_cycles",
                    l.scalar_cycles,
                    1,
                    " (at least 1: every branch must take time, or a loop would never reach the cycle limit)",
                ),
                (
                    "edram_cycles",
                    l.edram_cycles,
                    1,
                    " (at least 1: a shared-memory access takes time)",
                ),
                ("bus_cycles", l.bus_cycles, 0, ""),
            ] {
                if !(min..=MAX_LATENCY_CYCLES).contains(&v) {
                    return Err(inv(
                        format!("{name}.latency.{key}"),
                        v,
                        &format!("must be in {min}..=1000000000 cycles{why}"),
                    ));
                }
            }
            let e = &t.energy;
            let l = &t.leakage;
            for (key, v) in [
                ("energy.xbar_pj", e.xbar_pj),
                ("energy.adc_pj", e.adc_pj),
                ("energy.dac_pj", e.dac_pj),
                ("energy.snh_pj", e.snh_pj),
                ("energy.shift_add_pj", e.shift_add_pj),
                ("energy.alu_simple_pj", e.alu_simple_pj),
                ("energy.alu_mul_pj", e.alu_mul_pj),
                ("energy.alu_div_pj", e.alu_div_pj),
                ("energy.transcendental_pj", e.transcendental_pj),
                ("energy.xbar_in_read_pj", e.xbar_in_read_pj),
                ("energy.xbar_in_write_pj", e.xbar_in_write_pj),
                ("energy.xbar_out_pj", e.xbar_out_pj),
                ("energy.data_mem_pj", e.data_mem_pj),
                ("energy.core_imem_pj", e.core_imem_pj),
                ("energy.tile_imem_pj", e.tile_imem_pj),
                ("energy.edram_pj", e.edram_pj),
                ("energy.edram_bus_pj", e.edram_bus_pj),
                ("energy.edram_ctrl_pj", e.edram_ctrl_pj),
                ("energy.counter_pj", e.counter_pj),
                ("energy.receive_buffer_pj", e.receive_buffer_pj),
                ("energy.router_flit_pj", e.router_flit_pj),
                ("energy.inter_node_packet_pj", e.inter_node_packet_pj),
                ("leakage.core_pj_per_cycle", l.core_pj_per_cycle),
                ("leakage.tile_pj_per_cycle", l.tile_pj_per_cycle),
                ("leakage.router_pj_per_cycle", l.router_pj_per_cycle),
            ] {
                if !(v.is_finite() && (0.0..=MAX_ENERGY_PJ).contains(&v)) {
                    return Err(inv(
                        format!("{name}.{key}"),
                        v,
                        "must be a finite energy in 0..=1e12 pJ",
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn fmt(&self) -> crate::fixed::Fmt {
        crate::fixed::Fmt {
            bits: self.fixed.bits,
            frac: self.fixed.frac_bits,
        }
    }
    /// Input bit streams per MVM.
    pub fn streams(&self) -> u64 {
        (self.fixed.bits / self.mvmu.dac_bits) as u64
    }
    /// Physical crossbars per MVMU (weight bits / bits per cell).
    pub fn xbars_per_mvmu(&self) -> u64 {
        self.fixed.bits.div_ceil(self.mvmu.bits_per_cell) as u64
    }
    /// MVM latency: one step per input stream plus the 3-stage pipeline drain
    /// (ref §3.2: step x (16/dac + 3 - 1)).
    pub fn mvm_cycles(&self) -> u64 {
        (self.tables().latency.mvm_step_cycles * (self.streams() + 2) as f64).ceil() as u64
    }
    pub fn xbar_in_base(&self) -> u32 {
        0
    }
    pub fn xbar_out_base(&self) -> u32 {
        (self.core.mvmus * self.mvmu.xbar_size) as u32
    }
    pub fn data_mem_base(&self) -> u32 {
        (2 * self.core.mvmus * self.mvmu.xbar_size) as u32
    }
    /// Size of a core's register address space.
    pub fn reg_space(&self) -> usize {
        2 * self.core.mvmus * self.mvmu.xbar_size + self.core.data_mem_words
    }
    /// Bytes of one packet: `max_transfer_words` 16-bit words.
    pub fn packet_bytes(&self) -> u64 {
        self.tile.max_transfer_words as u64 * self.fixed.bits as u64 / 8
    }
    /// Cycles a packet occupies a chip-to-chip link (at least 1).
    pub fn link_packet_cycles(&self) -> u64 {
        let bytes_per_cycle = self.network.inter_node_gbytes_per_s / self.clock_ghz;
        ((self.packet_bytes() as f64 / bytes_per_cycle).ceil() as u64).max(1)
    }
    /// Tiles the whole system offers (nodes × tiles per node), compute tiles and the
    /// input and output tiles included.
    pub fn max_tiles(&self) -> usize {
        self.node.count * self.node.tiles
    }
    pub fn mvmus_per_tile(&self) -> usize {
        self.core.mvmus * self.tile.cores
    }
    pub fn ns_per_cycle(&self) -> f64 {
        1.0 / self.clock_ghz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_arch_is_the_paper_design_point() {
        let a = Arch::default();
        assert_eq!(a.mvmu.xbar_size, 128);
        assert_eq!(a.core.mvmus, 2);
        assert_eq!(a.tile.cores, 8);
        assert_eq!(a.node.tiles, 138);
        assert_eq!(a.mvm_cycles(), 1800);
        assert_eq!(a.xbars_per_mvmu(), 8);
        assert_eq!(a.data_mem_base(), 512);
        assert_eq!(a.head.energy.xbar_pj, 170.0);
        assert_eq!(a.paper.energy.xbar_pj, 274.0);
    }

    #[test]
    fn validation_names_the_field() {
        let s = DEFAULT_TOML.replace("mvmus = 2 ", "mvmus = 0 ");
        let e = Arch::from_toml_str(&s).unwrap_err().to_string();
        assert!(e.contains("core.mvmus"), "{e}");
        let s = DEFAULT_TOML.replace("xbar_size = 128", "xbar_size = 100");
        let e = Arch::from_toml_str(&s).unwrap_err().to_string();
        assert!(e.contains("mvmu.xbar_size"), "{e}");
        let s = DEFAULT_TOML.replace("clock_ghz = 1.0", "clock_ghz = 1.0\nbogus = 3");
        assert!(Arch::from_toml_str(&s).is_err());
    }
}
