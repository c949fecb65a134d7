//! Test helpers: a mapping without pimkit-xbar (uniform row chunks), zoo models, configs.
#![allow(dead_code)]

use pimkit_analog::layer::LayerMap;
use pimkit_analog::{Config, Geometry, MatMap};
use pimkit_ir::{Graph, NodeId, Op};
use std::collections::HashMap;

/// Every node with a constant weight operand, cut into `rows`-row, `cols`-output arrays.
pub fn plan(g: &Graph, rows: usize, cols: usize) -> Vec<LayerMap> {
    let mut out = Vec::new();
    let konst = |n: &pimkit_ir::Node, i: usize| {
        n.inputs
            .get(i)
            .copied()
            .flatten()
            .filter(|&v| g.is_const(v))
    };
    for (ni, n) in g.nodes.iter().enumerate() {
        let node = NodeId(ni as u32);
        let uni = |k: usize| MatMap::uniform(k, rows, cols);
        let (left, mats) = match &n.op {
            Op::Conv(_) | Op::ConvInteger(_) | Op::QLinearConv(_) => {
                let wi = if matches!(n.op, Op::QLinearConv(_)) {
                    3
                } else {
                    1
                };
                let Some(w) = konst(n, wi) else { continue };
                let s = &g.ty(w).shape;
                (false, vec![uni(s[1..].iter().product())])
            }
            Op::MatMul
            | Op::MatMulInteger
            | Op::Gemm { .. }
            | Op::QLinearMatMul
            | Op::QGemm { .. } => {
                let (ta, tb) = match n.op {
                    Op::Gemm {
                        trans_a, trans_b, ..
                    }
                    | Op::QGemm {
                        trans_a, trans_b, ..
                    } => (trans_a, trans_b),
                    _ => (false, false),
                };
                let (ai, bi) = if matches!(n.op, Op::QLinearMatMul | Op::QGemm { .. }) {
                    (0, 3)
                } else {
                    (0, 1)
                };
                if let Some(b) = konst(n, bi) {
                    let s = &g.ty(b).shape;
                    if s.len() != 2 {
                        continue;
                    }
                    (false, vec![uni(if tb { s[1] } else { s[0] })])
                } else if let Some(a) = konst(n, ai) {
                    let s = &g.ty(a).shape;
                    if s.len() != 2 {
                        continue;
                    }
                    (true, vec![uni(if ta { s[0] } else { s[1] })])
                } else {
                    continue;
                }
            }
            Op::Lstm(_) | Op::Gru(_) => {
                let (Some(w), Some(r)) = (konst(n, 1), konst(n, 2)) else {
                    continue;
                };
                let (sw, sr) = (&g.ty(w).shape, &g.ty(r).shape);
                (
                    false,
                    (0..sw[0]).flat_map(|_| [uni(sw[2]), uni(sr[2])]).collect(),
                )
            }
            _ => continue,
        };
        out.push(LayerMap {
            node,
            weight_left: left,
            mats,
        });
    }
    out
}

pub fn zoo(spec: &str) -> Graph {
    let (name, params) = pimkit_zoo::parse_spec(spec).unwrap();
    pimkit_zoo::build(&name, &params).unwrap()
}

pub fn geom(cell_bits: u32, differential: bool) -> Geometry {
    Geometry {
        rows: 128,
        weight_bits: 8,
        cell_bits,
        input_bits: 8,
        dac_bits: 1,
        differential,
    }
}

pub fn inputs(g: &Graph, n: usize) -> Vec<HashMap<String, pimkit_ir::Tensor>> {
    (0..n)
        .map(|i| pimkit_interp::random_inputs(g, i as u64))
        .collect()
}

pub fn ideal(cell_bits: u32, differential: bool) -> Config {
    Config::ideal(geom(cell_bits, differential))
}
