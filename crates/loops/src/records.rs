//! Serializable per-nest records for the CLI (`pimkit lower --json`, `pimkit profile
//! --json`) and the offload stage.

use crate::analysis::{AllocBytes, analyze};
use crate::ir::*;
use crate::profile::Profile;
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NestRecord {
    pub id: usize,
    pub op: String,
    pub node: String,
    pub kind: NestKind,
    pub label: String,
    pub extents: Vec<usize>,
    /// "par" / "red" per extent.
    pub dims: Vec<&'static str>,
    pub n_iter: u64,
    pub n_total: u64,
    pub trip: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub reads: Vec<AllocBytes>,
    pub writes: Vec<AllocBytes>,
    pub instr_per_iter: f64,
    pub arith_per_iter: f64,
    pub affine: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_cpu_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_min_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t_max_ns: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AllocRecord {
    pub id: AllocId,
    pub name: String,
    pub kind: AllocKind,
    pub dtype: String,
    pub bytes: usize,
    pub holds_output: bool,
}

/// Top-level JSON of `pimkit lower` / `pimkit profile`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LowerReport {
    pub program: String,
    pub nests: Vec<NestRecord>,
    pub allocs: Vec<AllocRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
}

/// One record per nest; timings are added when a profile is given.
pub fn records(p: &Program, prof: Option<&Profile>) -> Vec<NestRecord> {
    p.nests
        .iter()
        .map(|n| {
            let s = analyze(p, n);
            let t = prof.and_then(|pr| pr.nests.get(n.id));
            NestRecord {
                id: n.id,
                op: n.op.clone(),
                node: n.node.clone(),
                kind: n.kind,
                label: n.label.clone(),
                extents: n.dims.iter().map(|d| d.extent).collect(),
                dims: n
                    .dims
                    .iter()
                    .map(|d| {
                        if d.kind == DimKind::Parallel {
                            "par"
                        } else {
                            "red"
                        }
                    })
                    .collect(),
                n_iter: s.n_iter,
                n_total: s.n_total,
                trip: s.trip,
                read_bytes: s.read_bytes,
                write_bytes: s.write_bytes,
                reads: s.reads,
                writes: s.writes,
                instr_per_iter: s.instr_per_iter,
                arith_per_iter: s.arith_per_iter,
                affine: s.affine,
                t_cpu_ns: t.map(|x| x.t_cpu_ns),
                t_min_ns: t.map(|x| x.min_ns),
                t_max_ns: t.map(|x| x.max_ns),
            }
        })
        .collect()
}

/// The whole JSON report.
pub fn report(p: &Program, prof: Option<&Profile>) -> LowerReport {
    LowerReport {
        program: p.name.clone(),
        nests: records(p, prof),
        allocs: p
            .allocs
            .iter()
            .map(|a| AllocRecord {
                id: a.id,
                name: a.name.clone(),
                kind: a.kind,
                dtype: a.dtype.to_string(),
                bytes: a.bytes(),
                holds_output: a.holds_output,
            })
            .collect(),
        profile: prof.cloned(),
    }
}
