//! Placement and hybrid time. For each PIM core count: the rule's decisions at loop,
//! operator and basic-block granularity, the hybrid time of equation (9),
//!   T_hybrid(N) = T_host + T_pim(N) + T_copy + N_region · T_sw,
//! with T_copy by equation (8) (the bound) and by residency tracking (exact), and the
//! oracle: the placement minimizing T_hybrid under the model (dynamic programming over
//! the nest sequence), against which the rule's captured speedup and per-nest agreement
//! are reported.

use crate::arch::PimArch;
use crate::host::{HostCalib, Thresholds};
use crate::movement::{SegmentAcc, movement_bound, movement_exact, n_region, segments};
use crate::pim::{PimFacts, t_pim};
use crate::rule::{Decision, RegionFacts, RuleParams, decide};
use crate::workload::{NestData, Workload};
use serde::Serialize;

/// Decision granularity (torch-pim.txt §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Granularity {
    /// Each loop nest alone (Torch-PIM).
    Loop,
    /// All nests of one operator (graph node) together.
    Op,
    /// Each innermost body block alone: the per-nest verdicts, but loop-control blocks
    /// between bodies stay on the host, so no two offloaded bodies share a segment.
    Bb,
}

impl Granularity {
    pub fn name(self) -> &'static str {
        match self {
            Granularity::Loop => "loop",
            Granularity::Op => "op",
            Granularity::Bb => "bb",
        }
    }
    pub const ALL: [Granularity; 3] = [Granularity::Loop, Granularity::Op, Granularity::Bb];
}

impl std::str::FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Granularity::ALL
            .into_iter()
            .find(|g| g.name() == s)
            .ok_or_else(|| format!("'{s}': use loop, op or bb"))
    }
}

/// The model's constants gathered once.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    pub rule: RuleParams,
    /// B_rd = B_wb: the host memory system's bandwidth (torch-pim.txt §5.1), GB/s
    /// (`HostCalib::b_mem_gbs`, not the one-thread B_cpu).
    pub b_move_gbs: f64,
    pub t_sw_ns: f64,
}

impl Params {
    pub fn new(host: &HostCalib, arch: &PimArch, th: Thresholds) -> Params {
        Params {
            rule: RuleParams {
                t_ctx_ns: host.t_ctx_ns,
                i_min: arch.i_min,
                f_pim_ghz: arch.f_ghz,
                theta_gbs: th.theta_gbs,
                sigma: th.sigma,
            },
            b_move_gbs: host.b_move_gbs(),
            t_sw_ns: arch.t_sw_ns,
        }
    }
}

pub fn nest_facts(n: &NestData) -> RegionFacts {
    RegionFacts {
        t_cpu_ns: n.t_cpu_ns,
        n_total: n.n_total,
        n_iter: n.n_iter,
        read_bytes: n.counters.offcore_read_bytes,
        store_bound: n.counters.store_bound,
    }
}

pub fn pim_facts(n: &NestData) -> PimFacts {
    PimFacts {
        n_iter: n.n_iter,
        n_total: n.n_total,
        trip: n.trip,
        instr_per_iter: n.instr_per_iter,
        cycles_per_iter: n.cycles_per_iter,
        pim_lines: n.pim_lines,
    }
}

/// Operator groups: runs of consecutive nests of the same framework operator (the graph
/// node, or the PyTorch call several nodes were exported from: `Nest::source`).
pub fn op_groups(w: &Workload) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = vec![];
    for (i, n) in w.nests.iter().enumerate() {
        match v.last_mut() {
            Some(g) if w.nests[g.0].source == n.source => g.1 = i + 1,
            _ => v.push((i, i + 1)),
        }
    }
    v
}

/// One operator judged as a unit: times, work and traffic add up, N_iter is the largest
/// parallel loop, StoreBound is time-weighted (total store time over total time).
pub fn op_facts(w: &Workload, s: usize, e: usize) -> RegionFacts {
    let ns = &w.nests[s..e];
    let t: f64 = ns.iter().map(|n| n.t_cpu_ns).sum();
    RegionFacts {
        t_cpu_ns: t,
        n_total: ns.iter().map(|n| n.n_total).sum(),
        n_iter: ns.iter().map(|n| n.n_iter).max().unwrap_or(0),
        read_bytes: ns.iter().map(|n| n.counters.offcore_read_bytes).sum(),
        store_bound: if t > 0.0 {
            ns.iter()
                .map(|n| n.counters.store_bound * n.t_cpu_ns)
                .sum::<f64>()
                / t
        } else {
            0.0
        },
    }
}

