//! The PIM architecture file (`arch/pim-general.toml`): core counts, clock, caches, DRAM
//! and bank parameters, synchronization cost and the switch constant T_sw. The defaults
//! (and their sources) live in the TOML file, which is compiled in.

use crate::error::{OffloadError, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The default architecture file, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../../arch/pim-general.toml");

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PimArch {
    pub name: String,
    pub cores: Vec<u32>,
    pub f_ghz: f64,
    pub ipc: f64,
    pub i_min: f64,
    pub l1d_bytes: u64,
    pub line_bytes: u64,
    pub dram_latency_ns: f64,
    pub mlp: f64,
    pub bank_gbs: f64,
    pub sync_base_ns: f64,
    pub sync_per_core_ns: f64,
    pub t_sw_ns: f64,
    /// In-order latencies in cycles (window 1: each instruction's latency is exposed).
    pub lat_int: f64,
    pub lat_mul: f64,
    pub lat_div: f64,
    pub lat_fadd: f64,
    pub lat_fmul: f64,
    pub lat_fdiv: f64,
    pub lat_load: f64,
    pub lat_store: f64,
    /// Vector register width of the code the PIM core executes (bits).
    pub simd_bits: u32,
}

impl Default for PimArch {
    fn default() -> Self {
        pimkit_engine::arch::builtin().expect("the built-in arch/pim-general.toml is valid")
    }
}

impl pimkit_engine::ArchSpec for PimArch {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_PATH: &'static str = "arch/pim-general.toml";

    fn check(&self, c: &mut pimkit_engine::Checks) {
        if self.cores.is_empty() || self.cores.iter().any(|&n| n == 0 || n > 1 << 20) {
            c.fail(
                "cores",
                format!("{:?}", self.cores),
                "list core counts in 1..=1048576",
            );
        }
        for (k, v) in [
            ("f_ghz", self.f_ghz),
            ("ipc", self.ipc),
            ("i_min", self.i_min),
            ("mlp", self.mlp),
            ("bank_gbs", self.bank_gbs),
            ("lat_int", self.lat_int),
            ("lat_mul", self.lat_mul),
            ("lat_div", self.lat_div),
            ("lat_fadd", self.lat_fadd),
            ("lat_fmul", self.lat_fmul),
            ("lat_fdiv", self.lat_fdiv),
            ("lat_load", self.lat_load),
            ("lat_store", self.lat_store),
        ] {
            // 1e6 bounds every rate and latency far above real hardware (GHz, IPC, GB/s,
            // cycles) and keeps the time model's products finite.
            c.positive(k, v, 1e6);
        }
        for (k, v) in [
            ("dram_latency_ns", self.dram_latency_ns),
            ("sync_base_ns", self.sync_base_ns),
            ("sync_per_core_ns", self.sync_per_core_ns),
            ("t_sw_ns", self.t_sw_ns),
        ] {
            c.num_in(k, v, 0.0, 1e9);
        }
        // 32 is scalar fp32 code.
        c.int_in("simd_bits", self.simd_bits.into(), 8, 4096);
        c.int_in("line_bytes", self.line_bytes, 1, 4096);
        c.int_in("l1d_bytes", self.l1d_bytes, self.line_bytes.max(1), 1 << 30);
    }
}

impl PimArch {
    /// `text` laid over the built-in file (errors name `path`).
    pub fn from_toml(text: &str, path: &Path) -> Result<PimArch> {
        pimkit_engine::arch::from_str(text, &path.display().to_string()).map_err(arch_err)
    }
    pub fn load(path: &Path) -> Result<PimArch> {
        pimkit_engine::arch::load(Some(path)).map_err(arch_err)
    }
}

fn arch_err(e: pimkit_engine::ArchError) -> OffloadError {
    OffloadError::Arch(e)
}
