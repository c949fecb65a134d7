//! pimkit-offload: the Torch-PIM offload engine (torch-pim.txt §4.3-5.4). A lowered
//! program (pimkit-loops) is timed natively on the host, its counters come from perf or
//! from a footprint/cache model, the two-stage rule (equations 1-7) places each nest,
//! and equations (8)-(9) with a PIM-side model give the hybrid time per core count, at
//! loop / operator / basic-block granularity, next to the best placement (oracle).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let g: pimkit_ir::Graph = unimplemented!();
//! let opts = pimkit_offload::Options::default();
//! let host = pimkit_offload::host::HostCalib::fixed_reference();
//! let a = pimkit_offload::run_graph(&g, &host, &opts)?;
//! println!("{}", pimkit_offload::report::terminal(&a));
//! # Ok(()) }
//! ```

pub mod analysis;
pub mod arch;
pub mod cache;
pub mod counters;
pub mod engine;
mod error;
pub mod host;
pub mod movement;
pub mod perf;
pub mod pim;
pub mod pimcost;
pub mod plan;
mod probes;
pub mod reinsert;
pub mod report;
pub mod rule;
pub mod sweep;
pub mod timing;
pub mod workload;

pub use analysis::{Analysis, analyze};
pub use arch::PimArch;
pub use counters::{CounterMode, CounterSource, Counters};
pub use engine::{HostChoice, Offload, OffloadOptions, OffloadOutput};
pub use error::{OffloadError, Result};
pub use host::{HostCalib, Thresholds};
pub use plan::Granularity;
pub use report::report_section;
pub use workload::Workload;

use pimkit_loops::Program;

/// Options of one offload analysis.
#[derive(Clone, Debug)]
pub struct Options {
    pub cores: Vec<u32>,
    pub counters: CounterMode,
    pub runs: usize,
    pub theta_gbs: Option<f64>,
    pub sigma: Option<f64>,
    pub arch: PimArch,
    /// Lowering choices (`run_graph`); the default is Torch-PIM's unfused pipeline.
    pub lower: pimkit_loops::LowerOptions,
}

impl Default for Options {
    fn default() -> Self {
        let arch = PimArch::default();
        Options {
            cores: arch.cores.clone(),
            counters: CounterMode::Auto,
            runs: 1,
            theta_gbs: None,
            sigma: None,
            arch,
            lower: Default::default(),
        }
    }
}

/// Lower, time (and count) on the host, then analyze.
pub fn run_graph(g: &pimkit_ir::Graph, host: &HostCalib, o: &Options) -> Result<Analysis> {
    let p = pimkit_loops::lower_with(g, &o.lower)?;
    run_program(&p, host, o)
}

/// Time (and count) a lowered program on the host, then analyze.
pub fn run_program(p: &Program, host: &HostCalib, o: &Options) -> Result<Analysis> {
    run_program_with_progress(p, host, o, &mut |_, _, _| {})
}

/// [`run_program`], calling `progress(done, total, nest)` per nest timed (see
/// [`timing::host_run_with_progress`]).
pub fn run_program_with_progress(
    p: &Program,
    host: &HostCalib,
    o: &Options,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Analysis> {
    let source = counters::resolve(o.counters, &host.vendor)?;
    let run = timing::host_run_with_progress(p, o.runs, source, &host.vendor, progress)?;
    Ok(analyze_run(p, &run, source, host, o))
}

/// The counters (perf's or the model's) and the offload analysis of one timed run.
pub(crate) fn analyze_run(
    p: &Program,
    run: &timing::HostRun,
    source: CounterSource,
    host: &HostCalib,
    o: &Options,
) -> Analysis {
    let ctr = match &run.perf {
        Some(raw) if source == CounterSource::Perf => {
            timing::perf_counters(&host.vendor, raw, host.line_bytes)
        }
        // no perf counters read, or the model was asked for
        _ => counters::model_counters(p, host, &run.t_cpu_ns),
    };
    let w = Workload::new(p, &run.t_cpu_ns, &ctr, &o.arch);
    let mut a = analyze(
        &w,
        host,
        &o.arch,
        Thresholds::new(host, o.theta_gbs, o.sigma),
        &o.cores,
    );
    a.profiling = Some(run.cost.clone());
    a
}

/// Analyze with given per-nest host times (no execution): model counters. For tests,
/// fixtures and docs on a noisy machine.
pub fn analyze_with_times(
    p: &Program,
    t_cpu_ns: &[f64],
    host: &HostCalib,
    o: &Options,
) -> Analysis {
    let ctr = counters::model_counters(p, host, t_cpu_ns);
    let w = Workload::new(p, t_cpu_ns, &ctr, &o.arch);
    analyze(
        &w,
        host,
        &o.arch,
        Thresholds::new(host, o.theta_gbs, o.sigma),
        &o.cores,
    )
}
