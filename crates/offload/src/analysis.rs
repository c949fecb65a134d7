//! The whole result for one workload: per-nest decisions and, per core count, equation
//! (9) at every granularity, the oracle, captured fraction and agreement. Serialized as
//! `pimkit offload --json`.

use crate::arch::PimArch;
use crate::host::{HostCalib, Thresholds};
use crate::plan::{Eval, Granularity, Params, decisions, evaluate, oracle, place};
use crate::timing::ProfilingCost;
use crate::workload::Workload;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize)]
pub struct CoreDecision {
    pub cores: u32,
    pub c1: bool,
    pub c2: bool,
    pub offload: bool,
    pub oracle: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct NestResult {
    pub id: usize,
    pub op: String,
    pub node: String,
    /// The framework operator the nest belongs to (operator granularity's unit).
    pub source: String,
    pub label: String,
    pub t_cpu_ns: f64,
    pub n_iter: u64,
    pub n_total: u64,
    pub offcore_read_bytes: f64,
    pub bw_read_gbs: f64,
    pub store_bound: f64,
    /// Conditions and verdict at the first core count (`by_cores` has every count).
    pub c1: bool,
    pub c2: bool,
    pub c3: bool,
    pub c4: bool,
    pub offload: bool,
    /// 1: rejected at stage 1 (work), 2: at stage 2 (memory), 0: offloaded.
    pub rejected_at: u8,
    pub counter_source: String,
    pub by_cores: Vec<CoreDecision>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GranResult {
    pub speedup: f64,
    pub speedup_exact: f64,
    pub offloaded_nests: usize,
    #[serde(flatten)]
    pub eval: Eval,
}

#[derive(Clone, Debug, Serialize)]
pub struct CoreResult {
    pub cores: u32,
    /// Loop granularity (the rule), bound movement.
    pub speedup: f64,
    pub speedup_exact: f64,
    pub t_host: f64,
    pub t_pim: f64,
    pub t_copy: f64,
    pub t_copy_exact: f64,
    pub n_region: usize,
    pub t_hybrid: f64,
    /// Share of all-CPU time the rule moved to PIM (the paper's "capture").
    pub captured_fraction: f64,
    pub oracle_speedup: f64,
    /// (rule speedup − 1) / (oracle speedup − 1): the part of the achievable gain the
    /// rule captures (1 when the oracle gains nothing and the rule loses nothing).
    pub captured_of_oracle: f64,
    /// Nests where the rule and the oracle agree.
    pub agreement: usize,
    pub offloaded_nests: usize,
    pub granularity: BTreeMap<String, GranResult>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Analysis {
    pub workload: String,
    pub nests_total: usize,
    pub t_cpu_total_ns: f64,
    pub host: HostCalib,
    pub thresholds: Thresholds,
    pub params: Params,
    pub arch: PimArch,
    pub counter_source: String,
    pub nests: Vec<NestResult>,
    pub cores: Vec<CoreResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiling: Option<ProfilingCost>,
}

pub fn analyze(
    w: &Workload,
    host: &HostCalib,
    arch: &PimArch,
    th: Thresholds,
    cores: &[u32],
) -> Analysis {
    let p = Params::new(host, arch, th);
    let t_all = w.t_cpu_total();
    let speed = |t: f64| if t > 0.0 { t_all / t } else { 1.0 };
    let mut per_core_dec = vec![];
    let mut core_results = vec![];
    for &c in cores {
        let dec = decisions(w, c, &p.rule);
        let rule_place: Vec<bool> = dec.iter().map(|d| d.offload).collect();
        let orc = oracle(w, c, arch, &p);
        let mut gran = BTreeMap::new();
        for g in Granularity::ALL {
            let pl = if g == Granularity::Loop {
                rule_place.clone()
            } else {
                place(w, g, c, &p.rule)
            };
            let e = evaluate(w, &pl, c, arch, &p, g != Granularity::Bb);
            gran.insert(
                g.name().to_string(),
                GranResult {
                    speedup: speed(e.t_hybrid),
                    speedup_exact: speed(e.t_hybrid_exact),
                    offloaded_nests: pl.iter().filter(|&&x| x).count(),
                    eval: e,
                },
            );
        }
        let l = gran["loop"].eval;
        let oe = evaluate(w, &orc, c, arch, &p, true);
        let captured: f64 = w
            .nests
            .iter()
            .zip(&rule_place)
            .filter(|(_, on)| **on)
            .map(|(n, _)| n.t_cpu_ns)
            .sum();
        let (s_rule, s_orc) = (speed(l.t_hybrid), speed(oe.t_hybrid));
        core_results.push(CoreResult {
            cores: c,
            speedup: s_rule,
            speedup_exact: speed(l.t_hybrid_exact),
            t_host: l.t_host,
            t_pim: l.t_pim,
            t_copy: l.t_copy,
            t_copy_exact: l.t_copy_exact,
            n_region: l.n_region,
            t_hybrid: l.t_hybrid,
            // `+ 0.0` turns the -0.0 of an empty capture into 0.0 (tables showed "-0.0%").
            captured_fraction: if t_all > 0.0 {
                captured / t_all + 0.0
            } else {
                0.0
            },
            oracle_speedup: s_orc,
            captured_of_oracle: if (s_orc - 1.0).abs() < 1e-12 {
                if s_rule >= s_orc - 1e-12 { 1.0 } else { 0.0 }
            } else {
                (s_rule - 1.0) / (s_orc - 1.0)
            },
            agreement: rule_place.iter().zip(&orc).filter(|(a, b)| a == b).count(),
            offloaded_nests: rule_place.iter().filter(|&&x| x).count(),
            granularity: gran,
        });
        per_core_dec.push((c, dec, orc));
    }
    let nests = w
        .nests
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let d0 = per_core_dec.first().map(|x| x.1[i]);
            let by_cores = per_core_dec
                .iter()
                .map(|(c, d, o)| CoreDecision {
                    cores: *c,
                    c1: d[i].c1,
                    c2: d[i].c2,
                    offload: d[i].offload,
                    oracle: o[i],
                })
                .collect();
            let d =
                d0.unwrap_or_else(|| crate::rule::decide(&crate::plan::nest_facts(n), 1, &p.rule));
            NestResult {
                id: n.id,
                op: n.op.clone(),
                node: n.node.clone(),
                source: n.source.clone(),
                label: n.label.clone(),
                t_cpu_ns: n.t_cpu_ns,
                n_iter: n.n_iter,
                n_total: n.n_total,
                offcore_read_bytes: n.counters.offcore_read_bytes,
                bw_read_gbs: d.bw_read_gbs,
                store_bound: n.counters.store_bound,
                c1: d.c1,
                c2: d.c2,
                c3: d.c3,
                c4: d.c4,
                offload: d.offload,
                rejected_at: d.rejected_at,
                counter_source: n.counters.source.name().to_string(),
                by_cores,
            }
        })
        .collect();
    let mut sources: Vec<&str> = w.nests.iter().map(|n| n.counters.source.name()).collect();
    sources.dedup();
    Analysis {
        workload: w.name.clone(),
        nests_total: w.nests.len(),
        t_cpu_total_ns: t_all,
        host: host.clone(),
        thresholds: th,
        params: p,
        arch: arch.clone(),
        counter_source: sources.join(","),
        nests,
        cores: core_results,
        profiling: None,
    }
}
