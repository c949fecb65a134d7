//! The PUMA engine behind the common contract ([`pimkit_engine::Engine`]): compile a model
//! for the memristor-crossbar accelerator and simulate it as one program, or layer by
//! layer (the original's method for CNNs; also the fallback when the whole program does
//! not fit the architecture, with a note saying why).

use crate::{
    Arch, CompileOptions, PerLayerResult, Program, PumaResult, RunError, SimOptions, run_graph,
    run_per_layer_with,
};
use pimkit_engine::{EngineError, Headline, Progress, Section};
use pimkit_ir::{Graph, Tensor};
use serde::Serialize;
use std::collections::HashMap;

/// The PUMA engine.
pub struct Puma;

/// When to simulate layer by layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PerLayer {
    /// One program for the whole network (an error when it does not fit).
    #[default]
    Never,
    /// Layer by layer.
    Always,
    /// The whole network, or layer by layer (with a note) when that fails on the input.
    Fallback,
}

#[derive(Clone, Debug, Default)]
pub struct PumaOptions {
    pub compile: CompileOptions,
    pub sim: SimOptions,
    /// The model's inputs; deterministic random ones (seed 0) when `None`.
    pub inputs: Option<HashMap<String, Tensor>>,
    pub per_layer: PerLayer,
}

/// A whole-network run (with its outputs and program) or a per-layer one.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum PumaOutput {
    Whole {
        #[serde(flatten)]
        result: Box<PumaResult>,
        #[serde(skip)]
        outputs: Vec<Tensor>,
        #[serde(skip)]
        program: Box<Program>,
    },
    PerLayer(PerLayerResult),
}

/// Whose fault a PUMA error is: the model, options and architecture are the user's; a
/// deadlock, a fault or an inconsistent program of a program pimkit compiled is a bug.
pub fn engine_error(e: RunError) -> EngineError {
    use crate::sim::SimError as S;
    // Every variant listed: a new one must be classified here.
    match &e {
        RunError::Sim(S::Deadlock { .. } | S::Fault { .. } | S::Program(_)) => {
            EngineError::internal(e)
        }
        RunError::Sim(
            S::MissingInput(..)
            | S::InputShape { .. }
            | S::InputNaN { .. }
            | S::Options(_)
            | S::Timeout { .. },
        )
        | RunError::Compile(_)
        | RunError::Reference(_)
        | RunError::CycleOverflow(_)
        | RunError::Layer(_) => EngineError::input(e),
    }
}

impl pimkit_engine::Engine for Puma {
    const NAME: &'static str = "puma";
    type Arch = Arch;
    type Options = PumaOptions;
    type Output = PumaOutput;

    fn run(
        g: &Graph,
        arch: &Arch,
        opts: &PumaOptions,
        progress: &mut dyn Progress,
    ) -> Result<PumaOutput, EngineError> {
        let per_layer = |progress: &mut dyn Progress| {
            run_per_layer_with(
                g,
                arch,
                &opts.compile,
                &opts.sim,
                opts.inputs.clone(),
                &mut |i, n, name| progress.step(i, n, name),
            )
            .map(PumaOutput::PerLayer)
            .map_err(engine_error)
        };
        if opts.per_layer == PerLayer::Always {
            return per_layer(progress);
        }
        progress.step(0, 1, "compile and simulate");
        match run_graph(g, arch, &opts.compile, &opts.sim, opts.inputs.clone()) {
            Ok((result, outputs, program)) => Ok(PumaOutput::Whole {
                result: Box::new(result),
                outputs,
                program: Box::new(program),
            }),
            Err(e) => {
                let e = engine_error(e);
                if opts.per_layer == PerLayer::Fallback && e.is_input() {
                    let mut out = per_layer(progress)?;
                    if let PumaOutput::PerLayer(r) = &mut out {
                        r.notes.insert(
                            0,
                            format!(
                                "simulated layer by layer: the whole network does not run as one program ({})",
                                e.msg
                            ),
                        );
                    }
                    Ok(out)
                } else {
                    Err(e)
                }
            }
        }
    }

    fn section(out: &PumaOutput) -> Section {
        match out {
            PumaOutput::Whole {
                result, program, ..
            } => crate::report_section(result, Some(program)),
            PumaOutput::PerLayer(r) => crate::report::per_layer_section(r),
        }
    }

    fn headline(out: &PumaOutput) -> Headline {
        match out {
            PumaOutput::Whole { result, .. } => {
                let h = Headline::default()
                    .with("cycles", result.stats.cycles.to_string())
                    .with(
                        "energy",
                        format!("{:.3} µJ/inference", result.stats.energy_nj / 1e3),
                    )
                    .with(
                        "throughput",
                        format!("{:.0} inf/s", 1e9 / result.stats.latency_ns.max(1e-9)),
                    );
                match &result.hardware {
                    Some(hw) => h
                        .with("area", format!("{:.2} mm²", hw.area_mm2))
                        .with("efficiency", format!("{:.3} TOPS/W", hw.tops_per_w)),
                    None => h,
                }
            }
            PumaOutput::PerLayer(r) => {
                let h = Headline::default()
                    .with("cycles (per layer, summed)", r.cycles.to_string())
                    .with("energy", format!("{:.1} nJ", r.energy_nj));
                match &r.hardware {
                    Some(hw) => h
                        .with("area", format!("{:.2} mm²", hw.area_mm2))
                        .with("efficiency", format!("{:.3} TOPS/W", hw.tops_per_w)),
                    None => h,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimError;

    #[test]
    fn simulator_faults_are_bugs_and_bad_inputs_are_the_users() {
        let e = engine_error(RunError::Sim(SimError::Program("bad".into())));
        assert_eq!(e.exit_code(), 1);
        let e = engine_error(RunError::Sim(SimError::Options("--max-cycles 0".into())));
        assert_eq!(e.exit_code(), 2);
        let e = engine_error(RunError::Reference("input mismatch".into()));
        assert_eq!(e.exit_code(), 2);
    }
}
