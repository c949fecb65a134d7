//! Pass 2: one global linearization and MVM coalescing.
//!
//! The order is a post-order DFS from the outputs over operands (each value is
//! produced right before its first consumer, so few values are live at once: the
//! paper's reverse post-order). Every core's and tile's instruction stream is a
//! subsequence of this one order, which is what makes blocking communication
//! deadlock-free (docs/puma.md "Deadlock freedom").

use super::lower::Lowered;
use super::{Kind, Loc, Schedule, VId};
use crate::arch::Arch;

pub fn linearize(l: &Lowered, arch: &Arch, coalesce: bool) -> Schedule {
    let n = l.ops.len();
    let mut visited = vec![false; n];
    let mut order: Vec<VId> = Vec::with_capacity(n);
    // Graph inputs first: they are sent from the input tile before anything else, so
    // MVMs reading different input segments can be coalesced.
    for (i, op) in l.ops.iter().enumerate() {
        if matches!(op.kind, Kind::Input) {
            visited[i] = true;
            order.push(i as VId);
        }
    }
    // Feature-map (CNN) graphs are scheduled layer by layer (creation order, which is
    // topological): every pixel's block then repeats with constant address strides and
    // rolls into a loop; their values live in shared memory anyway.
    let layered = l.ops.iter().any(|o| o.shm);
    if layered {
        let mut live = vec![false; n];
        for i in (0..n).rev() {
            if matches!(l.ops[i].kind, Kind::Output { .. }) {
                live[i] = true;
            }
            if live[i] {
                for ps in l.ops[i].operands() {
                    for p in ps {
                        live[p.v as usize] = true;
                    }
                }
            }
        }
        for i in 0..n {
            if live[i] && !visited[i] {
                visited[i] = true;
                order.push(i as VId);
            }
        }
    }
    // Iterative post-order DFS: (op, next operand index).
    for root in 0..n {
        if !matches!(l.ops[root].kind, Kind::Output { .. }) {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        visited[root] = true;
        while let Some(&mut (op, ref mut next)) = stack.last_mut() {
            let deps: Vec<VId> = l.ops[op]
                .operands()
                .iter()
                .flat_map(|ps| ps.iter().map(|p| p.v))
                .collect();
            if *next < deps.len() {
                let d = deps[*next] as usize;
                *next += 1;
                if !visited[d] {
                    visited[d] = true;
                    stack.push((d, 0));
                }
            } else {
                order.push(op as VId);
                stack.pop();
            }
        }
    }
    let mut group_of: Vec<Option<VId>> = vec![None; n];
    if coalesce {
        order = coalesce_mvms(l, arch, &order, &mut group_of);
    }
    Schedule {
        ops: l.ops.clone(),
        order,
        group_of,
        matrices: l.matrices.clone(),
    }
}

/// Pull independent MVMs of the same core (on other MVMUs) up next to an earlier MVM.
/// A candidate may move only if all values it reads are produced before the leader,
/// so the order stays topological.
fn coalesce_mvms(
    l: &Lowered,
    arch: &Arch,
    order: &[VId],
    group_of: &mut [Option<VId>],
) -> Vec<VId> {
    const WINDOW: usize = 24;
    let n = l.ops.len();
    let mut pos = vec![usize::MAX; n];
    for (i, &o) in order.iter().enumerate() {
        pos[o as usize] = i;
    }
    // Per-core lists of positions.
    let mut per_core: std::collections::HashMap<Loc, Vec<usize>> = Default::default();
    let mut idx_in_core = vec![0usize; order.len()];
    for (i, &o) in order.iter().enumerate() {
        let loc = l.ops[o as usize].loc;
        if let Loc::Core { .. } = loc {
            let v = per_core.entry(loc).or_default();
            idx_in_core[i] = v.len();
            v.push(i);
        }
    }
    let mut members_of: Vec<Vec<VId>> = vec![Vec::new(); n];
    let mut moved = vec![false; order.len()];
    for (i, &a) in order.iter().enumerate() {
        if moved[i] {
            continue;
        }
        let Kind::Mvm { mvmu: ma, .. } = l.ops[a as usize].kind else {
            continue;
        };
        let loc = l.ops[a as usize].loc;
        let list = &per_core[&loc];
        let mut used = vec![ma];
        let mut blocked: Vec<u32> = Vec::new();
        for &j in list.iter().skip(idx_in_core[i] + 1).take(WINDOW) {
            if used.len() >= arch.core.mvmus {
                break;
            }
            if moved[j] {
                continue;
            }
            let b = order[j];
            let Kind::Mvm { mvmu: mb, input } = &l.ops[b as usize].kind else {
                continue;
            };
            if used.contains(mb) || blocked.contains(mb) {
                blocked.push(*mb);
                continue;
            }
            if input.iter().all(|p| pos[p.v as usize] < i) {
                used.push(*mb);
                moved[j] = true;
                members_of[a as usize].push(b);
                group_of[b as usize] = Some(a);
            } else {
                blocked.push(*mb);
            }
        }
        if !members_of[a as usize].is_empty() {
            group_of[a as usize] = Some(a);
        }
    }
    let mut out = Vec::with_capacity(order.len());
    for (i, &o) in order.iter().enumerate() {
        if moved[i] {
            continue;
        }
        out.push(o);
        out.extend_from_slice(&members_of[o as usize]);
    }
    out
}
