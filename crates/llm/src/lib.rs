//! pimkit-llm: generative LLM inference on PIM. A decoder graph with its KV cache (a
//! Hugging Face export with past key/values, or a shape-only zoo model of a published
//! configuration) gives the work of prefill and of each decode step per op class
//! ([`workload`]); a system of xPUs and DRAM-PIM devices ([`system`], `arch/llm/`) and a
//! placement policy give time and energy per class ([`sim`]); [`analysis`] sweeps context
//! length and batch into tokens/s, J/token, the largest batch that fits and end-to-end
//! generation. [`generate`] runs greedy generation with the reference interpreter,
//! feeding the model's own cache back (the functional check). docs/llm.md.

pub mod analysis;
pub mod generate;
pub mod section;
pub mod sim;
pub mod system;
pub mod workload;

pub use analysis::{LlmOptions, LlmOutput, analyze};
pub use sim::{Place, Policy, Precision};
pub use system::{Placement, System};
pub use workload::{OpClass, WeightQuant, Workload, WorkloadError, extract};

use pimkit_engine::{Engine, EngineError, Headline, Progress, Section};
use pimkit_ir::Graph;

/// The LLM serving engine behind the common contract.
pub struct Llm;

impl Engine for Llm {
    const NAME: &'static str = "llm";
    type Arch = System;
    type Options = LlmOptions;
    type Output = LlmOutput;

    fn run(
        g: &Graph,
        arch: &System,
        opts: &LlmOptions,
        progress: &mut dyn Progress,
    ) -> Result<LlmOutput, EngineError> {
        check_options(opts).map_err(EngineError::input)?;
        let w = extract(g).map_err(EngineError::input)?;
        check_workload(opts, &w).map_err(EngineError::input)?;
        let out = analyze(&w, arch, &arch.name, opts, progress);
        check_fit(&out).map_err(EngineError::input)?;
        Ok(out)
    }

    fn section(out: &LlmOutput) -> Section {
        section::section(out)
    }

    fn headline(out: &LlmOutput) -> Headline {
        section::headline(out)
    }
}

/// Options a user can get wrong, with what to do.
pub fn check_options(o: &LlmOptions) -> Result<(), String> {
    if o.contexts.is_empty() || o.contexts.contains(&0) {
        return Err("--context: give context lengths of at least 1, e.g. 1024,2048".into());
    }
    if o.batches.is_empty() || o.batches.contains(&0) {
        return Err("--batch: give batch sizes of at least 1, e.g. 1,16,64".into());
    }
    if o.prompt == 0 {
        return Err("--prompt: give a prompt of at least 1 token".into());
    }
    if o.contexts.iter().chain(&o.batches).any(|&v| v > 1 << 24)
        || o.prompt > 1 << 24
        || o.generate > 1 << 20
    {
        return Err("--context/--batch/--prompt/--generate: values above 2^24 (2^20 generated tokens) are not supported".into());
    }
    if o.pipeline == 0 || o.pipeline > 4096 {
        return Err(format!("--pipeline {}: give 1..=4096 stages", o.pipeline));
    }
    let p = &o.precision;
    for (name, v) in [
        ("--weight-bits", p.weight_bits),
        ("--kv-bits", p.kv_bits),
        ("--act-bits", p.act_bits),
    ] {
        if !(1.0..=32.0).contains(&v) {
            return Err(format!("{name} {v}: use 1..=32"));
        }
    }
    Ok(())
}

/// Options that must agree with the model: a layer per pipeline stage at least, contexts
/// (and prompt + generated tokens) within the positions the model was made for.
pub fn check_workload(o: &LlmOptions, w: &Workload) -> Result<(), String> {
    if o.pipeline > w.layers {
        return Err(format!(
            "--pipeline {}: {} has {} layers; give at most {} stages",
            o.pipeline, w.model, w.layers, w.layers
        ));
    }
    if let Some(max) = w.max_context.filter(|_| !o.ignore_limits) {
        // Contexts beyond the model's are left out of the grid (with a note); none left is
        // an error.
        if o.contexts.iter().all(|&l| l > max) {
            let shortest = o.contexts.iter().copied().min().unwrap_or(0);
            return Err(format!(
                "--context {shortest}: {} was made for {max} positions; give contexts of at most {max}, or --ignore-limits",
                w.model
            ));
        }
        if o.prompt + o.generate > max {
            return Err(format!(
                "--prompt {} + --generate {} = {} positions: {} was made for {max}; give a prompt and generated tokens of at most {max} together, or --ignore-limits",
                o.prompt,
                o.generate,
                o.prompt + o.generate,
                w.model
            ));
        }
    }
    Ok(())
}

/// Something requested must fit the system's memory (unless `ignore_limits`): the
/// weights, and the KV cache of at least one requested batch at one requested context or
/// at prompt + generated positions. The error says what fits.
pub fn check_fit(out: &LlmOutput) -> Result<(), String> {
    let o = &out.options;
    if o.ignore_limits || out.decode.iter().any(|p| p.fits) || out.generation.iter().any(|g| g.fits)
    {
        return Ok(());
    }
    let m = &out.memory;
    let what = format!("{} on {}", out.model, out.system.name);
    let hint = "or --ignore-limits to compute it anyway";
    if m.max_batch == 0 {
        return Err(format!(
            "{what}: the weights ({:.1} GB) do not fit the {:.1} GB that holds them (policy {}); use a system with more memory or fewer weight bits, {hint}",
            m.weight_bytes / 1e9,
            m.weight_capacity / 1e9,
            out.policy.name()
        ));
    }
    let shortest = o.contexts.iter().copied().min().unwrap_or(1);
    Err(format!(
        "{what}: no requested batch fits: at most {} sequences of {shortest} positions (the shortest context) and {} of {} (prompt + generate) fit the {:.1} GB that holds the KV cache; give --batch within those, {hint}",
        m.max_batch_at(shortest),
        m.max_batch,
        o.prompt + o.generate,
        m.kv_capacity / 1e9
    ))
}
