//! Torch-PIM's two-stage offload rule, equations (1)-(7) of torch-pim.txt §4.4 (used by
//! the offload engine per loop nest and by the LLM engine's `torch-pim` policy per op class):
//!
//! - (1) offload(r) = g_work(r) ∧ g_mem(r)
//! - (2) g_work(r) = C1 ∧ C2
//! - (3) C1: T_cpu(r) ≥ T_ctx + T_pim^min(r),  T_pim^min(r) = N_total(r)·I_min / (N_core·f_pim)
//! - (4) C2: N_iter(r) ≥ N_core
//! - (5) g_mem(r) = C3 ∨ C4
//! - (6) C3: BW_read(r) = n_rd(r)·L / T_cpu(r) > θ
//! - (7) C4: StoreBound(r) = c_store(r) / c_backend(r) > σ

use serde::Serialize;

/// θ / B_cpu: the paper's 2.0 GB/s on its 16.754 GB/s host (torch-pim.txt §4.4).
pub const THETA_RATIO: f64 = 0.12;
/// σ: the most conservative TMA store-bound threshold (torch-pim.txt §4.4).
pub const SIGMA: f64 = 0.4;

/// What the rule needs about one region (a nest, or an operator's nests together).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegionFacts {
    pub t_cpu_ns: f64,
    pub n_total: u64,
    pub n_iter: u64,
    /// Off-core read bytes (n_rd · L).
    pub read_bytes: f64,
    pub store_bound: f64,
}

/// The rule's constants.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RuleParams {
    pub t_ctx_ns: f64,
    pub i_min: f64,
    pub f_pim_ghz: f64,
    pub theta_gbs: f64,
    pub sigma: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Decision {
    pub c1: bool,
    pub c2: bool,
    pub c3: bool,
    pub c4: bool,
    pub offload: bool,
    /// Right-hand side of C1 (ns).
    pub c1_threshold_ns: f64,
    pub bw_read_gbs: f64,
    /// Which stage rejected it: 1 (work), 2 (memory) or 0 (offloaded).
    pub rejected_at: u8,
}

/// Equation (6): bytes per ns is GB/s.
pub fn bw_read_gbs(read_bytes: f64, t_cpu_ns: f64) -> f64 {
    if t_cpu_ns > 0.0 {
        read_bytes / t_cpu_ns
    } else {
        0.0
    }
}

/// Apply equations (1)-(7) for `cores` PIM cores.
pub fn decide(r: &RegionFacts, cores: u32, k: &RuleParams) -> Decision {
    let c1_threshold_ns = k.t_ctx_ns + r.n_total as f64 * k.i_min / (cores as f64 * k.f_pim_ghz);
    let c1 = r.t_cpu_ns >= c1_threshold_ns;
    let c2 = r.n_iter >= cores as u64;
    let bw = bw_read_gbs(r.read_bytes, r.t_cpu_ns);
    let c3 = bw > k.theta_gbs;
    let c4 = r.store_bound > k.sigma;
    let work = c1 && c2;
    let mem = c3 || c4;
    Decision {
        c1,
        c2,
        c3,
        c4,
        offload: work && mem,
        c1_threshold_ns,
        bw_read_gbs: bw,
        rejected_at: if !work {
            1
        } else if !mem {
            2
        } else {
            0
        },
    }
}
