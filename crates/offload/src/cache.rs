//! Footprint and cache model of a nest's affine accesses (the `model` counter backend and
//! the PIM-side memory term). For each allocation a nest touches it gives the distinct
//! cache lines over the whole nest and how often they are fetched again because the
//! reuse carried by an outer loop does not fit in the cache:
//!
//! - loops run in the order the C backend emits them (parallel dims, then reductions,
//!   with the best unit-stride parallel dim moved innermost: `pimkit_loops::codegen`);
//! - WS(l) = lines touched by one iteration of loop level l-1, i.e. the sub-nest l..;
//! - an access not indexed by loop m loses its reuse across m when WS(m+1) > capacity,
//!   multiplying its traffic by that loop's extent;
//! - across nests, an LRU over allocations (in program order, in steady state over
//!   repeated executions) decides whether a read allocation is still cached.

use pimkit_loops::{AllocId, Expr, Index, Nest, Program};

/// One allocation's accesses in a nest.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocAccess {
    pub alloc: AllocId,
    pub read: bool,
    pub write: bool,
    /// Distinct lines over the whole nest.
    pub lines: f64,
    /// Reuse-loss multiplier (≥ 1) at the capacity asked for.
    pub mult: f64,
}

struct Acc {
    alloc: AllocId,
    write: bool,
    /// (element stride in the allocation, extent) per nest dim (stride 0 when unused).
    strides: Vec<i64>,
    /// Extra (stride, extent) spans from data-dependent indices (whole axis).
    dynamic: Vec<(i64, usize)>,
    elt: usize,
    alloc_lines: f64,
}

/// The loop order the C backend uses (outermost first): pimkit-loops' own choice.
pub use pimkit_loops::codegen::loop_order;

fn collect(p: &Program, n: &Nest, line: u64) -> Vec<Acc> {
    let mut v = vec![];
    let mut push = |operand: usize, index: &[Index], write: bool| {
        let t = &p.tensors[n.operands[operand].tensor];
        let Some(alloc) = t.alloc else { return };
        let mut strides = vec![0i64; n.dims.len()];
        let mut dynamic = vec![];
        for (k, ix) in index.iter().enumerate() {
            let st = t.strides.get(k).copied().unwrap_or(0);
            for &(d, c) in &ix.terms {
                strides[d] += st * c;
            }
            if ix.dynamic.is_some() {
                dynamic.push((st, t.shape.get(k).copied().unwrap_or(1)));
            }
        }
        let a = &p.allocs[alloc];
        v.push(Acc {
            alloc,
            write,
            strides,
            dynamic,
            elt: t.dtype.size(),
            alloc_lines: (a.bytes() as f64 / line as f64).ceil().max(1.0),
        });
    };
    for s in &n.stores {
        push(s.operand, &s.index, true);
        s.value.visit(&mut |e| {
            if let Expr::Load { operand, index } = e {
                push(*operand, index, false);
            }
        });
    }
    v
}

/// Distinct lines one access touches when the dims in `active` vary.
fn lines_of(a: &Acc, n: &Nest, active: &[usize], line: u64) -> f64 {
    let mut spans: Vec<(i64, usize)> = active
        .iter()
        .filter(|&&d| a.strides[d] != 0)
        .map(|&d| (a.strides[d].abs(), n.dims[d].extent))
        .collect();
    spans.extend(a.dynamic.iter().map(|&(s, e)| (s.abs(), e)));
    spans.sort();
    let (mut span, mut blocks) = (1f64, 1f64);
    for (s, e) in spans {
        let s = s as f64;
        if s <= span {
            span += s * (e as f64 - 1.0);
        } else {
            blocks *= e as f64;
        }
    }
    let per_block = (span * a.elt as f64 / line as f64).ceil().max(1.0);
    (blocks * per_block).min(a.alloc_lines)
}

