//! The offload engine behind the common contract ([`pimkit_engine::Engine`]): lower a
//! model to loop nests, time them natively, place each by Torch-PIM's two-stage rule and
//! estimate the hybrid time. The decision depends on the host (θ from its bandwidths,
//! off-core traffic from its last-level cache), so besides the chosen host the output
//! can carry the same nests judged against the paper's reference host, with a note for
//! every nest whose decision flips because its working set fits this host's cache.

use crate::{Analysis, HostCalib, OffloadError, Options, PimArch, report};
use pimkit_engine::{EngineError, Headline, Progress, Section};
use pimkit_ir::Graph;
use serde::Serialize;
use std::path::PathBuf;

/// The offload engine.
pub struct Offload;

/// Which host the nests are judged against.
#[derive(Clone, Debug, Default)]
pub enum HostChoice {
    /// The paper's reference host (`--host-fixed`; reproducible).
    #[default]
    Reference,
    /// This machine, calibrated once and cached in this file (measured when missing).
    Measured(PathBuf),
    /// A given calibration.
    Given(HostCalib),
}

#[derive(Clone, Debug, Default)]
pub struct OffloadOptions {
    pub host: HostChoice,
    /// Rule and lowering settings (its `arch` is replaced by the engine's arch).
    pub options: Options,
    /// Also judge the measured nest times against the reference host.
    pub with_reference: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct OffloadOutput {
    #[serde(flatten)]
    pub analysis: Analysis,
    /// The same nests (same measured times) judged against the reference host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<Analysis>,
    pub notes: Vec<String>,
}

/// Whose fault an offload error is (the engine's own rule, `OffloadError::is_user`).
pub fn engine_error(e: OffloadError) -> EngineError {
    if e.is_user() {
        EngineError::input(e)
    } else {
        EngineError::internal(e)
    }
}

/// A note per nest whose placement differs between this host and the reference host
/// because its data stays in this host's larger last-level cache.
pub fn cache_notes(here: &Analysis, reference: &Analysis) -> Vec<String> {
    let mut notes = vec![];
    for (a, b) in here.nests.iter().zip(&reference.nests) {
        if a.offload != b.offload && a.offcore_read_bytes < b.offcore_read_bytes {
            notes.push(format!(
                "nest {} ({}) is {} here but {} on the reference host: its data stays in this \
                 machine's {:.0} MiB last-level cache (the reference host has {:.0} MiB), so it \
                 reads {:.1} MiB past the cache instead of {:.1} MiB and the memory-bound test \
                 (C1/C2) judges it differently; `--host-fixed` reproduces the paper's setting",
                a.id,
                a.label,
                if a.offload {
                    "offloaded"
                } else {
                    "kept on the host"
                },
                if b.offload {
                    "offloaded"
                } else {
                    "kept on the host"
                },
                here.host.llc_bytes as f64 / 1048576.0,
                reference.host.llc_bytes as f64 / 1048576.0,
                a.offcore_read_bytes / 1048576.0,
                b.offcore_read_bytes / 1048576.0,
            ));
        }
    }
    notes
}

impl pimkit_engine::Engine for Offload {
    const NAME: &'static str = "offload";
    type Arch = PimArch;
    type Options = OffloadOptions;
    type Output = OffloadOutput;

    fn run(
        g: &Graph,
        arch: &PimArch,
        opts: &OffloadOptions,
        progress: &mut dyn Progress,
    ) -> Result<OffloadOutput, EngineError> {
        let host = match &opts.host {
            HostChoice::Reference => HostCalib::fixed_reference(),
            HostChoice::Measured(p) => {
                crate::host::load_or_calibrate(p, false).map_err(engine_error)?
            }
            HostChoice::Given(h) => h.clone(),
        };
        let mut o = opts.options.clone();
        o.arch = arch.clone();
        progress.step(0, 2, "lower");
        let p = pimkit_loops::lower_with(g, &o.lower).map_err(|e| engine_error(e.into()))?;
        // Per nest while timing (a 20,000-nest model takes a while), then "done".
        let mut steps = 0;
        let analysis = crate::run_program_with_progress(&p, &host, &o, &mut |d, t, nest| {
            steps = t;
            if d == 0 {
                progress.step(0, t, nest) // the compilation of the nests
            } else {
                progress.step(d, t, &format!("time {nest}"))
            }
        })
        .map_err(engine_error)?;
        let mut notes = vec![];
        let reference = (opts.with_reference && host.source != "fixed").then(|| {
            let times: Vec<f64> = analysis.nests.iter().map(|n| n.t_cpu_ns).collect();
            let mut b = crate::analyze_with_times(&p, &times, &HostCalib::fixed_reference(), &o);
            b.workload = format!("{} (reference host)", b.workload);
            b
        });
        if let Some(r) = &reference {
            notes.extend(cache_notes(&analysis, r));
            if let Some(n) = report::reference_host_mismatch(&host) {
                notes.push(format!(
                    "the reference-host tables: read them with care: {n}"
                ));
            }
        }
        progress.step(steps, steps, "done");
        Ok(OffloadOutput {
            analysis,
            reference,
            notes,
        })
    }

    fn section(out: &OffloadOutput) -> Section {
        let mut list = vec![out.analysis.clone()];
        list.extend(out.reference.clone());
        let mut s = report::report_section(&list, &[]);
        if out.reference.is_some() {
            s.note(format!(
                "Side by side: the first set of tables judges the nests against this machine \
                 ({}), the second the same measured times against the reference host of \
                 `--host-fixed` (the paper's platform, docs/offload.md).",
                out.analysis.host.cpu_model
            ));
        }
        for n in &out.notes {
            s.note(n.clone());
        }
        s
    }

    fn headline(out: &OffloadOutput) -> Headline {
        let a = &out.analysis;
        let off = a.nests.iter().filter(|n| n.offload).count();
        let mut h =
            Headline::default().with("offloaded nests", format!("{off} of {}", a.nests.len()));
        if let Some(c) = a.cores.last() {
            h = h.with(
                format!("hybrid speedup at {} cores", c.cores),
                format!("{:.2}x", c.speedup),
            );
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_errors_exit_2_and_system_errors_exit_1() {
        let e = engine_error(OffloadError::Usage("--cores 0".into()));
        assert_eq!(e.exit_code(), 2);
        let e = engine_error(OffloadError::Reinsert("compiler crashed".into()));
        assert_eq!(e.exit_code(), 1);
    }
}
