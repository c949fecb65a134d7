//! Feature-map rows of the vector ops: the unit of the row-streaming schedule
//! (docs/puma.md "Row-streaming pipelines").
//!
//! A node's ops that produce an element of a spatial output [N, C, H, W] (H > 1) belong
//! to that element's row (n·H + y, the smallest over their elements); the node's other
//! ops (MVMs, partial sums, bias) to the earliest row that consumes them inside the node;
//! what is left (reductions to 1×1 such as global pooling, dense layers) to the latest
//! row it reads, so a global pool accumulates row by row as rows arrive. Graph inputs
//! were given their rows by the input layout.

use super::lower::{Lb, Val};
use super::{Kind, NO_ROW};

pub(super) fn assign(lb: &mut Lb, node_start: &[usize]) {
    let g = lb.g;
    for (ni, node) in g.nodes.iter().enumerate() {
        let (first, end) = (node_start[ni], node_start[ni + 1]);
        if first == end {
            continue;
        }
        let mut row = vec![NO_ROW; end - first];
        // 1. Elements of spatial outputs.
        for &o in &node.outputs {
            let shape = &g.ty(o).shape;
            if shape.len() != 4 || shape[2] <= 1 {
                continue;
            }
            let Some(Val::Dyn(t)) = &lb.vals[o.idx()] else {
                continue;
            };
            let (c, h, w) = (shape[1], shape[2], shape[3]);
            for (i, &(v, _)) in t.map.iter().enumerate() {
                let v = v as usize;
                if v >= first && v < end {
                    let y = (i / w) % h;
                    let b = i / (c * h * w);
                    let r = (b * h + y) as u32;
                    row[v - first] = row[v - first].min(r);
                }
            }
        }
        // 2. Earliest consuming row inside the node (consumers come later).
        for v in (first..end).rev() {
            let r = row[v - first];
            if r == NO_ROW {
                continue;
            }
            for ps in lb.ops[v].operands() {
                for p in ps {
                    let u = p.v as usize;
                    if u >= first && u < v && !matches!(lb.ops[u].kind, Kind::Const(_)) {
                        row[u - first] = row[u - first].min(r);
                    }
                }
            }
        }
        // 3. Latest row read, for what is still unassigned.
        for v in first..end {
            if row[v - first] != NO_ROW || matches!(lb.ops[v].kind, Kind::Const(_)) {
                continue;
            }
            let mut r = NO_ROW;
            for ps in lb.ops[v].operands() {
                for p in ps {
                    let u = p.v as usize;
                    let ru = if u >= first && u < end {
                        row[u - first]
                    } else {
                        lb.ops[u].row
                    };
                    if ru != NO_ROW {
                        r = if r == NO_ROW { ru } else { r.max(ru) };
                    }
                }
            }
            row[v - first] = r;
        }
        for v in first..end {
            if !matches!(lb.ops[v].kind, Kind::Const(_)) {
                lb.ops[v].row = row[v - first];
            }
        }
    }
}