/// The rule's placement at a granularity.
pub fn place(w: &Workload, g: Granularity, cores: u32, k: &RuleParams) -> Vec<bool> {
    match g {
        Granularity::Loop | Granularity::Bb => w
            .nests
            .iter()
            .map(|n| decide(&nest_facts(n), cores, k).offload)
            .collect(),
        Granularity::Op => {
            let mut v = vec![false; w.nests.len()];
            for (s, e) in op_groups(w) {
                let d = decide(&op_facts(w, s, e), cores, k).offload;
                v[s..e].iter_mut().for_each(|x| *x = d);
            }
            v
        }
    }
}

/// The terms of equation (9) for one placement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Eval {
    pub t_host: f64,
    pub t_pim: f64,
    /// Equation (8), the upper bound.
    pub t_copy: f64,
    /// Residency-tracking movement (beyond the paper).
    pub t_copy_exact: f64,
    pub n_region: usize,
    pub t_hybrid: f64,
    pub t_hybrid_exact: f64,
    pub fetch_bytes: f64,
    pub flush_bytes: f64,
}

/// Evaluate a placement; `merge` = consecutive offloaded nests share a segment.
pub fn evaluate(
    w: &Workload,
    place: &[bool],
    cores: u32,
    arch: &PimArch,
    p: &Params,
    merge: bool,
) -> Eval {
    let mut e = Eval::default();
    for (n, &on) in w.nests.iter().zip(place) {
        if on {
            e.t_pim += t_pim(&pim_facts(n), cores, arch).total_ns;
        } else {
            e.t_host += n.t_cpu_ns;
        }
    }
    let segs = if merge {
        segments(place)
    } else {
        (0..place.len())
            .filter(|&i| place[i])
            .map(|i| (i, i + 1))
            .collect()
    };
    let mv = movement_bound(w, &segs);
    e.fetch_bytes = mv.fetch_bytes;
    e.flush_bytes = mv.flush_bytes;
    e.t_copy = mv.t_copy_ns(p.b_move_gbs, p.b_move_gbs);
    e.t_copy_exact = movement_exact(w, place).t_copy_ns(p.b_move_gbs, p.b_move_gbs);
    e.n_region = n_region(&segs);
    let sw = e.n_region as f64 * p.t_sw_ns;
    e.t_hybrid = e.t_host + e.t_pim + e.t_copy + sw;
    e.t_hybrid_exact = e.t_host + e.t_pim + e.t_copy_exact + sw;
    e
}

/// The best placement under the model (equation 9 with the bound of equation 8): DP over
/// the nest sequence, best[i] = cheapest way to run nests 0..i ending on the host, where
/// the last step is either nest i-1 on the host or a PIM segment [s, i).
pub fn oracle(w: &Workload, cores: u32, arch: &PimArch, p: &Params) -> Vec<bool> {
    let n = w.nests.len();
    let tp: Vec<f64> = w
        .nests
        .iter()
        .map(|x| t_pim(&pim_facts(x), cores, arch).total_ns)
        .collect();
    let mut best = vec![f64::INFINITY; n + 1];
    // prev[i] = (start of the last step, was it a PIM segment)
    let mut prev = vec![(0usize, false); n + 1];
    best[0] = 0.0;
    for s in 0..n {
        let b = best[s];
        if b + w.nests[s].t_cpu_ns < best[s + 1] {
            best[s + 1] = b + w.nests[s].t_cpu_ns;
            prev[s + 1] = (s, false);
        }
        let mut acc = SegmentAcc::default();
        let mut pim = 0.0;
        for e in s..n {
            acc.push(w, e);
            pim += tp[e];
            let c = b + pim + acc.mv.t_copy_ns(p.b_move_gbs, p.b_move_gbs) + 2.0 * p.t_sw_ns;
            if c < best[e + 1] {
                best[e + 1] = c;
                prev[e + 1] = (s, true);
            }
        }
    }
    let mut place = vec![false; n];
    let mut i = n;
    while i > 0 {
        let (s, seg) = prev[i];
        if seg {
            place[s..i].iter_mut().for_each(|x| *x = true);
        }
        i = s;
    }
    place
}

/// Placement decisions of the rule for one nest at one core count.
pub fn decisions(w: &Workload, cores: u32, k: &RuleParams) -> Vec<Decision> {
    w.nests
        .iter()
        .map(|n| decide(&nest_facts(n), cores, k))
        .collect()
}
