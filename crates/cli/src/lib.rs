//! The `pimkit` command line over the pimkit libraries. Each subcommand lives in
//! `cmd/<name>.rs`; this file parses arguments and maps errors to exit statuses. It is a
//! library so that the fuzz crate reaches the real clap definitions ([`command`],
//! [`parse`]) and the real entry point ([`main`]); src/main.rs only calls [`main`].

mod bounds;
mod cmd;
mod error;
mod model;
mod output;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(name = "pimkit", version, about = "Compile, map and simulate neural networks for processing-in-memory", long_about = None)]
struct Cli {
    /// Worker threads for executing models (default: all cores; results do not depend on it)
    #[arg(long, global = true, value_name = "N", value_parser = bounds::threads)]
    threads: Option<usize>,
    /// Independent items run at once (default: all cores): the points of `xbar sweep`,
    /// `vpu roofline` and `vpu table3`, the candidates of `xbar nas`, the sizes of
    /// `offload --sweep` (compiled and modelled in parallel, timed one at a time). Results
    /// do not depend on it; while items run in parallel their kernels share these N
    /// threads (--threads applies with --jobs 1)
    #[arg(long, global = true, value_name = "N", value_parser = bounds::jobs)]
    jobs: Option<usize>,
    #[command(subcommand)]
    cmd: Command,
    /// Which onnxruntime CPU kernels the interpreter reproduces bit for bit: auto (this
    /// CPU's), sse2, avx2 (AVX2+FMA without VNNI), avx2-vnni, neon (see docs/interpreter.md)
    #[arg(long, global = true, default_value = "auto", value_name = "VARIANT")]
    ort_kernels: String,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Inputs, outputs, op counts, parameters and MACs of a model
    Info(cmd::info::Args),
    /// Run the reference interpreter on a model
    Exec(cmd::exec::Args),
    /// Quantize a float model to onnxruntime's QOperator format (the VPU engine's input)
    Quantize(cmd::quantize::Args),
    /// Print the graph IR in its stable text form
    Dump(cmd::dump::Args),
    /// The built-in model zoo
    #[command(subcommand)]
    Zoo(cmd::zoo::ZooCmd),
    /// Run every engine on a model and write an HTML/JSON/SVG/CSV report
    Report(cmd::report::Args),
    /// Lower a model to parallel loop nests (Torch-PIM candidate space)
    Lower(cmd::lower::LowerArgs),
    /// Time every loop nest natively on the host
    Profile(cmd::lower::ProfileArgs),
    /// Decide host vs PIM per loop nest and estimate hybrid time (Torch-PIM)
    Offload(cmd::offload::OffloadArgs),
    /// Measure host bandwidths, context-switch cost and caches (cached per machine)
    Calibrate(cmd::offload::CalibrateArgs),
    /// RRAM crossbar mapping (RNC)
    #[command(subcommand)]
    Xbar(cmd::xbar::XbarCmd),
    /// PUMA memristor-crossbar accelerator: compile and simulate
    #[command(subcommand)]
    Puma(cmd::puma::PumaCmd),
    /// Near-memory vector units (QUINN): run quantized models, rooflines
    #[command(subcommand)]
    Vpu(cmd::vpu::VpuCmd),
    /// LLM serving on xPU + DRAM-PIM systems: prefill, decode, KV cache, tokens/s, J/token
    Llm(cmd::llm::Args),
    /// Greedy generation of a decoder with the interpreter, feeding its own KV cache back
    LlmGenerate(cmd::llm::GenerateArgs),
}

fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let k = pimkit_interp::OrtKernels::parse(&cli.ort_kernels).ok_or_else(|| {
        error::user(format!(
            "--ort-kernels {}: use auto, sse2, avx2, avx2-vnni or neon",
            cli.ort_kernels
        ))
    })?;
    pimkit_interp::set_ort_kernels(k);
    if let Some(n) = cli.threads {
        pimkit_interp::set_threads(n).map_err(|e| anyhow::anyhow!("--threads {n}: {e}"))?;
    }
    if let Some(n) = cli.jobs {
        pimkit_engine::jobs::set_jobs(n);
    }
    match cli.cmd {
        Command::Info(a) => cmd::info::run(a),
        Command::Exec(a) => cmd::exec::run(a),
        Command::Quantize(a) => cmd::quantize::run(a),
        Command::Dump(a) => cmd::dump::run(a),
        Command::Zoo(c) => cmd::zoo::run(c),
        Command::Report(a) => cmd::report::run(a),
        Command::Lower(a) => cmd::lower::run_lower(a),
        Command::Profile(a) => cmd::lower::run_profile(a),
        Command::Offload(a) => cmd::offload::run_offload(a),
        Command::Calibrate(a) => cmd::offload::run_calibrate(a),
        Command::Xbar(c) => cmd::xbar::run(c),
        Command::Puma(c) => cmd::puma::run(c),
        Command::Vpu(c) => cmd::vpu::run(c),
        Command::Llm(a) => cmd::llm::run(a),
        Command::LlmGenerate(a) => cmd::llm::run_generate(a),
    }
}

/// The clap definition of the whole command line (for introspection: subcommands, flags,
/// possible values).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Parse `args` (program name first) as `pimkit` would, without running anything: `Ok`
/// for a command line that parses, else clap's error (render it with [`usage_error`]).
pub fn parse<I, T>(args: I) -> Result<(), clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    Cli::try_parse_from(args).map(|_| ())
}

/// The text `pimkit` prints for a command line clap rejects, and its exit status: help
/// and version go to stdout with 0; a usage error goes to stderr with 2, its first line in
/// the one error style (`pimkit: error: <where>: <what>`), quoted values clipped.
pub fn usage_error(e: &clap::Error) -> (String, u8) {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => (text, 0),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => (
            format!("pimkit: error: a subcommand is required; pick one of these:\n{text}"),
            2,
        ),
        _ => {
            let body = text.strip_prefix("error: ").unwrap_or(&text);
            let mut lines = body.lines();
            let first = error::clip_quoted(lines.next().unwrap_or(""));
            let rest: Vec<String> = lines.map(error::clip_quoted).collect();
            (format!("pimkit: error: {first}\n{}\n", rest.join("\n")), 2)
        }
    }
}

/// The whole `pimkit` program on `args` (program name first): parse, run, print the
/// error, and the exit status (0, 2 for bad input or usage, 1 for a bug, 130 on Ctrl-C).
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // Rust ignores SIGPIPE, which turns a closed pipe (`pimkit ... | head`) into a panic in
    // println!; the default action ends the process quietly as other Unix tools do.
    // SAFETY: called once at start-up, before any other thread exists.
    #[cfg(unix)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // Keep freed memory in the heap instead of returning it to the kernel: a model run
    // frees and re-allocates tensors of the same sizes node after node, and with glibc's
    // defaults every large tensor is a fresh mmap whose pages fault in one by one (about
    // a third of a small CNN's run time). onnxruntime gets the same effect from its arena.
    // SAFETY: mallopt only adjusts allocator parameters; called before any allocation
    // that could depend on them matters for correctness (none does).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let (text, code) = usage_error(&e);
            if code == 0 {
                print!("{text}");
            } else {
                eprint!("{text}");
            }
            return ExitCode::from(code);
        }
    };
    // Ctrl-C or SIGTERM: remove the temporary files of outputs being written (they are
    // renamed into place only when complete) and exit 130, as shells report SIGINT.
    // Finished outputs stay; nothing is left half written under a final name.
    let _ = ctrlc::set_handler(|| {
        eprintln!("pimkit: interrupted; unfinished output files removed");
        pimkit_ir::fsio::remove_temps_and_exit(130)
    });
    // A panic is a bug in pimkit: report it as an internal error, never as a crash dump.
    // The exception is println! failing (a full disk behind `> file`): an I/O error.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") {
            eprintln!("pimkit: error: cannot write the output: {msg}");
            std::process::exit(1);
        }
        eprintln!("pimkit: internal error (this is a bug, please report it): {info}");
    }));
    match std::panic::catch_unwind(|| dispatch(cli)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!(
                "pimkit: error: {}",
                error::clip_quoted(&error::chain_message(&e))
            );
            if error::is_user_error(&e) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
        Err(_) => ExitCode::from(1),
    }
}
