//! Pass 1: graph IR → vector ops. Each graph tensor is tracked as a map from its
//! logical (row-major) elements to (vector value, offset), so data movement (Reshape,
//! Flatten, Transpose, Concat, Slice, padding, im2col patches) costs nothing at compile
//! time and becomes loads/copies of runs of elements in the generated code.
//!
//! The graph walk: `lower` visits the nodes in order and hands each to its pass
//! (`lower_shape`, `lower_ew`, `lower_norm`, `lower_nn`, `lower_attn`, `lower_conv`);
//! the passes share the context in `lower.rs`.

use super::lower::{LT, Lb, Val, const_f32, runs, unsupported};
use super::{CompileError, Kind, Loc, Lowered, VId};
use crate::arch::Arch;
use pimkit_ir::operand::gemm;
use pimkit_ir::{Graph, Op, ValueDef, ValueId};
use std::collections::HashMap;

pub fn lower(
    g: &Graph,
    arch: &Arch,
    opts: &super::CompileOptions,
) -> Result<Lowered, CompileError> {
    let (plan, fixed, spread) = (&opts.replicas, opts.fixed, opts.spread);
    let mut lb = Lb {
        g,
        arch,
        fmt: arch.fmt(),
        seg: arch.mvmu.xbar_size,
        ops: Vec::new(),
        vals: vec![None; g.values.len()],
        weights: Vec::new(),
        next_mvmu: 0,
        matrices: Vec::new(),
        const_cache: HashMap::new(),
        fixed,
        node: 0,
        shape_only: false,
        plan: plan.clone(),
        folded: HashMap::new(),
        spread,
        tile_words: 0,
        depthwise: opts.depthwise,
    };
    let mut inputs = Vec::new();
    for &iv in &g.inputs {
        let ty = g.ty(iv);
        if !ty.dtype.is_float() {
            return Err(CompileError::Graph {
                graph: g.name.clone(),
                msg: format!(
                    "input `{}` has type {}; PUMA takes float inputs",
                    g.value(iv).name,
                    ty
                ),
            });
        }
        let map = input_layout(&mut lb, &ty.shape);
        inputs.push((g.value(iv).name.clone(), ty.shape.clone(), map.clone()));
        lb.vals[iv.idx()] = Some(Val::Dyn(LT {
            shape: ty.shape.clone(),
            map,
        }));
    }
    for (vi, v) in g.values.iter().enumerate() {
        if let ValueDef::Const(_) = v.def {
            let mut so = false;
            let data = const_f32(g, ValueId(vi as u32), &mut so).unwrap_or_default();
            lb.vals[vi] = Some(Val::Const {
                shape: v.ty.shape.clone(),
                data,
            });
        }
    }
    let mut node_start = Vec::with_capacity(g.nodes.len() + 1);
    for (ni, _) in g.nodes.iter().enumerate() {
        lb.node = ni as u32;
        node_start.push(lb.ops.len());
        lower_node(&mut lb, ni)?;
    }
    node_start.push(lb.ops.len());
    super::rows::assign(&mut lb, &node_start);
    let mut outputs = Vec::new();
    for (i, &ov) in g.outputs.iter().enumerate() {
        let t = match lb.val(ov)? {
            Val::Dyn(t) => t,
            Val::Const { .. } => {
                return Err(CompileError::Graph {
                    graph: g.name.clone(),
                    msg: format!(
                        "output `{}` is a constant; nothing to compute",
                        g.value(ov).name
                    ),
                });
            }
        };
        let pieces = runs(t.map.iter().copied());
        let len = t.map.len() as u32;
        lb.push(Kind::Output { index: i, pieces }, len, Loc::OutputTile);
        outputs.push((g.value(ov).name.clone(), t.shape.clone()));
    }
    let shape_only = lb.shape_only || g.is_shape_only();
    Ok(Lowered {
        ops: lb.ops,
        weights: lb.weights,
        matrices: lb.matrices,
        inputs,
        outputs,
        shape_only,
        node_names: g.nodes.iter().map(|n| n.name.clone()).collect(),
        out_of_range: Vec::new(),
    })
}

/// Input vectors in the input tile. A feature map [N, C, H, W] is laid out pixel-major
/// (channels innermost, NHWC), one vector per run of whole pixels of a row, so a
/// convolution loads each kernel row's pixels with one transfer and the vectors stream
/// row by row (`rows.rs`); other inputs are split row-major into crossbar-wide vectors.
fn input_layout(lb: &mut Lb, shape: &[usize]) -> Vec<(VId, u32)> {
    let n: usize = shape.iter().product();
    let mut map = vec![(0, 0); n];
    if shape.len() == 4 && shape[2] > 1 {
        let (nb, c, h, w) = (shape[0], shape[1], shape[2], shape[3]);
        let cchunks = lb.chunks(c);
        let ppc = (lb.seg / c).max(1);
        for b in 0..nb {
            for y in 0..h {
                let mut x0 = 0;
                while x0 < w {
                    let np = ppc.min(w - x0);
                    for &(c0, cn) in &cchunks {
                        let v = lb.push(Kind::Input, (np * cn) as u32, Loc::InputTile);
                        lb.ops[v as usize].row = (b * h + y) as u32;
                        for x in x0..x0 + np {
                            for ch in c0..c0 + cn {
                                map[((b * c + ch) * h + y) * w + x] =
                                    (v, ((x - x0) * cn + ch - c0) as u32);
                            }
                        }
                    }
                    x0 += np;
                }
            }
        }
        return map;
    }
    for (s, len) in lb.chunks(n) {
        let v = lb.push(Kind::Input, len as u32, Loc::InputTile);
        for k in 0..len {
            map[s + k] = (v, k as u32);
        }
    }
    map
}

