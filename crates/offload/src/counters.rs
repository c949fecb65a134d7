//! The counter run (torch-pim.txt §4.3). Two backends, and every figure records which
//! one produced it:
//!
//! - `perf` (cargo feature `perf`): one event group read at each nest's entry and exit,
//!   no multiplexing: Intel Table 1 events or their AMD Zen equivalents (torch-pim.md §3.3),
//!   chosen by CPU vendor and probed at start.
//! - `model`: off-core read bytes from the footprint/cache model of the nest's affine
//!   accesses against the host's LLC (`cache.rs`); StoreBound = time the nest's off-core
//!   store traffic needs at the host's measured (cold, size-dependent) store bandwidth
//!   divided by the nest's measured time. Used where the PMU is unavailable (KVM guests).

use crate::cache::program_traffic;
use crate::error::Result;
use crate::host::HostCalib;
use pimkit_loops::Program;
use serde::Serialize;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterSource {
    Perf,
    #[default]
    Model,
    /// Given by the caller (tests, fixtures).
    Fixed,
}

impl CounterSource {
    pub fn name(self) -> &'static str {
        match self {
            CounterSource::Perf => "perf",
            CounterSource::Model => "model",
            CounterSource::Fixed => "fixed",
        }
    }
}

/// `--counters auto|perf|model`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterMode {
    Auto,
    Perf,
    Model,
}

impl std::str::FromStr for CounterMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(CounterMode::Auto),
            "perf" => Ok(CounterMode::Perf),
            "model" => Ok(CounterMode::Model),
            _ => Err(format!("'{s}': use auto, perf or model")),
        }
    }
}

/// What the counter run yields per nest.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    /// n_rd · L: bytes read past the last-level cache.
    pub offcore_read_bytes: f64,
    /// Off-core written bytes (model backend; 0 from perf).
    pub offcore_write_bytes: f64,
    pub store_bound: f64,
    pub source: CounterSource,
}

/// Model backend for a whole program given the measured per-nest times.
pub fn model_counters(p: &Program, host: &HostCalib, t_cpu_ns: &[f64]) -> Vec<Counters> {
    program_traffic(p, host.llc_bytes, host.line_bytes)
        .into_iter()
        .enumerate()
        .map(|(i, (rd, wr))| {
            let t = t_cpu_ns.get(i).copied().unwrap_or(0.0);
            let t_store = if wr > 0.0 {
                wr / host.store_gbs_for(wr)
            } else {
                0.0
            };
            Counters {
                offcore_read_bytes: rd,
                offcore_write_bytes: wr,
                store_bound: if t > 0.0 { (t_store / t).min(1.0) } else { 0.0 },
                source: CounterSource::Model,
            }
        })
        .collect()
}

/// Which backend `mode` resolves to on this machine (probing the PMU for auto/perf).
pub fn resolve(mode: CounterMode, vendor: &str) -> Result<CounterSource> {
    match mode {
        CounterMode::Model => Ok(CounterSource::Model),
        CounterMode::Perf => crate::perf::probe(vendor).map(|_| CounterSource::Perf),
        CounterMode::Auto => Ok(match crate::perf::probe(vendor) {
            Ok(()) => CounterSource::Perf,
            Err(_) => CounterSource::Model,
        }),
    }
}
