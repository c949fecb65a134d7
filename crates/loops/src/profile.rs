//! Timing run (Torch-PIM §4.3): execute the native program N times after warm-up with
//! a timing marker around each nest (no counters), accumulate each nest's elapsed time
//! per run, and report the median and spread over runs.

use crate::error::Result;
use crate::ir::Program;
use crate::native::{NativeOptions, Runner, compile};
use serde::Serialize;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct ProfileOptions {
    /// Timed runs (at least 1).
    pub runs: usize,
    /// Untimed runs first (caches, page faults).
    pub warmup: usize,
    pub native: NativeOptions,
    /// Seed of the pseudo-random inputs.
    pub seed: u64,
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            runs: 5,
            warmup: 1,
            native: NativeOptions::default(),
            seed: 0,
        }
    }
}

/// Per-nest timing over the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NestTiming {
    pub id: usize,
    /// Median over runs of the nest's time in one program execution (ns).
    pub t_cpu_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    /// Interquartile range over runs (ns).
    pub iqr_ns: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Profile {
    pub runs: usize,
    pub warmup: usize,
    pub nests: Vec<NestTiming>,
    /// Sum of the per-nest medians (ns).
    pub total_ns: f64,
    /// C compile time (0 when the library came from the cache).
    pub compile_ms: f64,
    pub cached: bool,
    /// Wall time of the whole profile call, compile included (ms).
    pub wall_ms: f64,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Profile with default options and `runs` timed runs.
pub fn profile(p: &Program, runs: usize) -> Result<Profile> {
    profile_with(
        p,
        &ProfileOptions {
            runs,
            ..Default::default()
        },
    )
}

pub fn profile_with(p: &Program, o: &ProfileOptions) -> Result<Profile> {
    profile_with_progress(p, o, &mut |_, _, _| {})
}

/// [`profile_with`], calling `progress(done, total, nest)` as it goes: once before the
/// compilation (`done` 0), then after every nest of every warm-up and timed run
/// (`total` = (warm-up + runs) x nests), so a caller can draw a bar for a long model.
pub fn profile_with_progress(
    p: &Program,
    o: &ProfileOptions,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Profile> {
    let t0 = Instant::now();
    let runs = o.runs.max(1);
    let n = p.nests.len();
    let total = (o.warmup + runs) * n;
    progress(0, total, "compile");
    let native = compile(p, &o.native)?;
    let mut r = Runner::new(p, &native)?;
    r.set_inputs_pseudo_random(o.seed);
    let mut done = 0;
    for _ in 0..o.warmup {
        for (i, nest) in p.nests.iter().enumerate() {
            r.run_nest(i);
            done += 1;
            progress(done, total, &nest.node);
        }
    }
    let mut samples = vec![Vec::with_capacity(runs); n];
    for _ in 0..runs {
        for (i, s) in samples.iter_mut().enumerate() {
            let t = Instant::now();
            r.run_nest(i);
            s.push(t.elapsed().as_nanos() as f64);
            done += 1;
            progress(done, total, &p.nests[i].node);
        }
    }
    let nests: Vec<NestTiming> = samples
        .into_iter()
        .enumerate()
        .map(|(id, mut s)| {
            s.sort_by(|a, b| a.total_cmp(b));
            NestTiming {
                id,
                t_cpu_ns: quantile(&s, 0.5),
                min_ns: s[0],
                max_ns: s[s.len() - 1],
                iqr_ns: quantile(&s, 0.75) - quantile(&s, 0.25),
            }
        })
        .collect();
    Ok(Profile {
        runs,
        warmup: o.warmup,
        total_ns: nests.iter().map(|x| x.t_cpu_ns).sum(),
        nests,
        compile_ms: native.compile_ms,
        cached: native.cached,
        wall_ms: t0.elapsed().as_secs_f64() * 1e3,
    })
}
