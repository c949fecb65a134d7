//! `pimkit.llm`: LLM serving on xPU + DRAM-PIM systems and greedy generation (the
//! `pimkit llm` and `pimkit llm-generate` commands; docs/llm.md).

use crate::common::{json, out_dir};
use crate::errors::{detached, user};
use pimkit_llm::{LlmOptions, Policy, Precision};
use pyo3::prelude::*;
use std::path::PathBuf;

/// `pimkit llm MODEL... --json`: a list of results, one per (model, system), in
/// model-major order; `out` writes each one's files (one folder per pair when several).
#[pyfunction]
#[pyo3(signature = (models, systems, policy=None, prompt=1024, generate=128,
    contexts=vec![512, 1024, 2048, 4096, 8192, 16384], batches=vec![1, 4, 16, 64, 256],
    weight_bits=16.0, weight_group=0, kv_bits=16.0, act_bits=16.0, pipeline=1, ignore_limits=false, dims=None, out=None))]
#[allow(clippy::too_many_arguments)]
pub fn llm_analyze(
    py: Python<'_>,
    models: Vec<String>,
    systems: Vec<String>,
    policy: Option<String>,
    prompt: usize,
    generate: usize,
    contexts: Vec<usize>,
    batches: Vec<usize>,
    weight_bits: f64,
    weight_group: usize,
    kv_bits: f64,
    act_bits: f64,
    pipeline: usize,
    ignore_limits: bool,
    dims: Option<std::collections::HashMap<String, usize>>,
    out: Option<PathBuf>,
) -> PyResult<String> {
    detached(py, || {
        let policy = Policy::from_option("policy", policy.as_deref()).map_err(user)?;
        let opts = LlmOptions {
            policy,
            prompt,
            generate,
            contexts,
            batches,
            precision: Precision {
                weight_bits,
                kv_bits,
                act_bits,
                weight_group,
            },
            pipeline,
            ignore_limits,
        };
        let lo = pimkit_onnx::LoadOptions {
            dims: dims.unwrap_or_default(),
            ..Default::default()
        };
        let outs = pimkit_driver::llm::analyze(&models, &systems, &opts, &lo, &mut Vec::new())?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            for o in &outs {
                let d = if outs.len() > 1 {
                    dir.join(pimkit_llm::section::folder_name(o))
                } else {
                    dir.clone()
                };
                out_dir(&d, "out")?;
                pimkit_llm::section::write_dir(o, &d)
                    .map_err(|e| user(format!("out {}: {e}", d.display())))?;
            }
        }
        let js: Vec<serde_json::Value> = outs.iter().map(pimkit_llm::section::json).collect();
        json(&js)
    })
}

/// `pimkit llm-generate MODEL --prompt ... --json`.
#[pyfunction]
#[pyo3(signature = (model, prompt, tokens=8))]
pub fn llm_generate(
    py: Python<'_>,
    model: String,
    prompt: Vec<i64>,
    tokens: usize,
) -> PyResult<String> {
    detached(py, || {
        let g = pimkit_driver::llm::generate_tokens(&model, &prompt, tokens)?;
        json(&g)
    })
}
