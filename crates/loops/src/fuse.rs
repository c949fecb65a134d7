//! Elementwise producer-consumer fusion, the effect of MLIR's
//! `linalg-fuse-elementwise-ops` on the nests pimkit lowers: an elementwise nest whose
//! result feeds exactly one other elementwise nest over the same iteration space, read at
//! the point it is written, is inlined into that consumer and its tensor is never stored
//! (`TensorDef::Fused`). Torch-PIM's pipeline does not fuse (its softmax is 8 nests);
//! this is an option (`LowerOptions::fuse_elementwise`) to see how nest boundaries move
//! the offload decisions (torch-pim.txt §4.1: fusion decides where nests fall).
//!
//! Conditions, as the pass's default control function: the producer has one store with
//! the consumer's store index, its result is read only by the consumer (one use), is not
//! a graph output and has no views; both nests are elementwise with identical dims, and
//! every load of the result in the consumer uses the consumer's store index.

use crate::ir::*;

/// Fuse until no pair qualifies, then drop results nothing reads (MLIR's canonicalization
/// after the pass: softmax's unused argmax and its fill go, 8 nests become 6); returns how
/// many nests were removed. Run before bufferization.
pub(crate) fn fuse_elementwise(p: &mut Program) -> usize {
    let before = p.nests.len();
    while let Some((pi, ci, t)) = find_pair(p) {
        merge(p, pi, ci, t);
    }
    while let Some(t) = find_dead(p) {
        drop_result(p, t);
    }
    before - p.nests.len()
}

/// A nest result that no other nest, view, destination-passing result or graph output
/// reads, and that the rest of its own nest does not read either.
fn find_dead(p: &Program) -> Option<TensorId> {
    (0..p.tensors.len()).find(|&t| {
        let TensorDef::Result { nest: k, .. } = p.tensors[t].def else {
            return false;
        };
        if p.outputs.contains(&t) {
            return false;
        }
        let referenced = p.tensors.iter().enumerate().any(|(i, x)| match x.def {
            TensorDef::View { root } => root == t && i != t,
            TensorDef::Result { init: Some(s), .. } => s == t,
            // no other definition refers to another tensor
            _ => false,
        });
        let read_elsewhere = p.nests.iter().any(|n| {
            n.id != k
                && n.operands
                    .iter()
                    .any(|o| o.role != Role::Out && p.tensors[o.tensor].root(o.tensor) == t)
        });
        if referenced || read_elsewhere {
            return false;
        }
        // Within its nest only its own store may read it (an accumulator).
        let n = &p.nests[k];
        let Some(j) = n.operands.iter().position(|o| o.tensor == t) else {
            return false;
        };
        n.stores.iter().filter(|s| s.operand != j).all(|s| {
            let mut reads = false;
            s.value.visit(&mut |e| {
                if let Expr::Load { operand, .. } = e {
                    reads |= *operand == j;
                }
            });
            !reads
        })
    })
}

/// Remove dead result `t`: its store and operand, and its nest when nothing is left.
fn drop_result(p: &mut Program, t: TensorId) {
    let TensorDef::Result { nest: k, .. } = p.tensors[t].def else {
        return;
    };
    p.tensors[t].def = TensorDef::Dead;
    let n = &mut p.nests[k];
    let j = n
        .operands
        .iter()
        .position(|o| o.tensor == t)
        .unwrap_or(usize::MAX);
    n.stores.retain(|s| s.operand != j);
    if n.stores.is_empty() {
        remove_nest(p, k);
        return;
    }
    n.operands.remove(j);
    let map = |o: usize| if o > j { o - 1 } else { o };
    n.stores = n
        .stores
        .iter()
        .map(|s| remap_store(s, &map, &|_| None))
        .collect();
}

/// Drop nest `k` and renumber the nests after it (ids and the tensors that name them).
fn remove_nest(p: &mut Program, k: usize) {
    p.nests.remove(k);
    for (i, n) in p.nests.iter_mut().enumerate() {
        n.id = i;
    }
    for ti in &mut p.tensors {
        match &mut ti.def {
            TensorDef::Result { nest, .. } if *nest > k => *nest -= 1,
            TensorDef::Fused { into } if *into > k => *into -= 1,
            // no other definition holds a nest index
            _ => {}
        }
    }
}

/// Nests that read tensor `t` (directly or through a view).
fn readers(p: &Program, t: TensorId) -> Vec<usize> {
    let mut v: Vec<usize> = p
        .nests
        .iter()
        .filter(|n| {
            n.operands
                .iter()
                .any(|o| o.role != Role::Out && p.tensors[o.tensor].root(o.tensor) == t)
        })
        .map(|n| n.id)
        .collect();
    v.dedup();
    v
}

