//! `pimkit info`: a model's inputs, outputs, op counts, parameters and MACs
//! (pimkit-driver's `info`).

use crate::output::print_json;
use pimkit_driver::info::{info, si, tables};

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
