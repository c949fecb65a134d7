//! Weight replication under an MVMU budget (`--replicate auto|N`): more copies of the
//! bottleneck layers' crossbars, so the pipeline's slowest stage speeds up.
//!
//! A layer whose matrix multiplies `v` vectors per inference (a convolution: one per
//! output pixel) keeps each copy busy for ⌈v / copies⌉ MVMs. `auto` starts from one
//! copy per layer (or the copies its line buffers need) and repeatedly gives one more
//! copy to the layer with the longest stage while the budget allows; it stops when the
//! slowest layer cannot get another copy (more copies elsewhere would not raise the
//! throughput). The plan is then what lowering places (`CompileOptions::replicas`).
//! The original maps one MVMU per kernel position and channel tile (ref §4.2), which
//! `Budget::Original` takes as the budget.

use super::Lowered;
use super::{CompileError, CompileOptions, Kind};
use crate::arch::Arch;
use pimkit_ir::{Graph, Op};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// MVMUs the replication plan may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    Mvmus(usize),
    Tiles(usize),
    /// The original compiler's MVMU count for the graph (`original_mvmus`).
    Original,
    /// One node's MVMUs.
    Node,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Replicate {
    #[default]
    Off,
    /// N copies of every layer with at least N vectors per inference.
    Factor(usize),
    Auto(Budget),
}

pub use crate::plan::{LayerPlan, Plan};

/// MVMUs of the original compiler's mapping (ref §4.2): a convolution takes one
/// crossbar tile per (kernel position, input-channel tile, output-channel tile), a
/// dense layer ⌈rows/S⌉·⌈cols/S⌉ tiles.
pub fn original_mvmus(g: &Graph, arch: &Arch) -> usize {
    let s = arch.mvmu.xbar_size;
    let mut n = 0;
    for node in &g.nodes {
        // Conv's W and Gemm/MatMul's B share operand position 1.
        let w = node.input(pimkit_ir::operand::conv::W);
        match (&node.op, w) {
            (Op::Conv(a), Some(w)) => {
                let ws = &g.ty(w).shape;
                let groups = a.group.max(1);
                let kpos: usize = ws[2..].iter().product();
                // Per group: input and output channel tiles.
                n += groups * kpos * ws[1].div_ceil(s) * (ws[0] / groups).div_ceil(s);
            }
            (Op::Gemm { .. } | Op::MatMul, Some(w)) if g.is_const(w) => {
                let ws = &g.ty(w).shape;
                if ws.len() == 2 {
                    n += ws[0].div_ceil(s) * ws[1].div_ceil(s);
                }
            }
            // every other op holds no crossbar weights
            _ => {}
        }
    }
    n
}

/// Per graph node with MVMs: (vectors per inference, MVMUs per copy, copies placed).
fn layer_stats(l: &Lowered) -> BTreeMap<u32, (usize, usize, usize)> {
    let mut mvms: BTreeMap<u32, usize> = BTreeMap::new();
    let mut units: BTreeMap<u32, HashSet<u32>> = BTreeMap::new();
    for op in &l.ops {
        if let Kind::Mvm { mvmu, .. } = op.kind {
            *mvms.entry(op.node).or_default() += 1;
            units.entry(op.node).or_default().insert(mvmu);
        }
    }
    let mut out = BTreeMap::new();
    for (node, n) in mvms {
        let name = &l.node_names[node as usize];
        // Copies: the matrices of this node named "[replica r]" (1 otherwise).
        let copies = l
            .matrices
            .iter()
            .filter(|m| m.node == *name || m.node.starts_with(&format!("{name}[")))
            .filter_map(|m| {
                m.node
                    .rsplit_once("[replica ")
                    .and_then(|(_, r)| r.trim_end_matches(']').parse::<usize>().ok())
            })
            .max()
            .map_or(1, |r| r + 1);
        let used = units[&node].len();
        let per_copy = (used / copies).max(1);
        out.insert(node, (n / per_copy, per_copy, copies));
    }
    out
}

/// The replication plan for `g` (see the module doc).
pub fn plan(
    g: &Graph,
    arch: &Arch,
    opts: &CompileOptions,
    how: Replicate,
) -> Result<Option<Plan>, CompileError> {
    if how == Replicate::Off {
        return Ok(None);
    }
    let dry_opts = CompileOptions {
        replicas: HashMap::new(),
        fixed: super::Fixed::Uniform,
        ..opts.clone()
    };
    let dry = super::lower_graph::lower(g, arch, &dry_opts)?;
    let stats = layer_stats(&dry);
    let mv = arch.mvm_cycles();
    let mut layers: Vec<LayerPlan> = stats
        .iter()
        .map(|(&node, &(vectors, per_copy, copies))| LayerPlan {
            node: dry.node_names[node as usize].clone(),
            vectors,
            mvmus_per_copy: per_copy,
            copies,
            stage_cycles: vectors.div_ceil(copies) as u64 * mv,
        })
        .collect();
    let per_tile = arch.mvmus_per_tile();
    let budget = match how {
        Replicate::Factor(n) => {
            for l in &mut layers {
                l.copies = l.copies.max(n.min(l.vectors).max(1));
                l.stage_cycles = l.vectors.div_ceil(l.copies) as u64 * mv;
            }
            usize::MAX
        }
        Replicate::Auto(b) => match b {
            Budget::Mvmus(n) => n,
            Budget::Tiles(n) => n * per_tile,
            Budget::Original => original_mvmus(g, arch),
            Budget::Node => arch.node.tiles * per_tile,
        },
        Replicate::Off => unreachable!(),
    };
    if let Replicate::Auto(_) = how {
        let mut used: usize = layers.iter().map(|l| l.copies * l.mvmus_per_copy).sum();
        while let Some(i) = (0..layers.len()).max_by_key(|&i| (layers[i].stage_cycles, i)) {
            let l = &mut layers[i];
            if l.copies >= l.vectors || used + l.mvmus_per_copy > budget {
                break;
            }
            used += l.mvmus_per_copy;
            l.copies += 1;
            l.stage_cycles = l.vectors.div_ceil(l.copies) as u64 * mv;
        }
    }
    let mvmus = layers.iter().map(|l| l.copies * l.mvmus_per_copy).sum();
    Ok(Some(Plan {
        budget_mvmus: budget,
        mvmus,
        layers,
    }))
}
