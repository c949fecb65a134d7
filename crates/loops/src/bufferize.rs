//! Bufferization: give every tensor a buffer (allocation) as one-shot bufferization
//! would. Views share their root's buffer; a destination-passing result (a reduction's
//! accumulator after its fill, a concat slice) updates its init's buffer; an elementwise
//! result reuses the buffer of an input that is dead afterwards (in place). Each operand
//! then resolves to an allocation id, so later stages count a buffer read and written in
//! place once, and a buffer produced and consumed inside one PIM segment once.

use crate::ir::*;

fn root(p: &Program, t: TensorId) -> TensorId {
    p.tensors[t].root(t)
}

/// Index of the last nest reading each root tensor (`usize::MAX` for graph outputs).
fn last_reads(p: &Program) -> Vec<Option<usize>> {
    let mut last = vec![None; p.tensors.len()];
    for n in &p.nests {
        for o in &n.operands {
            if o.role != Role::Out {
                last[root(p, o.tensor)] = Some(n.id);
            }
            if let TensorDef::Result { init: Some(i), .. } = p.tensors[o.tensor].def {
                last[root(p, i)] = Some(n.id);
            }
        }
    }
    for &o in &p.outputs {
        last[root(p, o)] = Some(usize::MAX);
    }
    last
}

fn new_alloc(p: &mut Program, t: TensorId, kind: AllocKind) -> AllocId {
    let ti = &p.tensors[t];
    let id = p.allocs.len();
    p.allocs.push(Alloc {
        id,
        name: ti.name.clone(),
        dtype: ti.dtype,
        elems: ti.numel(),
        kind,
        holds_output: false,
        tensors: vec![t],
    });
    id
}

/// The buffer an elementwise result can take over in place, if any.
fn inplace_candidate(
    p: &Program,
    n: &Nest,
    out: TensorId,
    last: &[Option<usize>],
    alloc_of: &[Option<AllocId>],
) -> Option<AllocId> {
    if n.kind != NestKind::Elementwise || n.stores.len() != 1 {
        return None;
    }
    let store = &n.stores[0];
    let ot = &p.tensors[out];
    for (j, o) in n.operands.iter().enumerate() {
        let it = &p.tensors[o.tensor];
        if o.role != Role::In || !it.is_memory() || it.dtype != ot.dtype || it.shape != ot.shape {
            continue;
        }
        let r = root(p, o.tensor);
        let Some(a) = alloc_of[r] else { continue };
        let al = &p.allocs[a];
        let contiguous = it.offset == 0 && it.strides == row_major(&it.shape);
        let dead = al
            .tensors
            .iter()
            .all(|&t| last[t].is_some_and(|l| l <= n.id) || last[t].is_none());
        if al.kind == AllocKind::Temp
            && al.elems == ot.numel()
            && contiguous
            && last[r] == Some(n.id)
            && dead
            && n.loads_only_at(j, &store.index)
        {
            return Some(a);
        }
    }
    None
}

pub(crate) fn bufferize(p: &mut Program) {
    p.allocs.clear();
    let last = last_reads(p);
    let mut alloc_of: Vec<Option<AllocId>> = vec![None; p.tensors.len()];
    for i in 0..p.inputs.len() {
        let t = p.inputs[i];
        alloc_of[t] = Some(new_alloc(p, t, AllocKind::Input));
    }
    for ni in 0..p.nests.len() {
        let n = p.nests[ni].clone();
        for o in &n.operands {
            let r = root(p, o.tensor);
            if alloc_of[r].is_some() || !p.tensors[r].is_memory() {
                continue;
            }
            let a = match p.tensors[r].def {
                TensorDef::Const { .. } => new_alloc(p, r, AllocKind::Const),
                TensorDef::Input { .. } => new_alloc(p, r, AllocKind::Input),
                TensorDef::Result { init: Some(i), .. } => {
                    let a =
                        alloc_of[root(p, i)].unwrap_or_else(|| new_alloc(p, i, AllocKind::Temp));
                    p.allocs[a].tensors.push(r);
                    a
                }
                _ if o.role != Role::In => match inplace_candidate(p, &n, r, &last, &alloc_of) {
                    Some(a) => {
                        p.allocs[a].tensors.push(r);
                        a
                    }
                    None => new_alloc(p, r, AllocKind::Temp),
                },
                // every other tensor gets its own temporary
                _ => new_alloc(p, r, AllocKind::Temp),
            };
            alloc_of[r] = Some(a);
        }
    }
    // Tensors no nest touches (an output that is an input or a constant).
    for t in 0..p.tensors.len() {
        let r = root(p, t);
        if alloc_of[r].is_none() && p.tensors[r].is_memory() {
            let kind = match p.tensors[r].def {
                TensorDef::Const { .. } => AllocKind::Const,
                TensorDef::Input { .. } => AllocKind::Input,
                // results, scalars and views of temporaries
                _ => AllocKind::Temp,
            };
            alloc_of[r] = Some(new_alloc(p, r, kind));
        }
    }
    for t in 0..p.tensors.len() {
        let r = root(p, t);
        p.tensors[t].alloc = alloc_of[r];
    }
    for i in 0..p.outputs.len() {
        if let Some(a) = p.tensors[p.outputs[i]].alloc {
            p.allocs[a].holds_output = true;
        }
    }
}
