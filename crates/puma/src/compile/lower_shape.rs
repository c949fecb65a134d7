//! Data movement: Reshape/Flatten/Identity/Cast, Transpose, Concat, Slice, Split and
//! Gather with constant indices. A lowered tensor maps its elements to (vector,
//! offset), so these only rearrange the map: no instruction until an op reads them.

use super::CompileError;
use super::lower::{LT, Lb, Val, input, strides, unsupported};
use pimkit_ir::Op;
use pimkit_ir::operand::{gather, unary};

/// The node's first input as a lowered tensor (constants become constant vectors).
fn x_of(lb: &mut Lb, ni: usize) -> Result<LT, CompileError> {
    let x = lb.val(input(lb, ni, unary::X)?)?;
    Ok(lb.as_lt(&x))
}

/// Lower a data-movement node; `Ok(None)` when it is not one. Multi-output nodes
/// (Split) store their outputs themselves and return `Ok(Some(None))`.
pub(super) fn lower(lb: &mut Lb, ni: usize) -> Result<Option<Option<LT>>, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let out_shape = g.ty(node.outputs[0]).shape.clone();
    let lt = match &node.op {
        Op::Identity | Op::Reshape { .. } | Op::Cast { .. } => {
            let x = x_of(lb, ni)?;
            LT {
                shape: out_shape,
                map: x.map,
            }
        }
        Op::Transpose { perm } => {
            let x = x_of(lb, ni)?;
            let ins = strides(&x.shape);
            let os = strides(&out_shape);
            let n = x.map.len();
            let mut map = Vec::with_capacity(n);
            for o in 0..n {
                let mut idx = 0;
                for (d, &p) in perm.iter().enumerate() {
                    idx += ((o / os[d]) % out_shape[d]) * ins[p];
                }
                map.push(x.map[idx]);
            }
            LT {
                shape: out_shape,
                map,
            }
        }
        Op::Concat { axis } => {
            let parts: Vec<LT> = node
                .inputs
                .iter()
                .flatten()
                .map(|&v| lb.val(v).map(|x| lb.as_lt(&x)))
                .collect::<Result<_, _>>()?;
            let outer: usize = out_shape[..*axis].iter().product();
            let mut map = Vec::new();
            for o in 0..outer {
                for p in &parts {
                    let inner: usize = p.shape[*axis..].iter().product();
                    map.extend_from_slice(&p.map[o * inner..(o + 1) * inner]);
                }
            }
            LT {
                shape: out_shape,
                map,
            }
        }
        Op::Slice { axes } => {
            let x = x_of(lb, ni)?;
            let ins = strides(&x.shape);
            let os = strides(&out_shape);
            let n: usize = out_shape.iter().product();
            let mut map = Vec::with_capacity(n);
            for o in 0..n {
                let mut idx = 0;
                for d in 0..out_shape.len() {
                    let c = (o / os[d]) % out_shape[d];
                    let c = match axes.iter().find(|a| a.axis == d) {
                        Some(a) => (a.start + a.step * c as i64) as usize,
                        None => c,
                    };
                    idx += c * ins[d];
                }
                map.push(x.map[idx]);
            }
            LT {
                shape: out_shape,
                map,
            }
        }
        Op::Split { axis, sizes } => {
            let x = x_of(lb, ni)?;
            let outer: usize = x.shape[..*axis].iter().product();
            let inner: usize = x.shape[*axis + 1..].iter().product();
            let mut start = 0;
            for (k, &sz) in sizes.iter().enumerate() {
                let mut map = Vec::new();
                for o in 0..outer {
                    let base = o * x.shape[*axis] * inner + start * inner;
                    map.extend_from_slice(&x.map[base..base + sz * inner]);
                }
                start += sz;
                lb.vals[node.outputs[k].idx()] = Some(Val::Dyn(LT {
                    shape: g.ty(node.outputs[k]).shape.clone(),
                    map,
                }));
            }
            return Ok(Some(None));
        }
        Op::Gather { axis } => {
            // Constant indices select slices of a dynamic tensor (a multi-head split,
            // an embedding row by a constant id): data movement.
            let iv = input(lb, ni, gather::INDICES)?;
            let idx = lb.const_data(iv).ok_or_else(|| {
                unsupported(
                    g,
                    ni as u32,
                    "Gather with computed indices runs on the host (integer inputs), not on PUMA",
                )
            })?;
            let x = x_of(lb, ni)?;
            let a = *axis;
            let dim = x.shape[a] as i64;
            let outer: usize = x.shape[..a].iter().product();
            let inner: usize = x.shape[a + 1..].iter().product();
            let mut map = Vec::with_capacity(out_shape.iter().product());
            for o in 0..outer {
                for &i in &idx {
                    let i = i as i64;
                    let i = if i < 0 { i + dim } else { i };
                    if i < 0 || i >= dim {
                        return Err(unsupported(
                            g,
                            ni as u32,
                            format!("index {i} is outside axis {a} of size {dim}"),
                        ));
                    }
                    let base = (o * dim as usize + i as usize) * inner;
                    map.extend_from_slice(&x.map[base..base + inner]);
                }
            }
            LT {
                shape: out_shape,
                map,
            }
        }
        Op::Expand { .. } => {
            let x = x_of(lb, ni)?;
            let n: usize = out_shape.iter().product();
            let map = (0..n)
                .map(|o| x.map[super::lower::bcast_index(o, &out_shape, &x.shape)])
                .collect();
            LT {
                shape: out_shape,
                map,
            }
        }
        // not data movement: lower_node tries the next pass, whose last arm names it
        _ => return Ok(None),
    };
    Ok(Some(Some(lt)))
}
