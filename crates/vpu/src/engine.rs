//! The VPU engine behind the common contract ([`pimkit_engine::Engine`]): run a quantized
//! (QOperator) model on the simulated near-memory vector units, layer by layer, checking
//! every kernel against the reference interpreter. A float model is quantized first with
//! the built-in quantizer (onnxruntime's quantize_static scheme on random calibration
//! data) when [`VpuOptions::quantize_float`] is set, and the output says so.

use crate::Arch;
use crate::error::VpuError;
use crate::network::{NetOptions, NetworkResult, run_network_with};
use pimkit_engine::{EngineError, Headline, Progress, Section};
use pimkit_ir::{Graph, Op, Tensor};
use serde::Serialize;
use std::collections::HashMap;

/// The VPU engine.
pub struct Vpu;

#[derive(Clone, Debug, Default)]
pub struct VpuOptions {
    pub net: NetOptions,
    /// The model's inputs; deterministic random ones (seed 0) when `None`.
    pub inputs: Option<HashMap<String, Tensor>>,
    /// Quantize a float model (no QLinearConv/QLinearMatMul/QGemm) before running it.
    pub quantize_float: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct VpuOutput {
    #[serde(flatten)]
    pub result: NetworkResult,
    /// The model was float and was quantized by the built-in quantizer for this run.
    pub quantized_here: bool,
}

/// Whose fault a VPU error is: the architecture, the model and the settings are the
/// user's (exit 2); an out-of-range simulated memory access is a simulator bug (exit 1).
pub fn engine_error(e: VpuError) -> EngineError {
    if is_internal(&e) {
        EngineError::internal(e)
    } else {
        EngineError::input(e)
    }
}

/// A simulator fault (exit 1) rather than the user's model or architecture (exit 2).
/// Every variant listed: a new one must be classified here. A cycle overflow comes from
/// an architecture whose costs or bandwidths leave the documented ranges; a sweep
/// point's error is classified by what went wrong at that point.
fn is_internal(e: &VpuError) -> bool {
    match e {
        // TrialLost never leaves the network's trial loop: one reaching here is a bug.
        VpuError::Memory { .. } | VpuError::Other(_) | VpuError::TrialLost => true,
        VpuError::AtPoint { source, .. } => is_internal(source),
        VpuError::ArchFile(_)
        | VpuError::BadArch { .. }
        | VpuError::Kernel { .. }
        | VpuError::VrfTooSmall { .. }
        | VpuError::Node { .. }
        | VpuError::CycleOverflow => false,
    }
}

/// Does the graph have a layer the VPUs run?
pub fn is_quantized(g: &Graph) -> bool {
    g.nodes.iter().any(|n| {
        matches!(
            n.op,
            Op::QLinearConv(_) | Op::QLinearMatMul | Op::QGemm { .. }
        )
    })
}

impl pimkit_engine::Engine for Vpu {
    const NAME: &'static str = "vpu";
    type Arch = Arch;
    type Options = VpuOptions;
    type Output = VpuOutput;

    fn run(
        g: &Graph,
        arch: &Arch,
        opts: &VpuOptions,
        progress: &mut dyn Progress,
    ) -> Result<VpuOutput, EngineError> {
        let quantize = opts.quantize_float && !is_quantized(g);
        let owned;
        let g = if quantize {
            owned = pimkit_zoo::quantize::quantize_static(
                g,
                &pimkit_zoo::quantize::QuantOptions::default(),
                8,
                0,
            )
            .map_err(|e| {
                EngineError::input(format!("quantizing the float model for the VPUs: {e}"))
            })?;
            &owned
        } else {
            g
        };
        pimkit_interp::check_memory(g).map_err(EngineError::input)?;
        let inputs = match &opts.inputs {
            Some(i) => i.clone(),
            None => pimkit_interp::random_inputs(g, 0),
        };
        let n = g.nodes.len();
        let mut result = run_network_with(g, &inputs, arch, &opts.net, &mut |i, _, name| {
            progress.step(i, n, name)
        })
        .map_err(engine_error)?;
        if quantize {
            result.notes.insert(
                0,
                "the model is float: it was quantized here with pimkit's built-in quantizer \
                 (onnxruntime's quantize_static scheme, u8 activations, per-tensor s8 weights, 8 \
                 random calibration samples); quantize it yourself (`pimkit quantize`) with real \
                 calibration data for meaningful outputs"
                    .into(),
            );
        }
        Ok(VpuOutput {
            result,
            quantized_here: quantize,
        })
    }

    fn section(out: &VpuOutput) -> Section {
        let mut s = Section::new(
            "vpu",
            format!("Near-memory vector units (QUINN): {}", out.result.model),
        );
        crate::report::network_blocks(&mut s, &out.result);
        s.json = serde_json::to_value(out).unwrap_or_default();
        s
    }

    fn headline(out: &VpuOutput) -> Headline {
        let r = &out.result;
        Headline::default()
            .with("cycles", format!("{:.1} M", r.cycles as f64 / 1e6))
            .with(
                "off-chip",
                format!("{:.2} MiB", r.offchip_bytes as f64 / 1048576.0),
            )
            .with("energy", format!("{:.3} J", r.energy_j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_memory_faults_are_bugs_and_settings_are_the_users() {
        let e = engine_error(VpuError::Memory {
            addr: 0,
            len: 4,
            size: 0,
        });
        assert_eq!(e.exit_code(), 1);
        let e = engine_error(VpuError::BadArch {
            field: "vpus",
            msg: "0".into(),
        });
        assert_eq!(e.exit_code(), 2);
        assert_eq!(engine_error(VpuError::CycleOverflow).exit_code(), 2);
    }

    #[test]
    fn a_sweep_point_keeps_the_kind_of_its_cause() {
        let at = |source| VpuError::AtPoint {
            point: "conv sweep, point L1".into(),
            source: Box::new(source),
        };
        let bug = at(VpuError::Memory {
            addr: 8,
            len: 4,
            size: 8,
        });
        assert_eq!(engine_error(bug).exit_code(), 1);
        let user = at(VpuError::VrfTooSmall {
            kernel: "conv",
            msg: "tile".into(),
        });
        let e = engine_error(user);
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .starts_with("conv sweep, point L1: kernel conv")
        );
    }
}
