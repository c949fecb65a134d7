//! The per-nest facts every later stage consumes, gathered from the lowered program
//! (static: iteration counts, read/write sets per allocation, instructions per iteration,
//! PIM-side lines) and from the host runs (t_cpu, counters).

use crate::arch::PimArch;
use crate::cache::pim_lines;
use crate::counters::Counters;
use crate::pimcost::cycles_per_iter;
use pimkit_loops::{AllocId, AllocKind, Program};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NestData {
    pub id: usize,
    pub op: String,
    pub node: String,
    /// The framework operator (operator granularity's unit; `pimkit_loops::Nest::source`).
    pub source: String,
    pub label: String,
    pub kind: String,
    pub n_iter: u64,
    pub n_total: u64,
    pub trip: u64,
    pub instr_per_iter: f64,
    /// In-order PIM cycles per innermost iteration (`pimcost`: latencies exposed).
    pub cycles_per_iter: f64,
    /// Bytes read / written per allocation (the nest's ins and outs after bufferization).
    pub reads: Vec<(AllocId, u64)>,
    pub writes: Vec<(AllocId, u64)>,
    /// Off-L1 lines on the PIM side (cache model at the PIM L1 size).
    pub pim_lines: f64,
    pub t_cpu_ns: f64,
    pub counters: Counters,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AllocData {
    pub id: AllocId,
    pub name: String,
    pub bytes: u64,
    /// Graph input: rewritten by the host before every execution.
    pub input: bool,
    /// Holds a graph output: must be on the host at the end.
    pub output: bool,
}

/// One program ready for the rule and the models.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Workload {
    pub name: String,
    pub nests: Vec<NestData>,
    pub allocs: Vec<AllocData>,
}

impl Workload {
    /// Combine a lowered program with per-nest host times and counters.
    pub fn new(p: &Program, t_cpu_ns: &[f64], counters: &[Counters], arch: &PimArch) -> Workload {
        let stats = p.stats();
        let nests = p
            .nests
            .iter()
            .zip(&stats)
            .map(|(n, s)| NestData {
                id: n.id,
                op: n.op.clone(),
                node: n.node.clone(),
                source: n.source.clone(),
                label: n.label.clone(),
                kind: n.kind.name().to_string(),
                n_iter: s.n_iter,
                n_total: s.n_total,
                trip: s.trip,
                instr_per_iter: s.instr_per_iter,
                cycles_per_iter: cycles_per_iter(p, n, arch),
                reads: s.reads.iter().map(|x| (x.alloc, x.bytes)).collect(),
                writes: s.writes.iter().map(|x| (x.alloc, x.bytes)).collect(),
                pim_lines: pim_lines(p, n, arch.l1d_bytes, arch.line_bytes),
                t_cpu_ns: t_cpu_ns.get(n.id).copied().unwrap_or(0.0),
                counters: counters.get(n.id).cloned().unwrap_or_default(),
            })
            .collect();
        let allocs = p
            .allocs
            .iter()
            .map(|a| AllocData {
                id: a.id,
                name: a.name.clone(),
                bytes: a.bytes() as u64,
                input: a.kind == AllocKind::Input,
                output: a.holds_output,
            })
            .collect();
        Workload {
            name: p.name.clone(),
            nests,
            allocs,
        }
    }

    pub fn t_cpu_total(&self) -> f64 {
        self.nests.iter().map(|n| n.t_cpu_ns).sum()
    }
}
