//! `pimkit offload` (Torch-PIM offload rule, PIM model, hybrid time) and `pimkit calibrate`
//! (host bandwidths, T_ctx, caches; cached per machine). Library: pimkit-offload.

use crate::error::user;
use crate::model::{load_model_with, model_label};
use crate::output::print_json;
use pimkit_engine::Engine;
use pimkit_offload::Offload;
use pimkit_offload::{CounterMode, Granularity, HostCalib, Options, PimArch, host, report};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct OffloadArgs {
    /// Model: path.onnx or zoo:NAME[?k=v&...]
    pub model: String,
    /// PIM core counts (default: the arch file's, 32,64,128)
    #[arg(long, value_delimiter = ',')]
    pub cores: Vec<u32>,
    /// Counter backend: perf (hardware events), model (footprint/cache model), auto
    #[arg(long, default_value = "auto", value_parser = parse_counters)]
    pub counters: CounterMode,
    /// Granularity shown in the terminal tables (JSON always has all three)
    #[arg(long, default_value = "all", value_parser = ["all", "loop", "op", "bb"])]
    pub granularity: String,
    /// Timed runs per nest (median, 1 to 1000); 1 = one timed and one counted/warm-up execution
    #[arg(long, default_value_t = 1, value_parser = crate::bounds::int_in::<1, 1000>)]
    pub runs: usize,
    /// Size sweep like Table 4: PARAM=V1,V2,... (zoo models only). With --jobs N the sizes
    /// are built, lowered, compiled and modelled N at a time but always timed one at a
    /// time (concurrent timings would disturb each other)
    #[arg(long)]
    pub sweep: Option<String>,
    /// Write the CPU-PIM C program with offload markers and its runtime here
    #[arg(long)]
    pub emit: Option<PathBuf>,
    /// Print JSON instead of tables
    #[arg(long)]
    pub json: bool,
    /// θ in GB/s, finite and ≥ 0 (default 0.12 · B_cpu)
    #[arg(long, value_parser = crate::bounds::non_negative)]
    pub theta: Option<f64>,
    /// σ in [0, 1] (default 0.4)
    #[arg(long, value_parser = crate::bounds::fraction)]
    pub sigma: Option<f64>,
    /// PIM architecture TOML (default: arch/pim-general.toml, built in)
    #[arg(long)]
    pub arch: Option<PathBuf>,
    /// Host calibration file (default: $XDG_CACHE_HOME/pimkit/host.toml; measured if missing)
    #[arg(long)]
    pub host: Option<PathBuf>,
    /// Use the reference host values instead of measuring (reproducible figures)
    #[arg(long)]
    pub host_fixed: bool,
    /// Fuse single-use elementwise producers into their consumers before deciding (MLIR's
    /// linalg-fuse-elementwise-ops; Torch-PIM's pipeline does not fuse)
    #[arg(long)]
    pub fuse: bool,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    /// Where to cache the calibration (default: $XDG_CACHE_HOME/pimkit/host.toml)
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// Measure again even if the file exists
    #[arg(long)]
    pub force: bool,
    #[arg(long)]
    pub json: bool,
}

fn load_host(path: Option<&PathBuf>, fixed: bool, force: bool) -> anyhow::Result<HostCalib> {
    if fixed {
        return Ok(HostCalib::fixed_reference());
    }
    let p = path.cloned().unwrap_or_else(host::default_cache_path);
    host::load_or_calibrate(&p, force).map_err(conv)
}

