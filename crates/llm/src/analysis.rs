//! One model on one system over context lengths and batch sizes: decode-step time,
//! tokens/s and J/token per (context, batch); the prefill of the prompt; end-to-end
//! generation of N tokens after it; the largest batch that fits.

use crate::sim::{self, Policy, Precision, StepCost};
use crate::system::System;
use crate::workload::Workload;
use serde::Serialize;

/// What to evaluate.
#[derive(Clone, Debug, Serialize)]
pub struct LlmOptions {
    /// `None`: AttAcc's `attn-pim` on a system with PIM, `xpu` on one without.
    pub policy: Option<Policy>,
    /// Prompt length (prefill tokens).
    pub prompt: usize,
    /// Tokens generated after the prompt (the end-to-end figure).
    pub generate: usize,
    /// Context lengths (cached + new positions) of the decode-step grid.
    pub contexts: Vec<usize>,
    pub batches: Vec<usize>,
    pub precision: Precision,
    /// Pipeline stages (layers split evenly over groups of devices; 1: tensor parallelism
    /// over every device). [`sim::pipelined`].
    pub pipeline: usize,
    /// Compute contexts beyond the model's and points whose weights or KV cache do not fit
    /// (marked `fits = false`) instead of refusing them (simulators such as AttAcc's
    /// enforce neither: its GPT-3 runs 2048 + 2048 positions).
    pub ignore_limits: bool,
}

impl Default for LlmOptions {
    fn default() -> Self {
        LlmOptions {
            policy: None,
            prompt: 1024,
            generate: 128,
            contexts: vec![512, 1024, 2048, 4096, 8192, 16384],
            batches: vec![1, 4, 16, 64, 256],
            precision: Precision {
                weight_bits: 16.0,
                kv_bits: 16.0,
                act_bits: 16.0,
                weight_group: 0,
            },
            pipeline: 1,
            ignore_limits: false,
        }
    }
}

/// One (context, batch) point of the decode grid.
#[derive(Clone, Debug, Serialize)]
pub struct DecodePoint {
    pub context: usize,
    pub batch: usize,
    /// Weights and this batch's KV cache fit the memory they are placed in.
    pub fits: bool,
    pub step_s: f64,
    pub tokens_per_s: f64,
    pub j_per_token: f64,
    /// Seconds of the step on the xPUs, in PIM and on links.
    pub xpu_s: f64,
    pub pim_s: f64,
    pub link_s: f64,
}

/// Prefill of the prompt, then `generate` decode steps, for one batch size.
#[derive(Clone, Debug, Serialize)]
pub struct GenerationPoint {
    pub batch: usize,
    pub fits: bool,
    pub prefill_s: f64,
    pub decode_s: f64,
    /// Mean time per generated token of one sequence (decode time / generated tokens).
    pub time_per_token_s: f64,
    /// Generated tokens per second over the whole run (prefill included).
    pub tokens_per_s: f64,
    pub j_per_token: f64,
    /// Decode only (AttAcc's figures): batch / mean decode-step time, and mean decode-step
    /// energy / batch.
    pub decode_tokens_per_s: f64,
    pub decode_j_per_token: f64,
}