/// Per-allocation lines and reuse-loss multipliers of a nest at cache `capacity` bytes.
pub fn nest_access(p: &Program, n: &Nest, capacity: u64, line: u64) -> Vec<AllocAccess> {
    let accs = collect(p, n, line);
    let order = loop_order(p, n);
    let k = order.len();
    // Working set of the sub-nest from level l inward (lines, all accesses).
    let ws: Vec<f64> = (0..=k)
        .map(|l| {
            let active = &order[l..];
            group(&accs, |a| lines_of(a, n, active, line))
                .into_iter()
                .map(|(_, x)| x)
                .sum()
        })
        .collect();
    let cap_lines = capacity as f64 / line as f64;
    let mut out: Vec<AllocAccess> = vec![];
    for a in &accs {
        let lines = lines_of(a, n, &order, line);
        let mut mult = 1.0;
        for (m, &d) in order.iter().enumerate() {
            if a.strides[d] == 0 && ws[m + 1] > cap_lines {
                mult *= n.dims[d].extent as f64;
            }
        }
        match out.iter_mut().find(|x| x.alloc == a.alloc) {
            Some(x) => {
                x.read |= !a.write;
                x.write |= a.write;
                if lines * mult > x.lines * x.mult {
                    x.lines = lines;
                    x.mult = mult;
                }
            }
            None => out.push(AllocAccess {
                alloc: a.alloc,
                read: !a.write,
                write: a.write,
                lines,
                mult,
            }),
        }
    }
    out
}

fn group(accs: &[Acc], f: impl Fn(&Acc) -> f64) -> Vec<(AllocId, f64)> {
    let mut g: Vec<(AllocId, f64)> = vec![];
    for a in accs {
        let x = f(a);
        match g.iter_mut().find(|e| e.0 == a.alloc) {
            Some(e) => e.1 = e.1.max(x),
            None => g.push((a.alloc, x)),
        }
    }
    g
}

/// Off-core traffic of every nest in steady state (the program executed repeatedly, as
/// the timing run does): (read bytes, written bytes) per nest.
pub fn program_traffic(p: &Program, capacity: u64, line: u64) -> Vec<(f64, f64)> {
    let per: Vec<Vec<AllocAccess>> = p
        .nests
        .iter()
        .map(|n| nest_access(p, n, capacity, line))
        .collect();
    let cap_lines = capacity as f64 / line as f64;
    // LRU stack of (alloc, lines last touched), most recent last.
    let mut lru: Vec<(AllocId, f64)> = vec![];
    let mut out = vec![(0.0, 0.0); p.nests.len()];
    for pass in 0..2 {
        for (i, acc) in per.iter().enumerate() {
            let (mut rd, mut wr) = (0.0, 0.0);
            for a in acc {
                // Lines touched since this allocation's last use (reuse distance).
                let resident = match lru.iter().rposition(|e| e.0 == a.alloc) {
                    Some(pos) => {
                        let dist: f64 = lru[pos + 1..].iter().map(|e| e.1).sum();
                        dist + a.lines <= cap_lines
                    }
                    None => false,
                };
                let traffic = a.lines * a.mult - if resident { a.lines } else { 0.0 };
                if a.read {
                    rd += traffic.max(0.0) * line as f64;
                }
                if a.write {
                    // Writes to lines that stay cached are written back later, by
                    // whoever evicts them; cold lines stream out with this nest.
                    wr += if resident {
                        (a.mult - 1.0) * a.lines
                    } else {
                        a.lines * a.mult
                    } * line as f64;
                }
            }
            for a in acc {
                lru.retain(|e| e.0 != a.alloc);
                lru.push((a.alloc, a.lines));
            }
            if pass == 1 {
                out[i] = (rd, wr);
            }
        }
    }
    out
}

/// Off-L1 lines of a nest on one PIM core's private cache (cold: nothing stays in a
/// 32 KiB L1 across offloaded nests).
pub fn pim_lines(p: &Program, n: &Nest, l1: u64, line: u64) -> f64 {
    nest_access(p, n, l1, line)
        .iter()
        .map(|a| a.lines * a.mult)
        .sum()
}
