//! `pimkit lower` and `pimkit profile`: the Torch-PIM candidate space of a model (loop
//! nests with their static quantities) and its native per-nest host times.
//! Owned by the loops engine (crates/loops); the library does the work.

use crate::error::user;
use crate::output::print_json;
use pimkit_engine::{Engine, HostArch};
use pimkit_loops::{Loops, LoopsOptions, LoopsOutput};
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

/// The loops engine on the model: lowered, and timed natively when `profile` is given
/// (a bar per nest timed on a terminal).
fn run_engine(
    model: &str,
    fuse: bool,
    la: &crate::model::LoadArgs,
    profile: Option<pimkit_loops::ProfileOptions>,
) -> anyhow::Result<LoopsOutput> {
    let g = crate::model::load_static(model, &[], la, &[])?;
    let opts = LoopsOptions {
        lower: pimkit_loops::LowerOptions {
            fuse_elementwise: fuse,
        },
        profile,
    };
    let pb = if opts.profile.is_some() {
        crate::output::progress(0, "nests timed")
    } else {
        crate::output::spinner("lowering to loop nests")
    };
    let r = Loops::run(
        &g,
        &HostArch {},
        &opts,
        &mut |done: usize, total: usize, what: &str| {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
            pb.set_message(what.to_string());
        },
    );
    pb.finish_and_clear();
    r.map_err(crate::error::engine)
}

fn json(model: &str, out: &LoopsOutput) -> anyhow::Result<()> {
    print_json(&pimkit_engine::result_json(Loops::NAME, model, "host", out))
}

fn print_tables(out: &LoopsOutput) {
    for b in &Loops::section(out).blocks {
        if let Block::Table(t) = b {
            println!("{}", t.to_terminal());
        }
    }
}

pub fn run_lower(a: LowerArgs) -> anyhow::Result<()> {
    let out = run_engine(&a.model, a.fuse, &a.load, None)?;
    let p = &out.program;
    if a.dump {
        print!("{}", p.dump());
        return Ok(());
    }
    if a.json {
        return json(&a.model, &out);
    }
    print_tables(&out);
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
    let o = pimkit_loops::ProfileOptions {
        runs: a.runs,
        warmup: a.warmup,
        ..Default::default()
    };
    let out = run_engine(&a.model, a.fuse, &a.load, Some(o))?;
    if a.json {
        return json(&a.model, &out);
    }
    print_tables(&out);
    let (p, prof) = (&out.program, out.profile.as_ref());
    if let Some(prof) = prof {
        println!(
            "{}: {} nests, host time {:.3} ms (median of {} runs per nest), compile {:.2} s{}",
            p.name,
            p.nests.len(),
            prof.total_ns / 1e6,
            prof.runs,
            prof.compile_ms / 1e3,
            if prof.cached { " (cached)" } else { "" }
        );
    }
    Ok(())
}
