//! Size sweeps (torch-pim.txt Table 4): one model rebuilt at several sizes, each analysed.
//!
//! The sizes run on `--jobs` threads ([`pimkit_engine::jobs`]) except for the host timing:
//! building, lowering and compiling each size's program run in parallel, then the
//! programs are **timed one at a time** (concurrent runs would share the caches, the
//! memory bandwidth and the cores, and change the very times the rule judges), then the
//! counters models and the offload analyses run in parallel again. The result is in the
//! order of the sizes; apart from the measured times (which vary run to run anyway) it
//! does not depend on the number of threads.

use crate::{Analysis, HostCalib, OffloadError, Options, counters, timing};
use pimkit_loops::{NativeOptions, Program};

/// A sweep's failure: building one size's model (the caller's error, with the size), or
/// the offload engine's.
#[derive(Debug)]
pub enum SweepError<E> {
    Build { value: String, error: E },
    Offload(OffloadError),
}

impl<E> From<OffloadError> for SweepError<E> {
    fn from(e: OffloadError) -> Self {
        SweepError::Offload(e)
    }
}

/// Analyse the program `build(v)` gives for every `v` of `values` (see the module doc
/// for what runs in parallel); `(v, analysis)` in the order of `values`.
pub fn run_sweep<E: Send>(
    values: &[String],
    build: impl Fn(&str) -> std::result::Result<Program, E> + Sync,
    host: &HostCalib,
    o: &Options,
) -> std::result::Result<Vec<(String, Analysis)>, SweepError<E>> {
    let source = counters::resolve(o.counters, &host.vendor)?;
    let prepared = pimkit_engine::jobs::par_map(values, |v| {
        let p = build(v).map_err(|error| SweepError::Build {
            value: v.clone(),
            error,
        })?;
        let native = pimkit_loops::compile(&p, &NativeOptions::default())
            .map_err(|e| SweepError::Offload(e.into()))?;
        Ok((p, native))
    });
    let prepared = prepared
        .into_iter()
        .collect::<std::result::Result<Vec<_>, SweepError<E>>>()?;
    // Timed serially, on the calling thread.
    let mut runs = Vec::with_capacity(prepared.len());
    for (p, native) in &prepared {
        runs.push(timing::host_run_native(
            p,
            native,
            o.runs,
            source,
            &host.vendor,
            &mut |_, _, _| {},
        )?);
    }
    let items: Vec<(&Program, timing::HostRun)> =
        prepared.iter().map(|(p, _)| p).zip(runs).collect();
    let analyses = pimkit_engine::jobs::par_map(&items, |(p, run)| {
        crate::analyze_run(p, run, source, host, o)
    });
    Ok(values.iter().cloned().zip(analyses).collect())
}
