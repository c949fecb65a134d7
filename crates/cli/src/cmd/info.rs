use crate::output::{print_json, si};
use pimkit_ir::{Graph, GraphStats};
use pimkit_report::Table;
use serde::Serialize;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Path to an .onnx file or zoo:NAME[?k=v&...]
    pub model: String,
    /// Print JSON instead of tables
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

#[derive(Serialize)]
pub struct Io {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<usize>,
}

#[derive(Serialize)]
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
    let io = |ids: &[pimkit_ir::ValueId]| {
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

/// Terminal rendering of [`Info`] (also used by the report).
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

pub fn run(a: Args) -> anyhow::Result<()> {
    let (g, auto_shapes) = crate::model::load_model_shapes(&a.model, &a.load)?;
    let i = info(&g);
    if a.json {
        return print_json(&i);
    }
    for t in tables(&i) {
        println!("{}", t.to_terminal());
    }
    println!(
        "{}: {} nodes, {} parameters ({} bytes), {} MACs{}",
        i.name,
        i.nodes,
        si(i.params as f64),
        si(i.param_bytes as f64),
        si(i.macs as f64),
        if i.shape_only && !auto_shapes {
            " (shape only: no weight data)"
        } else {
            ""
        }
    );
    Ok(())
}
