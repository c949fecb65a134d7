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
        PimArch::from_toml(DEFAULT_TOML, Path::new("arch/pim-general.toml"))
            .expect("the built-in arch/pim-general.toml parses")
    }
}

impl PimArch {
    pub fn from_toml(text: &str, path: &Path) -> Result<PimArch> {
        let a: PimArch = toml::from_str(text).map_err(|e| OffloadError::Arch {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        a.validate(path)?;
        Ok(a)
    }
    pub fn load(path: &Path) -> Result<PimArch> {
        let text = std::fs::read_to_string(path).map_err(|e| OffloadError::Arch {
            path: path.to_path_buf(),
            msg: e.to_string(),
        })?;
        Self::from_toml(&text, path)
    }
    fn validate(&self, path: &Path) -> Result<()> {
        let bad = |msg: &str| {
            Err(OffloadError::Arch {
                path: path.to_path_buf(),
                msg: msg.to_string(),
            })
        };
        if self.cores.is_empty() || self.cores.iter().any(|&c| c == 0 || c > 1 << 20) {
            return bad("`cores` must list core counts in 1..=1048576");
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
            if !(v > 0.0 && v <= 1e6) {
                return bad(&format!("`{k}` must be a number in (0, 1e6], got {v}"));
            }
        }
        for (k, v) in [
            ("dram_latency_ns", self.dram_latency_ns),
            ("sync_base_ns", self.sync_base_ns),
            ("sync_per_core_ns", self.sync_per_core_ns),
            ("t_sw_ns", self.t_sw_ns),
        ] {
            if !(0.0..=1e9).contains(&v) {
                return bad(&format!("`{k}` must be a number in [0, 1e9] ns, got {v}"));
            }
        }
        if self.simd_bits < 8 {
            return bad("`simd_bits` must be at least 8 (use 32 for scalar fp32 code)");
        }
        if self.simd_bits > 4096 {
            return bad("`simd_bits` must be at most 4096");
        }
        if self.line_bytes == 0 || self.l1d_bytes < self.line_bytes {
            return bad("`line_bytes` must be positive and `l1d_bytes` at least one line");
        }
        if self.line_bytes > 4096 || self.l1d_bytes > 1 << 30 {
            return bad("`line_bytes` must be at most 4096 and `l1d_bytes` at most 1 GiB");
        }
        Ok(())
    }
}
