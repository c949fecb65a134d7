//! Read plan (first step of code generation): who reads each value, where and how
//! often, all known before any code is emitted, so reader counts are exact.
//!
//! * a value lives in registers of the core that computes it; other cores of the same
//!   tile `load` it from shared memory after the producer's `store` (feature maps, marked
//!   `shm`, are stored and loaded even by their own core);
//! * other tiles get it by `send` (producer tile unit) / `receive` (consumer tile unit);
//! * constants are preloaded, persistent, into each tile that reads them.

use super::{CompileError, Kind, Loc, Schedule, VId};
use crate::program::{INPUT_TILE, OUTPUT_TILE};
use std::collections::{BTreeSet, HashMap, VecDeque};

pub fn tile_of(loc: Loc) -> Option<u32> {
    match loc {
        Loc::Core { tile, .. } => Some(tile),
        Loc::InputTile => Some(INPUT_TILE as u32),
        Loc::OutputTile => Some(OUTPUT_TILE as u32),
        Loc::Const => None,
    }
}

pub struct Plan {
    /// Position of each op in the global order.
    pub pos: Vec<usize>,
    /// (reader tile, value) → reads per word from that tile's shared memory.
    pub counts: HashMap<(u32, VId), Vec<u32>>,
    /// Positions where a core reads a value it holds in registers.
    pub local_uses: HashMap<(Loc, VId), VecDeque<usize>>,
    /// (tile, constant) pairs: constants to preload.
    pub const_use: BTreeSet<(u32, VId)>,
    /// Value → tiles it is sent to.
    pub dests: HashMap<VId, Vec<u32>>,
    /// Value → reader count of each word in its producer tile's shared memory.
    pub prod_counts: HashMap<VId, Vec<u32>>,
    /// Position → (tile, value) copies whose last reader is there.
    pub frees_at: Vec<Vec<(u32, VId)>>,
    /// (tile, value) → agents of that tile that read it (bit per core, bit `cores`
    /// for the send/receive unit).
    pub readers: HashMap<(u32, VId), u128>,
}

pub fn plan(s: &Schedule, cores: usize, graph: &str) -> Result<Plan, CompileError> {
    let ops = &s.ops;
    let n = ops.len();
    let mut pos = vec![usize::MAX; n];
    for (i, &o) in s.order.iter().enumerate() {
        pos[o as usize] = i;
    }
    let mut counts: HashMap<(u32, VId), Vec<u32>> = HashMap::new();
    let mut last_read: HashMap<(u32, VId), usize> = HashMap::new();
    let mut const_use = BTreeSet::new();
    let mut local_uses: HashMap<(Loc, VId), VecDeque<usize>> = HashMap::new();
    let mut readers: HashMap<(u32, VId), u128> = HashMap::new();
    for (i, &o) in s.order.iter().enumerate() {
        let op = &ops[o as usize];
        let rt = tile_of(op.loc).unwrap_or(0);
        let agent = match op.loc {
            Loc::Core { core, .. } => core as usize,
            // InputTile, Const, OutputTile: tile memory, scheduled by the tile's own agent
            _ => cores,
        };
        for ps in op.operands() {
            for p in ps {
                let src = &ops[p.v as usize];
                if matches!(op.kind, Kind::Output { .. }) && src.loc == Loc::Const {
                    return Err(CompileError::Graph {
                        graph: graph.to_string(),
                        msg: "an output depends only on constants; nothing to compute".into(),
                    });
                }
                if src.loc == op.loc && matches!(op.loc, Loc::Core { .. }) && !src.shm {
                    let q = local_uses.entry((op.loc, p.v)).or_default();
                    if q.back() != Some(&i) {
                        q.push_back(i);
                    }
                } else if src.loc == Loc::Const {
                    const_use.insert((rt, p.v));
                } else {
                    let c = counts
                        .entry((rt, p.v))
                        .or_insert_with(|| vec![0; src.len as usize]);
                    for w in p.off..p.off + p.len {
                        c[w as usize] += 1;
                    }
                    last_read.insert((rt, p.v), i);
                    // The output tile's unit receives; nothing there reads.
                    if !matches!(op.kind, Kind::Output { .. }) {
                        *readers.entry((rt, p.v)).or_default() |= 1u128 << agent;
                    }
                }
            }
        }
    }
    // Producer-tile counts: local loads + one send per destination tile.
    let mut dests: HashMap<VId, Vec<u32>> = HashMap::new();
    let mut keys: Vec<(u32, VId)> = counts.keys().copied().collect();
    keys.sort();
    for &(t, v) in &keys {
        let pt = tile_of(ops[v as usize].loc).unwrap_or(0);
        if pt != t {
            dests.entry(v).or_default().push(t);
        }
    }
    let mut prod_counts: HashMap<VId, Vec<u32>> = HashMap::new();
    for (&v, ds) in &dests {
        let pt = tile_of(ops[v as usize].loc).unwrap_or(0);
        let len = ops[v as usize].len as usize;
        let mut pc = counts
            .get(&(pt, v))
            .cloned()
            .unwrap_or_else(|| vec![0; len]);
        for d in ds {
            // Each destination receives the span of the words it reads (gaps included,
            // as count-0 words: a slot is written whole), so the send reads that span.
            let c = &counts[&(*d, v)];
            let lo = c.iter().position(|&x| x > 0).unwrap_or(0);
            let hi = c.iter().rposition(|&x| x > 0).map_or(0, |i| i + 1);
            for x in pc.iter_mut().take(hi).skip(lo) {
                *x += 1;
            }
        }
        prod_counts.insert(v, pc);
        *readers.entry((pt, v)).or_default() |= 1u128 << cores;
        last_read.insert(
            (pt, v),
            pos[v as usize].max(*last_read.get(&(pt, v)).unwrap_or(&0)),
        );
    }
    for (&(t, v), c) in &counts {
        let pt = tile_of(ops[v as usize].loc).unwrap_or(0);
        if pt == t && !prod_counts.contains_key(&v) {
            prod_counts.insert(v, c.clone());
        }
    }
    let mut frees_at: Vec<Vec<(u32, VId)>> = vec![Vec::new(); s.order.len()];
    let mut lr: Vec<_> = last_read.iter().map(|(&k, &i)| (i, k)).collect();
    lr.sort();
    for (i, k) in lr {
        frees_at[i].push(k);
    }
    Ok(Plan {
        pos,
        counts,
        local_uses,
        const_use,
        dests,
        prod_counts,
        frees_at,
        readers,
    })
}