fn conv(e: pimkit_offload::OffloadError) -> anyhow::Error {
    if e.is_user() {
        user(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// `--counters`: the library's own names.
fn parse_counters(s: &str) -> Result<CounterMode, String> {
    s.parse()
}

pub fn run_offload(a: OffloadArgs) -> anyhow::Result<()> {
    let arch: PimArch = pimkit_engine::arch::load(a.arch.as_deref()).map_err(user)?;
    // "all" or a granularity clap has already checked.
    let gran: Option<Granularity> = a.granularity.parse().ok();
    if a.runs == 0 {
        return Err(user("--runs must be at least 1"));
    }
    let host_choice = if a.host_fixed {
        pimkit_offload::HostChoice::Reference
    } else {
        pimkit_offload::HostChoice::Measured(
            a.host.clone().unwrap_or_else(host::default_cache_path),
        )
    };
    if a.host_fixed {
        // Only a calibration already on disk: --host-fixed never starts a measurement.
        let p = a.host.clone().unwrap_or_else(host::default_cache_path);
        if let Some(note) = HostCalib::load(&p)
            .ok()
            .and_then(|m| report::reference_host_mismatch(&m))
        {
            eprintln!(
                "note: --host-fixed: {note}; drop --host-fixed to judge the nests against \
                 this machine's own θ"
            );
        }
    }
    let opts = Options {
        cores: if a.cores.is_empty() {
            arch.cores.clone()
        } else {
            a.cores.clone()
        },
        counters: a.counters,
        runs: a.runs,
        theta_gbs: a.theta,
        sigma: a.sigma,
        arch,
        lower: pimkit_loops::LowerOptions {
            fuse_elementwise: a.fuse,
        },
    };
    if opts.cores.contains(&0) {
        return Err(user("--cores: core counts must be positive"));
    }
    // The sweep's syntax is checked before the (long) analysis.
    let sweep = match &a.sweep {
        None => None,
        Some(sw) => {
            let (param, vals) = sw
                .split_once('=')
                .ok_or_else(|| user(format!("--sweep '{sw}': expected PARAM=V1,V2,...")))?;
            let vals: Vec<&str> = vals.split(',').filter(|v| !v.is_empty()).collect();
            if param.is_empty() || vals.is_empty() {
                return Err(user(format!(
                    "--sweep '{sw}': expected PARAM=V1,V2,... with at least one value"
                )));
            }
            if !a.model.starts_with("zoo:") {
                return Err(user(
                    "--sweep needs a zoo:NAME model (it rebuilds the model per size)",
                ));
            }
            Some((param, vals))
        }
    };
    let g = crate::model::load_static(&a.model, &[], &a.load, &[])?;
    let eo = pimkit_offload::OffloadOptions {
        host: host_choice,
        options: opts.clone(),
        with_reference: false,
    };
    let pb = crate::output::spinner("offload");
    let out = Offload::run(
        &g,
        &opts.arch,
        &eo,
        &mut |i: usize, _: usize, what: &str| {
            pb.set_position(i as u64);
            pb.set_message(what.to_string());
        },
    );
    pb.finish_and_clear();
    let out = out.map_err(crate::error::engine)?;
    let hostc = out.analysis.host.clone();
    let analysis = &out.analysis;
    let mut emitted = None;
    if let Some(dir) = &a.emit {
        crate::output::create_out_dir(dir, "--emit")?;
        let place: Vec<bool> = analysis.nests.iter().map(|n| n.offload).collect();
        let prog = pimkit_loops::lower_with(&g, &opts.lower).map_err(|e| conv(e.into()))?;
        emitted = Some(pimkit_offload::reinsert::emit_and_check(&prog, &place, dir).map_err(conv)?);
    }
    let mut sweep_runs = vec![];
    if let Some((param, vals)) = sweep {
        let vals: Vec<String> = vals.iter().map(|v| v.to_string()).collect();
        // Sizes are built, lowered and compiled on --jobs threads, timed one at a time.
        let build = |v: &str| -> anyhow::Result<pimkit_loops::Program> {
            let g = load_model_with(&a.model, &[(param.to_string(), v.to_string())])?;
            pimkit_loops::lower_with(&g, &opts.lower).map_err(|e| conv(e.into()))
        };
        let pb = crate::output::spinner(&format!(
            "offload sweep over {param} ({} sizes)",
            vals.len()
        ));
        let r =
            pimkit_offload::sweep::run_sweep(&vals, build, &hostc, &opts).map_err(|e| match e {
                pimkit_offload::sweep::SweepError::Build { value, error } => {
                    error.context(format!("--sweep {param}={value}"))
                }
                pimkit_offload::sweep::SweepError::Offload(e) => conv(e),
            });
        pb.finish_and_clear();
        sweep_runs = r?;
    }
    if a.json {
        let arch_name = a
            .arch
            .as_ref()
            .map_or("arch/pim-general.toml".into(), |p| p.display().to_string());
        let mut v = pimkit_engine::result_json("offload", &a.model, &arch_name, &out);
        if let Some(e) = &emitted {
            v["emit"] = serde_json::to_value(e)?;
        }
        if !sweep_runs.is_empty() {
            v["sweep"] = serde_json::to_value(&sweep_runs)?;
        }
        return print_json(&v);
    }
    print!("{}", report::nest_table(analysis).to_terminal());
    println!();
    print!("{}", report::cores_table(analysis).to_terminal());
    println!();
    print!(
        "{}",
        report::granularity_table_for(analysis, gran).to_terminal()
    );
    println!();
    if let Some(p) = &analysis.profiling {
        println!(
            "{}: counters {}, θ = {:.2} GB/s, σ = {:.2}, T_ctx = {:.2} µs, B_rd = B_wb = {:.1} GB/s; profiling cost {:.2}x one CPU-only execution ({} executions)",
            model_label(&a.model),
            analysis.counter_source,
            analysis.thresholds.theta_gbs,
            analysis.thresholds.sigma,
            analysis.params.rule.t_ctx_ns / 1e3,
            analysis.params.b_move_gbs,
            p.multiple,
            p.executions
        );
    }
    if let Some(w) = report::movement_bandwidth_warning(analysis) {
        eprintln!("{w}");
    }
    if let Some(e) = &emitted {
        println!(
            "emitted {} (segments {}, transitions {} = model {}, bytes {} = model {})",
            e.dir.display(),
            e.segments,
            e.runtime_transitions,
            e.model_n_region,
            e.runtime_bytes,
            e.model_bytes
        );
    }
    if !sweep_runs.is_empty() {
        let param = a
            .sweep
            .as_deref()
            .and_then(|s| s.split_once('='))
            .map_or("n", |x| x.0);
        print!("{}", report::sweep_table(param, &sweep_runs).to_terminal());
    }
    Ok(())
}

pub fn run_calibrate(a: CalibrateArgs) -> anyhow::Result<()> {
    let p = a.path.clone().unwrap_or_else(host::default_cache_path);
    let h = load_host(Some(&p), false, a.force)?;
    if a.json {
        return print_json(&h);
    }
    println!("host calibration ({}): {}", h.source, p.display());
    println!("  CPU: {} ({})", h.cpu_model, h.vendor);
    println!(
        "  B_cpu (read) {:.2} GB/s, store {:.2} GB/s",
        h.b_read_gbs, h.b_store_gbs
    );
    println!(
        "  memory system (eq. 8 B_rd = B_wb) {:.1} GB/s",
        h.b_move_gbs()
    );
    println!(
        "  θ = 0.12 · B_cpu = {:.2} GB/s, σ = 0.40",
        host::THETA_RATIO * h.b_read_gbs
    );
    println!("  T_ctx {:.2} µs", h.t_ctx_ns / 1e3);
    println!(
        "  caches: L1D {} KiB, L2 {} KiB, LLC {} KiB, line {} B",
        h.l1d_bytes >> 10,
        h.l2_bytes >> 10,
        h.llc_bytes >> 10,
        h.line_bytes
    );
    for (b, g) in &h.store_curve {
        println!("  cold store of {:>8} B: {:.2} GB/s", b, g);
    }
    Ok(())
}
