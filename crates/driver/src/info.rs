//! A model's facts: inputs, outputs, op counts, parameters and MACs (`pimkit info`, the
//! report's model section, `Model.info()` in Python).

use pimkit_ir::{Graph, GraphStats, ValueId};
use pimkit_report::Table;
use serde::Serialize;

#[derive(Clone, Debug, Serialize)]
pub struct Io {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
}

/// `pimkit info --json`.
#[derive(Clone, Debug, Serialize)]
pub struct Info {
    pub name: String,
    pub inputs: Vec<Io>,
    pub outputs: Vec<Io>,
    pub nodes: usize,
    pub ops: std::collections::BTreeMap<String, usize>,
    pub params: u64,
    pub param_bytes: u64,
    pub macs: u64,
    pub shape_only: bool,
}

pub fn info(g: &Graph) -> Info {
    let io = |ids: &[ValueId]| {
        ids.iter()
            .map(|&v| Io {
                name: g.value(v).name.clone(),
                dtype: g.ty(v).dtype.to_string(),
                shape: g.ty(v).shape.clone(),
            })
            .collect()
    };
    let s = GraphStats::of(g);
    Info {
        name: g.name.clone(),
        inputs: io(&g.inputs),
        outputs: io(&g.outputs),
        nodes: s.nodes,
        ops: s.ops,
        params: s.params,
        param_bytes: s.param_bytes,
        macs: s.macs,
        shape_only: g.is_shape_only(),
    }
}

/// The inputs/outputs and operator tables of [`Info`].
pub fn tables(i: &Info) -> Vec<Table> {
    let mut io = Table::new("inputs and outputs", &["kind", "name", "dtype", "shape"]);
    for (kind, list) in [("input", &i.inputs), ("output", &i.outputs)] {
        for v in list {
            io.push(vec![
                kind.into(),
                v.name.clone(),
                v.dtype.clone(),
                format!("{:?}", v.shape),
            ]);
        }
    }
    let mut ops = Table::new("operators", &["op", "count"]);
    for (op, n) in &i.ops {
        ops.push(vec![op.clone(), n.to_string()]);
    }
    vec![io, ops]
}

/// Human-friendly large counts: 1.82 G, 11.7 M, 950 k.
pub fn si(n: f64) -> String {
    let a = n.abs();
    if a >= 1e9 {
        format!("{:.2} G", n / 1e9)
    } else if a >= 1e6 {
        format!("{:.2} M", n / 1e6)
    } else if a >= 1e3 {
        format!("{:.1} k", n / 1e3)
    } else {
        format!("{n}")
    }
}

/// min, max, mean of a tensor as f64 (for summaries); NaN elements are skipped by min and
/// max, and all three are NaN for an empty or all-NaN tensor (never a placeholder value).
pub fn summary(t: &pimkit_ir::Tensor) -> (f64, f64, f64) {
    let v = t.to_f64_vec();
    let (lo, hi) = v
        .iter()
        .fold((f64::NAN, f64::NAN), |(a, b), &x| (a.min(x), b.max(x)));
    (lo, hi, v.iter().sum::<f64>() / v.len() as f64)
}
