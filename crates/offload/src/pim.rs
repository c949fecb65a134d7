//! PIM-side time T_pim(N) of one nest on N general-purpose in-order single-issue cores
//! (torch-pim.txt Table 2; parameters in `arch/pim-general.toml`):
//!
//!   chunk    = ceil(N_iter / N) parallel iterations per core (load imbalance included)
//!   compute  = chunk · (N_total / N_iter) · cycles_per_iter / f
//!              (cycles_per_iter: every instruction's in-order latency, per vector lane
//!              when the innermost loop vectorizes; `pimcost`)
//!   stall    = lines_core · dram_latency / mlp      (blocking in-order core)
//!   bank     = lines_core · L / bank_bw             (the core's bank cannot go faster)
//!   T_core   = max(compute + stall, bank)
//!   T_sync   = sync_base + sync_per_core · N        (launch, barrier, result aggregation)
//!   T_pim(N) = trip · (T_core + T_sync)
//!
//! where lines_core = off-L1 lines of the nest at the PIM L1 size / active cores.

use crate::arch::PimArch;
use serde::Serialize;

/// What the PIM model needs about a nest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PimFacts {
    pub n_iter: u64,
    pub n_total: u64,
    pub trip: u64,
    /// Scalar instruction estimate (pimkit-loops; reported, not used by the time model).
    pub instr_per_iter: f64,
    /// In-order cycles per innermost iteration with every latency exposed (`pimcost`).
    pub cycles_per_iter: f64,
    /// Off-L1 lines of the whole nest at the PIM L1 size.
    pub pim_lines: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PimTime {
    pub compute_ns: f64,
    pub stall_ns: f64,
    pub bank_ns: f64,
    pub sync_ns: f64,
    pub total_ns: f64,
}

pub fn t_pim(f: &PimFacts, cores: u32, a: &PimArch) -> PimTime {
    let n = cores.max(1) as u64;
    let n_iter = f.n_iter.max(1);
    let active = n.min(n_iter) as f64;
    let chunk = n_iter.div_ceil(n) as f64;
    let inner = f.n_total as f64 / n_iter as f64;
    // Window-1 in-order core: the latency chain (issue width and vector lanes included).
    let compute_ns = chunk * inner * f.cycles_per_iter / a.f_ghz;
    let lines_core = f.pim_lines / active;
    let stall_ns = lines_core * a.dram_latency_ns / a.mlp;
    let bank_ns = lines_core * a.line_bytes as f64 / a.bank_gbs;
    let sync_ns = a.sync_base_ns + a.sync_per_core_ns * n as f64;
    let trip = f.trip.max(1) as f64;
    PimTime {
        compute_ns,
        stall_ns,
        bank_ns,
        sync_ns,
        total_ns: trip * ((compute_ns + stall_ns).max(bank_ns) + sync_ns),
    }
}
