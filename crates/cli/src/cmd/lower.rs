//! `pimkit lower` and `pimkit profile`: the Torch-PIM candidate space of a model (loop
//! nests with their static quantities) and its native per-nest host times.
//! Owned by the loops engine (crates/loops); the library does the work.

use crate::error::user;
use crate::output::print_json;
use pimkit_loops::{LoopsError, Program};
use pimkit_report::Block;

#[derive(clap::Args, Debug)]
pub struct LowerArgs {
    /// Path to an .onnx file or zoo:NAME[?k=v&...]
    pub model: String,
    /// Print the loop-nest IR in its stable text form
    #[arg(long, conflicts_with = "json")]
    pub dump: bool,
    /// Print JSON (a top-level `nests` list) instead of tables
    #[arg(long)]
    pub json: bool,
    /// Fuse single-use elementwise producers into their consumers (MLIR's
    /// linalg-fuse-elementwise-ops; Torch-PIM's pipeline does not fuse)
    #[arg(long)]
    pub fuse: bool,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

#[derive(clap::Args, Debug)]
pub struct ProfileArgs {
    /// Path to an .onnx file or zoo:NAME[?k=v&...]
    pub model: String,
    /// Timed runs after the warm-up (1 to 1000); each nest's time is the median over runs
    #[arg(long, default_value_t = 5, value_parser = crate::bounds::int_in::<1, 1000>)]
    pub runs: usize,
    /// Untimed warm-up runs (0 to 1000)
    #[arg(long, default_value_t = 1, value_parser = crate::bounds::int_in::<0, 1000>)]
    pub warmup: usize,
    /// Print JSON (a top-level `nests` list with `t_cpu_ns`) instead of tables
    #[arg(long)]
    pub json: bool,
    /// Fuse single-use elementwise producers into their consumers (as `lower --fuse`)
    #[arg(long)]
    pub fuse: bool,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

/// Unsupported ops, bad graphs and a missing compiler are the user's to fix (exit 2).
fn map_err(e: LoopsError) -> anyhow::Error {
    match e {
        LoopsError::Unsupported { .. }
        | LoopsError::Node { .. }
        | LoopsError::CompilerMissing { .. }
        | LoopsError::Input(_) => user(e),
        other => anyhow::Error::new(other),
    }
}

fn load(model: &str, fuse: bool, la: &crate::model::LoadArgs) -> anyhow::Result<Program> {
    let g = crate::model::load_static(model, &[], la, &[])?;
    let o = pimkit_loops::LowerOptions {
        fuse_elementwise: fuse,
    };
    // A spinner (elapsed time) while a model of thousands of nodes lowers.
    let pb = crate::output::spinner("lower");
    pb.set_message(format!("{} nodes", g.nodes.len()));
    let p = pimkit_loops::lower_with(&g, &o);
    pb.finish_and_clear();
    p.map_err(map_err)
}

fn print_tables(p: &Program, prof: Option<&pimkit_loops::Profile>) {
    let s = pimkit_loops::report_section(p, prof);
    for b in &s.blocks {
        if let Block::Table(t) = b {
            println!("{}", t.to_terminal());
        }
    }
}

pub fn run_lower(a: LowerArgs) -> anyhow::Result<()> {
    let p = load(&a.model, a.fuse, &a.load)?;
    if a.dump {
        print!("{}", p.dump());
        return Ok(());
    }
    if a.json {
        return print_json(&pimkit_engine::result_json(
            "loops",
            &a.model,
            "host",
            &pimkit_loops::report(&p, None),
        ));
    }
    print_tables(&p, None);
    let (rd, wr): (u64, u64) = p
        .stats()
        .iter()
        .fold((0, 0), |(r, w), s| (r + s.read_bytes, w + s.write_bytes));
    println!(
        "{}: {} nests, {} buffers, {:.1} MiB read, {:.1} MiB written",
        p.name,
        p.nests.len(),
        p.allocs.len(),
        rd as f64 / 1048576.0,
        wr as f64 / 1048576.0
    );
    Ok(())
}

pub fn run_profile(a: ProfileArgs) -> anyhow::Result<()> {
    if a.runs == 0 {
        return Err(user("--runs must be at least 1"));
    }
    let p = load(&a.model, a.fuse, &a.load)?;
    let o = pimkit_loops::ProfileOptions {
        runs: a.runs,
        warmup: a.warmup,
        ..Default::default()
    };
    let pb = crate::output::progress(0, "nests timed");
    let prof = pimkit_loops::profile_with_progress(&p, &o, &mut |done, total, what| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
        pb.set_message(what.to_string());
    });
    pb.finish_and_clear();
    let prof = prof.map_err(map_err)?;
    if a.json {
        return print_json(&pimkit_engine::result_json(
            "loops",
            &a.model,
            "host",
            &pimkit_loops::report(&p, Some(&prof)),
        ));
    }
    print_tables(&p, Some(&prof));
    println!(
        "{}: {} nests, host time {:.3} ms (median of {} runs per nest), compile {:.2} s{}",
        p.name,
        p.nests.len(),
        prof.total_ns / 1e6,
        prof.runs,
        prof.compile_ms / 1e3,
        if prof.cached { " (cached)" } else { "" }
    );
    Ok(())
}