/// Lower one graph node: constant subgraphs fold at compile time; then data movement,
/// elementwise ops, normalizations, and the weighted and windowed ops.
fn lower_node(lb: &mut Lb, ni: usize) -> Result<(), CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    if fold(lb, ni)? {
        return Ok(());
    }
    for &o in &node.outputs {
        let dt = g.ty(o).dtype;
        if !dt.is_float() && !matches!(node.op, Op::Lstm(_) | Op::Gru(_)) {
            return Err(unsupported(
                g,
                ni as u32,
                format!("output type {dt} is not float; PUMA computes in 16-bit fixed point"),
            ));
        }
    }
    let result: LT = if let Some(r) = super::lower_shape::lower(lb, ni)? {
        match r {
            Some(lt) => lt,
            None => return Ok(()),
        }
    } else if let Some(lt) = super::lower_ew::lower(lb, ni)? {
        lt
    } else if let Some(lt) = super::lower_norm::lower(lb, ni)? {
        lt
    } else {
        match &node.op {
            Op::Gemm { .. } | Op::MatMul => {
                let dynamic = |i: usize| {
                    node.input(i)
                        .is_some_and(|v| matches!(lb.vals[v.idx()], Some(Val::Dyn(_))))
                };
                if matches!(node.op, Op::MatMul) && dynamic(gemm::A) && dynamic(gemm::B) {
                    super::lower_attn::dynamic_matmul(lb, ni)?
                } else {
                    super::lower_nn::matmul(lb, ni)?
                }
            }
            Op::Conv(_) => super::lower_conv::conv(lb, ni)?,
            Op::Pool(_) | Op::GlobalPool(_) => super::lower_nn::pool(lb, ni)?,
            Op::Lstm(_) => return super::lower_nn::lstm(lb, ni),
            Op::Gru(_) => return super::lower_nn::gru(lb, ni),
            other => {
                return Err(unsupported(
                    g,
                    ni as u32,
                    format!("{} is not supported by the PUMA compiler", other.name()),
                ));
            }
        }
    };
    lb.vals[node.outputs[0].idx()] = Some(Val::Dyn(result));
    Ok(())
}

/// A node whose inputs are all constants is evaluated now by the reference
/// interpreter (shape arithmetic, scale factors); its outputs become constants.
fn fold(lb: &mut Lb, ni: usize) -> Result<bool, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let ins: Vec<ValueId> = node.inputs.iter().flatten().copied().collect();
    if ins.is_empty()
        || !ins
            .iter()
            .all(|v| matches!(lb.vals[v.idx()], Some(Val::Const { .. })))
    {
        return Ok(false);
    }
    let mut sub = Graph::new(format!("{}/fold", g.name));
    let mut map = HashMap::new();
    for &v in &ins {
        if map.contains_key(&v) {
            continue;
        }
        let val = g.value(v);
        let t = match (&val.def, lb.folded.get(&v)) {
            (ValueDef::Const(Some(t)), _) | (_, Some(t)) => t.clone(),
            // a node output that was not folded: its lowered constant
            _ => match &lb.vals[v.idx()] {
                // Shape-only constants: zeros of their float type.
                Some(Val::Const { shape, data }) => {
                    pimkit_ir::Tensor::from_f32(shape.clone(), data.clone())
                }
                // fold is only called when every input is constant
                _ => unreachable!(),
            },
        };
        map.insert(v, sub.add_const(val.name.clone(), t));
    }
    let inputs: Vec<Option<ValueId>> = node.inputs.iter().map(|i| i.map(|v| map[&v])).collect();
    let names = node
        .outputs
        .iter()
        .map(|&o| g.value(o).name.clone())
        .collect();
    let outs = sub
        .add_node_named(node.name.clone(), node.op.clone(), inputs, names)
        .map_err(|e| unsupported(g, ni as u32, format!("cannot fold constant node: {e}")))?;
    sub.outputs = outs.clone();
    let r = pimkit_interp::run(&sub, &HashMap::new())
        .map_err(|e| unsupported(g, ni as u32, format!("cannot fold constant node: {e}")))?;
    for (&o, t) in node.outputs.iter().zip(r) {
        lb.vals[o.idx()] = Some(Val::Const {
            shape: t.shape.clone(),
            data: t.to_f32_vec(),
        });
        lb.folded.insert(o, t);
    }
    Ok(true)
}
