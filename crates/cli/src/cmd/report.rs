//! `pimkit report`: every engine's section for a model in one HTML page + JSON + SVG/CSV.
//! The library (pimkit-driver's `report`) runs the engines and assembles the page.

use crate::error::{engine, user};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model (path or zoo:NAME); default: the built-in set
    pub model: Option<String>,
    /// Output directory
    #[arg(short = 'o', long, default_value = "pimkit-report")]
    pub out: PathBuf,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    // A bad output path fails now, not after minutes of engines.
    crate::output::create_out_dir(&a.out, "-o")?;
    let load = crate::model::load_options(&a.load, &[])?;
    let models: Vec<String> = a.model.iter().cloned().collect();
    let pb = crate::output::progress(0, "engines");
    let mut notes = vec![];
    let r = pimkit_driver::report::build(
        &models,
        &load,
        &mut |done: usize, total: usize, what: &str| {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
            pb.set_message(what.to_string());
        },
        &mut notes,
    );
    pb.finish_and_clear();
    for n in &notes {
        eprintln!("note: {n}");
    }
    let report = r.map_err(engine)?;
    report
        .write_dir(&a.out)
        .map_err(|e| user(format!("cannot write report to {}: {e}", a.out.display())))?;
    println!("wrote {}", a.out.join("index.html").display());
    Ok(())
}
