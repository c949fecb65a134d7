//! The host runs: one warm-up (or, with the perf backend, the counted run, which warms the
//! caches the same way), then `runs` timed runs with the counters off; per-nest medians.
//! The profiling cost is reported as a multiple of one CPU-only execution.

use crate::counters::{CounterSource, Counters};
use crate::error::Result;
use pimkit_loops::{NativeOptions, NativeProgram, Program, Runner, compile};
use serde::Serialize;
use std::time::Instant;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfilingCost {
    pub runs: usize,
    /// Executions of the whole program spent on profiling (warm-up/counted + timed).
    pub executions: usize,
    /// One CPU-only execution (sum of per-nest medians), ms.
    pub one_execution_ms: f64,
    /// Time spent executing for the profile (all runs, markers included), ms.
    pub profiling_ms: f64,
    /// profiling_ms / one_execution_ms.
    pub multiple: f64,
    /// C compile (0 when cached) and buffer set-up, ms: reported, not in the multiple.
    pub compile_ms: f64,
    pub setup_ms: f64,
}

pub struct HostRun {
    pub t_cpu_ns: Vec<f64>,
    /// Raw perf deltas per nest (perf backend only).
    pub perf: Option<Vec<[u64; 5]>>,
    pub cost: ProfilingCost,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    }
}

/// Compile and run the program: the counted (perf) or warm-up run, then `runs` timed runs.
pub fn host_run(p: &Program, runs: usize, source: CounterSource, vendor: &str) -> Result<HostRun> {
    host_run_with_progress(p, runs, source, vendor, &mut |_, _, _| {})
}

/// [`host_run`], calling `progress(done, total, nest)` after each nest of each timed run
/// (`total` = runs x nests; `done` 0 before the compilation).
pub fn host_run_with_progress(
    p: &Program,
    runs: usize,
    source: CounterSource,
    vendor: &str,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<HostRun> {
    let total = runs.max(1) * p.nests.len();
    progress(0, total, "compile");
    let native = compile(p, &NativeOptions::default())?;
    host_run_native(p, &native, runs, source, vendor, progress)
}

/// [`host_run_with_progress`] of a program already compiled (`native` is `p`'s code).
pub fn host_run_native(
    p: &Program,
    native: &NativeProgram,
    runs: usize,
    source: CounterSource,
    vendor: &str,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<HostRun> {
    let total = runs.max(1) * p.nests.len();
    let t0 = Instant::now();
    let mut r = Runner::new(p, native)?;
    r.set_inputs_pseudo_random(0);
    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let n = p.nests.len();
    let t_prof = Instant::now();
    let perf = if source == CounterSource::Perf {
        Some(counted_run(&mut r, n, vendor)?)
    } else {
        r.run_all();
        None
    };
    let runs = runs.max(1);
    let mut samples = vec![Vec::with_capacity(runs); n];
    let mut done = 0;
    for _ in 0..runs {
        for (i, s) in samples.iter_mut().enumerate() {
            let t = Instant::now();
            r.run_nest(i);
            s.push(t.elapsed().as_nanos() as f64);
            done += 1;
            progress(done, total, &p.nests[i].node);
        }
    }
    let profiling_ms = t_prof.elapsed().as_secs_f64() * 1e3;
    let t_cpu_ns: Vec<f64> = samples.iter_mut().map(|s| median(s)).collect();
    let one = t_cpu_ns.iter().sum::<f64>() / 1e6;
    Ok(HostRun {
        t_cpu_ns,
        perf,
        cost: ProfilingCost {
            runs,
            executions: runs + 1,
            one_execution_ms: one,
            profiling_ms,
            multiple: if one > 0.0 { profiling_ms / one } else { 0.0 },
            compile_ms: native.compile_ms,
            setup_ms,
        },
    })
}

#[cfg(all(feature = "perf", target_os = "linux"))]
fn counted_run(r: &mut Runner, n: usize, vendor: &str) -> Result<Vec<[u64; 5]>> {
    let mut g = crate::perf::CounterGroup::new(vendor)?;
    (0..n).map(|i| g.measure(|| r.run_nest(i))).collect()
}

#[cfg(not(all(feature = "perf", target_os = "linux")))]
fn counted_run(_r: &mut Runner, _n: usize, vendor: &str) -> Result<Vec<[u64; 5]>> {
    crate::perf::probe(vendor).map(|_| vec![])
}

/// Counters from perf deltas: n_rd · 64 and StoreBound per eq. (7).
pub fn perf_counters(vendor: &str, raw: &[[u64; 5]], line: u64) -> Vec<Counters> {
    raw.iter()
        .map(|v| Counters {
            offcore_read_bytes: v[0] as f64 * line as f64,
            offcore_write_bytes: 0.0,
            store_bound: crate::perf::store_bound(vendor, v),
            source: CounterSource::Perf,
        })
        .collect()
}