/// Memory the model needs and the system offers.
#[derive(Clone, Debug, Serialize)]
pub struct Memory {
    pub weight_bytes: f64,
    /// KV cache bytes per sequence per position.
    pub kv_bytes_per_position: f64,
    /// Capacity holding the weights, and the one holding the KV cache.
    pub weight_capacity: f64,
    pub kv_capacity: f64,
    /// Weights and cache share one memory (unless attention or the FC layers run in PIM).
    pub shared: bool,
    /// Largest batch whose KV cache fits at prompt + generate positions (0: the weights
    /// alone do not fit).
    pub max_batch: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct LlmOutput {
    pub engine: &'static str,
    pub model: String,
    pub arch: String,
    pub system: System,
    pub policy: Policy,
    pub options: LlmOptions,
    pub workload: Workload,
    pub memory: Memory,
    pub decode: Vec<DecodePoint>,
    pub generation: Vec<GenerationPoint>,
    /// The decode step at the largest grid context and batch that fit, by class.
    pub breakdown: Option<StepCost>,
    pub totals: serde_json::Value,
    pub notes: Vec<String>,
}

impl Memory {
    /// Do the weights and the caches of `batch` sequences at `positions` fit?
    pub fn fits(&self, batch: usize, positions: usize) -> bool {
        let kv = batch as f64 * positions as f64 * self.kv_bytes_per_position;
        let beside = if self.shared { self.weight_bytes } else { 0.0 };
        self.weight_bytes <= self.weight_capacity && beside + kv <= self.kv_capacity
    }
    /// The largest batch whose KV cache fits at `positions` (0: the weights alone do not
    /// fit).
    pub fn max_batch_at(&self, positions: usize) -> usize {
        if self.weight_bytes > self.weight_capacity {
            return 0;
        }
        let beside = if self.shared { self.weight_bytes } else { 0.0 };
        let n = (self.kv_capacity - beside) / (self.kv_bytes_per_position * positions as f64);
        n.floor().clamp(0.0, 1e12) as usize
    }
}

fn memory(w: &Workload, s: &System, policy: Policy, o: &LlmOptions) -> Memory {
    // Resident: the streamed FC weights at their precision, every other constant
    // (embeddings, norms) at the activations'.
    let weight_bytes = o.precision.weight_bytes(w.weight_elems)
        + (w.resident_elems - w.weight_elems).max(0.0) * o.precision.act_bits / 8.0;
    let kv = w.kv_elems_per_position * o.precision.kv_bits / 8.0;
    let (xpu, pim) = (s.xpu_bytes(), s.pim_bytes());
    // Weights live where the FC layers run; the cache where attention runs. Unused PIM
    // memory is plain memory of the system (it holds what the xPUs read).
    let (wcap, kcap, shared) = match policy {
        Policy::AttnPim if pim > 0.0 => (xpu, pim, false),
        Policy::FcPim if pim > 0.0 => (pim, xpu, false),
        _ => (xpu + pim, xpu + pim, true),
    };
    let mut m = Memory {
        weight_bytes,
        kv_bytes_per_position: kv,
        weight_capacity: wcap,
        kv_capacity: kcap,
        shared,
        max_batch: 0,
    };
    m.max_batch = m.max_batch_at(o.prompt + o.generate);
    m
}

/// Evaluate `w` on `s`.
pub fn analyze(
    w: &Workload,
    s: &System,
    arch: &str,
    o: &LlmOptions,
    progress: &mut dyn pimkit_engine::Progress,
) -> LlmOutput {
    // A model that stores its weights quantized (MatMulNBits) is costed at its own bits
    // unless the options ask for others.
    let with_model_bits;
    let o = match &w.weight_quant {
        Some(q) if o.precision.weight_bits == 16.0 && o.precision.weight_group == 0 => {
            with_model_bits = LlmOptions {
                precision: Precision {
                    weight_bits: q.bits,
                    weight_group: q.group,
                    ..o.precision
                },
                ..o.clone()
            };
            &with_model_bits
        }
        _ => o,
    };
    let policy = o.policy.unwrap_or(if s.pim.is_some() {
        Policy::AttnPim
    } else {
        Policy::Xpu
    });
    // Contexts beyond the positions the model was made for are left out (a note says so).
    let beyond: Vec<usize> = match w.max_context {
        Some(max) if !o.ignore_limits => o.contexts.iter().copied().filter(|&l| l > max).collect(),
        _ => Vec::new(),
    };
    let contexts: Vec<usize> = o
        .contexts
        .iter()
        .copied()
        .filter(|l| !beyond.contains(l))
        .collect();
    let mem = memory(w, s, policy, o);
    let p = &o.precision;
    let total = contexts.len() * o.batches.len() + o.batches.len();
    let mut done = 0;
    let mut decode = Vec::new();
    let mut breakdown: Option<StepCost> = None;
    for &l in &contexts {
        for &b in &o.batches {
            let st = sim::pipelined(w, s, o.pipeline, policy, p, b, 1, l);
            let ok = mem.fits(b, l);
            decode.push(DecodePoint {
                context: l,
                batch: b,
                fits: ok,
                step_s: st.time_s,
                tokens_per_s: b as f64 / st.time_s,
                j_per_token: st.energy_j / b as f64,
                xpu_s: st.time_at(sim::Place::Xpu),
                pim_s: st.time_at(sim::Place::Pim),
                link_s: st.time_at(sim::Place::Link),
            });
            if ok {
                breakdown = Some(st);
            }
            done += 1;
            progress.step(done, total, "decode grid");
        }
    }
    let mut generation = Vec::new();
    for &b in &o.batches {
        // Prefill: every prompt token attends to the prompt (the graph's full masked
        // score matrix), on the xPUs unless the policy is `auto` or `all-pim` (a system
        // like CENT's has no xPU to prefill on).
        let pre_policy = match policy {
            Policy::Auto | Policy::TorchPim | Policy::AllPim => policy,
            _ => Policy::Xpu,
        };
        let pre = sim::pipelined(w, s, o.pipeline, pre_policy, p, b, o.prompt, o.prompt);
        let (mut dt, mut de) = (0.0, 0.0);
        for i in 0..o.generate {
            let st = sim::pipelined(w, s, o.pipeline, policy, p, b, 1, o.prompt + i + 1);
            dt += st.time_s;
            de += st.energy_j;
        }
        let tokens = (b * o.generate.max(1)) as f64;
        generation.push(GenerationPoint {
            batch: b,
            fits: mem.fits(b, o.prompt + o.generate),
            prefill_s: pre.time_s,
            decode_s: dt,
            time_per_token_s: dt / o.generate.max(1) as f64,
            tokens_per_s: tokens / (pre.time_s + dt),
            j_per_token: (pre.energy_j + de) / tokens,
            decode_tokens_per_s: if dt > 0.0 { tokens / dt } else { 0.0 },
            decode_j_per_token: if dt > 0.0 { de / tokens } else { 0.0 },
        });
        done += 1;
        progress.step(done, total, "generation");
    }
    let best = generation
        .iter()
        .filter(|g| g.fits)
        .max_by(|a, b| a.tokens_per_s.total_cmp(&b.tokens_per_s));
    let totals = serde_json::json!({
        "weight_gb": mem.weight_bytes / 1e9,
        "max_batch": mem.max_batch,
        "best_tokens_per_s": best.map(|g| g.tokens_per_s),
        "best_batch": best.map(|g| g.batch),
        "j_per_token_at_best": best.map(|g| g.j_per_token),
    });
    let overlap = s
        .pim
        .as_ref()
        .is_some_and(|p| p.head_pipelining || p.ffn_split);
    let mut notes = vec![if overlap {
        "op classes run one after another, except AttAcc's overlaps this system enables (head pipelining, FFN split; docs/llm.md)".to_string()
    } else {
        "op classes run one after another (no overlap between places)".to_string()
    }];
    if let Some(q) = &w.weight_quant {
        notes.push(format!(
            "the model stores {} FC layers at {} bits in blocks of {} (MatMulNBits); weights costed at {} bits, groups of {} ({})",
            q.layers,
            q.bits,
            q.group,
            o.precision.weight_bits,
            o.precision.weight_group,
            if o.precision.weight_bits == q.bits { "the model's" } else { "--weight-bits given" }
        ));
    }
    if !beyond.is_empty() {
        notes.push(format!(
            "contexts {} left out: {} was made for {} positions (--ignore-limits keeps them)",
            beyond
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            w.model,
            w.max_context.unwrap_or(0)
        ));
    }
    if let Some(st) = breakdown.as_ref().filter(|st| !st.rule.is_empty()) {
        let calls: Vec<String> = st
            .rule
            .iter()
            .map(|r| {
                let d = &r.decision;
                let why = match d.rejected_at {
                    0 => String::new(),
                    1 => format!(
                        " (work: C1 {} C2 {})",
                        if d.c1 { "yes" } else { "no" },
                        if d.c2 { "yes" } else { "no" }
                    ),
                    _ => format!(" (memory: read {:.0} GB/s, C3/C4 no)", d.bw_read_gbs),
                };
                format!("{} {}{why}", r.class, if d.offload { "pim" } else { "xpu" })
            })
            .collect();
        notes.push(format!(
            "Torch-PIM's rule at context {}, batch {}: {}",
            st.positions,
            st.batch,
            calls.join(", ")
        ));
    }
    if o.pipeline > 1 {
        let d = sim::Devices::stage(s, o.pipeline);
        notes.push(format!(
            "{} pipeline stages of {} layers or fewer, each on {} PIM device(s) and {} xPU(s); a batch goes through them in micro-batches of ceil(batch / {}), so a step lasts one micro-batch's latency through every stage",
            o.pipeline,
            w.layers.div_ceil(o.pipeline),
            sig3(d.pim),
            sig3(d.xpu),
            o.pipeline
        ));
    }
    if mem.max_batch == 0 {
        notes.push(format!(
            "the weights ({:.1} GB) do not fit the {:.1} GB that holds them on {}",
            mem.weight_bytes / 1e9,
            mem.weight_capacity / 1e9,
            s.name
        ));
    }
    LlmOutput {
        engine: "llm",
        model: w.model.clone(),
        arch: arch.to_string(),
        system: s.clone(),
        policy,
        options: o.clone(),
        workload: w.clone(),
        memory: mem,
        decode,
        generation,
        breakdown,
        totals,
        notes,
    }
}

/// Every workload on every system (`(spec, system)`), in parallel over the pairs
/// (`pimkit --jobs`); results in model-major order.
pub fn sweep(
    workloads: &[Workload],
    systems: &[(String, System)],
    o: &LlmOptions,
) -> Vec<LlmOutput> {
    let pairs: Vec<(usize, usize)> = (0..workloads.len())
        .flat_map(|m| (0..systems.len()).map(move |s| (m, s)))
        .collect();
    pimkit_engine::jobs::par_map(&pairs, |&(m, s)| {
        let (spec, sys) = &systems[s];
        analyze(&workloads[m], sys, spec, o, &mut pimkit_engine::NoProgress)
    })
}

/// A device count or share, short: 4, 0.333.
fn sig3(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v}")
    } else {
        format!("{v:.3}")
    }
}