fn find_pair(p: &Program) -> Option<(usize, usize, TensorId)> {
    for prod in &p.nests {
        if prod.kind != NestKind::Elementwise || prod.stores.len() != 1 {
            continue;
        }
        let st = &prod.stores[0];
        let t = prod.operands[st.operand].tensor;
        let ti = &p.tensors[t];
        if prod.operands[st.operand].role != Role::Out
            || !matches!(ti.def, TensorDef::Result { init: None, .. })
            || p.outputs.contains(&t)
            || p.tensors
                .iter()
                .enumerate()
                .any(|(i, x)| i != t && x.root(i) == t)
        {
            continue;
        }
        let [ci] = readers(p, t)[..] else { continue };
        let cons = &p.nests[ci];
        if ci <= prod.id
            || cons.kind != NestKind::Elementwise
            || cons.dims != prod.dims
            || cons.stores.len() != 1
            || cons.stores[0].index != st.index
            || cons
                .operands
                .iter()
                .any(|o| o.tensor == t && o.role != Role::In)
        {
            continue;
        }
        // Moving the producer's reads later must not see a buffer updated in between (a
        // destination-passing result shares its init's storage).
        let inputs: Vec<TensorId> = prod
            .operands
            .iter()
            .filter(|o| o.role == Role::In)
            .map(|o| p.tensors[o.tensor].root(o.tensor))
            .collect();
        let clobbered = p.tensors.iter().any(|x| match x.def {
            TensorDef::Result {
                nest,
                init: Some(i),
            } => nest > prod.id && nest < ci && inputs.contains(&p.tensors[i].root(i)),
            // no other definition writes a tensor
            _ => false,
        });
        if clobbered {
            continue;
        }
        let uses: Vec<usize> = (0..cons.operands.len())
            .filter(|&j| cons.operands[j].tensor == t)
            .collect();
        if uses.iter().all(|&j| cons.loads_only_at(j, &st.index)) {
            return Some((prod.id, ci, t));
        }
    }
    None
}

type OperandMap<'a> = &'a dyn Fn(usize) -> usize;
type Inline<'a> = &'a dyn Fn(usize) -> Option<Expr>;

/// An index whose dynamic part reads renumbered operands.
fn remap_index(ix: &Index, map: OperandMap, inline: Inline) -> Index {
    Index {
        terms: ix.terms.clone(),
        constant: ix.constant,
        dynamic: ix.dynamic.as_ref().map(|d| Box::new(remap(d, map, inline))),
    }
}

/// A store with its operand, index and value renumbered; loads that `inline` answers are
/// replaced by the expression it returns.
fn remap_store(s: &Store, map: OperandMap, inline: Inline) -> Store {
    Store {
        operand: map(s.operand),
        index: s
            .index
            .iter()
            .map(|ix| remap_index(ix, map, inline))
            .collect(),
        value: remap(&s.value, map, inline),
    }
}

fn remap(e: &Expr, map: OperandMap, inline: Inline) -> Expr {
    match e {
        Expr::Load { operand, index } => {
            if let Some(x) = inline(*operand) {
                return x;
            }
            Expr::Load {
                operand: map(*operand),
                index: index
                    .iter()
                    .map(|ix| remap_index(ix, map, inline))
                    .collect(),
            }
        }
        Expr::Const { .. } | Expr::DimIndex(_) => e.clone(),
        Expr::Unary(f, a) => Expr::Unary(*f, Box::new(remap(a, map, inline))),
        Expr::Cast(dt, a) => Expr::Cast(*dt, Box::new(remap(a, map, inline))),
        Expr::Binary(f, a, b) => Expr::Binary(
            *f,
            Box::new(remap(a, map, inline)),
            Box::new(remap(b, map, inline)),
        ),
        Expr::Select(c, a, b) => Expr::Select(
            Box::new(remap(c, map, inline)),
            Box::new(remap(a, map, inline)),
            Box::new(remap(b, map, inline)),
        ),
        Expr::Fma(a, b, c) => Expr::fma(
            remap(a, map, inline),
            remap(b, map, inline),
            remap(c, map, inline),
        ),
    }
}

/// Inline producer `pi` into consumer `ci` (reading `t`), drop the producer, renumber.
fn merge(p: &mut Program, pi: usize, ci: usize, t: TensorId) {
    let prod = p.nests[pi].clone();
    let cons = p.nests[ci].clone();
    // Operands: the consumer's minus `t`, then the producer's inputs not already there.
    let mut ops: Vec<Operand> = vec![];
    let mut cmap = vec![usize::MAX; cons.operands.len()];
    for (j, o) in cons.operands.iter().enumerate() {
        if o.tensor != t {
            cmap[j] = ops.len();
            ops.push(o.clone());
        }
    }
    let mut pmap = vec![usize::MAX; prod.operands.len()];
    for (j, o) in prod.operands.iter().enumerate() {
        if o.role != Role::In {
            continue;
        }
        pmap[j] = match ops
            .iter()
            .position(|x| x.tensor == o.tensor && x.role != Role::Out)
        {
            Some(k) => k,
            None => {
                ops.push(o.clone());
                ops.len() - 1
            }
        };
    }
    let body = remap(&prod.stores[0].value, &|j| pmap[j], &|_| None);
    let stores = cons
        .stores
        .iter()
        .map(|s| {
            remap_store(s, &|j| cmap[j], &|j| {
                (cons.operands[j].tensor == t).then(|| body.clone())
            })
        })
        .collect();
    let n = &mut p.nests[ci];
    n.operands = ops;
    n.stores = stores;
    n.label = format!("{}+{}", prod.label, cons.label);
    remove_nest(p, pi);
    p.tensors[t].def = TensorDef::Fused { into: ci - 1 };
}
