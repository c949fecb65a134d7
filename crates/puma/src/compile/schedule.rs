//! Pass 2: one global linearization and MVM coalescing.
//!
//! The order is a post-order DFS from the outputs over operands (each value is
//! produced right before its first consumer, so few values are live at once: the
//! paper's reverse post-order); for feature maps the DFS runs over rows (row-streaming
//! pipelines, `row_order`). Every core's and tile's instruction stream is a
//! subsequence of this one order, which is what makes blocking communication
//! deadlock-free (docs/puma.md "Deadlock freedom").

use super::Lowered;
use super::{Kind, Loc, NO_ROW, Schedule, VId};
use crate::arch::Arch;
use std::collections::HashMap;

pub fn linearize(l: &Lowered, arch: &Arch, coalesce: bool) -> Schedule {
    let mut order = if l.ops.iter().any(|o| o.row != NO_ROW) {
        row_order(l).unwrap_or_else(|| op_order(l, true))
    } else {
        op_order(l, false)
    };
    let n = l.ops.len();
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

/// Op-level post-order DFS from the outputs. Graph inputs go first unless they stream
/// (`streamed`): they are sent from the input tile before anything else, so MVMs
/// reading different input segments can be coalesced.
fn op_order(l: &Lowered, streamed: bool) -> Vec<VId> {
    let n = l.ops.len();
    let mut visited = vec![false; n];
    let mut order: Vec<VId> = Vec::with_capacity(n);
    if !streamed {
        for (i, op) in l.ops.iter().enumerate() {
            if matches!(op.kind, Kind::Input) {
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
    order
}

/// Row-streaming order (docs/puma.md "Row-streaming pipelines"): a post-order DFS from
/// the outputs over *rows* (a node's ops of one feature-map row, `rows.rs`), each row's
/// ops in creation order. A row is computed right before the first row that needs it,
/// so every layer advances row by row behind its consumer and only the rows its kernel
/// window still needs are live. `None` if the rows depend on each other in a cycle
/// (not expected: the caller then falls back to the op-level order).
fn row_order(l: &Lowered) -> Option<Vec<VId>> {
    let n = l.ops.len();
    // Super-node of each op: (node, row); constants, inputs and outputs alone.
    let mut id_of: HashMap<(u32, u32, u32), u32> = HashMap::new();
    let mut sn = vec![0u32; n];
    let mut members: Vec<Vec<VId>> = Vec::new();
    for (i, op) in l.ops.iter().enumerate() {
        let key = match op.kind {
            Kind::Const(_) | Kind::Output { .. } => (u32::MAX, i as u32, 0),
            Kind::Input => (u32::MAX - 1, op.row, i as u32),
            // computed ops keep graph order, row by row
            _ => (op.node, op.row, 0),
        };
        let next = members.len() as u32;
        let id = *id_of.entry(key).or_insert(next);
        if id == next {
            members.push(Vec::new());
        }
        members[id as usize].push(i as VId);
        sn[i] = id;
    }
    let ns = members.len();
    // Dependencies of each super-node, in order of first appearance.
    let mut deps: Vec<Vec<u32>> = vec![Vec::new(); ns];
    for (s, ms) in members.iter().enumerate() {
        let mut seen = std::collections::HashSet::new();
        for &o in ms {
            for ps in l.ops[o as usize].operands() {
                for p in ps {
                    let d = sn[p.v as usize];
                    if d as usize != s && seen.insert(d) {
                        deps[s].push(d);
                    }
                }
            }
        }
    }
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; ns];
    let mut order: Vec<VId> = Vec::with_capacity(n);
    for root in 0..n {
        if !matches!(l.ops[root].kind, Kind::Output { .. }) {
            continue;
        }
        let r = sn[root] as usize;
        if state[r] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(r, 0)];
        state[r] = 1;
        while let Some(&mut (s, ref mut next)) = stack.last_mut() {
            if *next < deps[s].len() {
                let d = deps[s][*next] as usize;
                *next += 1;
                match state[d] {
                    0 => {
                        state[d] = 1;
                        stack.push((d, 0));
                    }
                    1 => return None,
                    // 2: already finished
                    _ => {}
                }
            } else {
                state[s] = 2;
                order.extend_from_slice(&members[s]);
                stack.pop();
            }
        }
    }
    // Ops no output depends on are dropped, as in the op-level order.
    Some(order)
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
