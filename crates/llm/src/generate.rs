//! Greedy generation with the reference interpreter, feeding the model's own KV cache
//! back: the functional check that a decoder export runs as a generator (prefill, then
//! one token per step), and that the work `pimkit llm` prices is what each step does.
//!
//! pimkit's graphs have static shapes, so every step is the graph loaded at that step's
//! shapes (the caller's `load`: the importer with the step's input shapes for a file, the
//! zoo with `batch`/`seq`/`ctx` for a zoo decoder).

use crate::workload::{self, Workload};
use pimkit_ir::{DType, Graph, Tensor};
use serde::Serialize;
use std::collections::HashMap;

/// The shapes of one step: `tokens` new tokens of one sequence after `ctx` cached ones.
#[derive(Clone, Debug)]
pub struct StepShapes {
    pub tokens: usize,
    pub ctx: usize,
    /// Every graph input's shape for this step, by name.
    pub inputs: HashMap<String, Vec<usize>>,
}

/// What a generation did, step by step.
#[derive(Clone, Debug, Serialize)]
pub struct Generation {
    /// The generated token ids (the prefill's argmax first).
    pub tokens: Vec<i64>,
    /// Per step: cached positions before it, new tokens, and the work measured from that
    /// step's own graph against the work predicted from the first step's coefficients.
    pub steps: Vec<StepCheck>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StepCheck {
    pub ctx: usize,
    pub tokens: usize,
    /// Operations counted on this step's graph / predicted.
    pub ops: f64,
    pub ops_predicted: f64,
    /// KV cache bytes the interpreter returned (all `present` outputs) / predicted
    /// (positions × bytes per position at the graph's f32).
    pub kv_bytes: f64,
    pub kv_bytes_predicted: f64,
}

/// Why generation stopped.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("{0}")]
    Load(String),
    #[error("{0}")]
    Workload(#[from] workload::WorkloadError),
    #[error("step {step}: {msg}")]
    Run { step: usize, msg: String },
    #[error("{0}")]
    Model(String),
}

/// Limits of one generation (the reference interpreter runs every step).
pub const MAX_PROMPT: usize = 65536;
pub const MAX_STEPS: usize = 4096;

/// How a graph input is fed.
#[derive(Clone, Debug)]
enum Feed {
    Ids,
    Mask,
    Positions,
    /// A cache input, fed from the output named `present`.
    Past {
        present: String,
        shape: Vec<usize>,
    },
}

fn feeds(g: &Graph) -> Result<Vec<(String, Feed)>, GenerateError> {
    let outputs: Vec<String> = g.outputs.iter().map(|o| g.value(*o).name.clone()).collect();
    let mut out = Vec::new();
    for &i in &g.inputs {
        let v = g.value(i);
        let name = v.name.clone();
        let feed = if name == "input_ids" {
            Feed::Ids
        } else if name == "attention_mask" {
            Feed::Mask
        } else if name == "position_ids" {
            Feed::Positions
        } else if let Some(rest) = name.strip_prefix("past_key_values") {
            let present = format!("present{rest}");
            if !outputs.contains(&present) {
                return Err(GenerateError::Model(format!(
                    "{}: input '{name}' has no output '{present}' to feed it from; pimkit's generator \
                     expects Hugging Face's names (past_key_values.N.key -> present.N.key)",
                    g.name
                )));
            }
            Feed::Past {
                present,
                shape: v.ty.shape.clone(),
            }
        } else {
            return Err(GenerateError::Model(format!(
                "{}: input '{name}' is not one the generator knows how to feed (input_ids, \
                 attention_mask, position_ids, past_key_values.*)",
                g.name
            )));
        };
        out.push((name, feed));
    }
    if !out.iter().any(|(_, f)| matches!(f, Feed::Ids)) {
        return Err(GenerateError::Model(format!(
            "{}: no 'input_ids' input",
            g.name
        )));
    }
    Ok(out)
}

/// Every input's shape of decoder `g` at `t` new tokens after `ctx` cached positions
/// (batch 1): the binding to load a decoder file at when its dims are symbolic.
pub fn step_inputs(
    g: &Graph,
    t: usize,
    ctx: usize,
) -> Result<HashMap<String, Vec<usize>>, GenerateError> {
    Ok(step_shapes(&feeds(g)?, t, ctx))
}

/// Every input's shape at `t` new tokens after `ctx` cached positions (batch 1).
fn step_shapes(lay: &[(String, Feed)], t: usize, ctx: usize) -> HashMap<String, Vec<usize>> {
    lay.iter()
        .map(|(name, feed)| {
            let s = match feed {
                Feed::Ids | Feed::Positions => vec![1, t],
                Feed::Mask => vec![1, ctx + t],
                Feed::Past { shape, .. } => {
                    let mut s = shape.clone();
                    s[positions_axis(shape)] = ctx;
                    if s.len() == 4 {
                        s[0] = 1;
                    }
                    s
                }
            };
            (name.clone(), s)
        })
        .collect()
}

/// The cache input's positions axis: 2 for [batch, heads, positions, head_dim], 1 for
/// [heads, positions, head_dim].
fn positions_axis(shape: &[usize]) -> usize {
    if shape.len() == 4 { 2 } else { 1 }
}

/// Generate `steps` tokens after `prompt` (batch 1). `load(shapes)` returns the graph
/// for one step's shapes.
pub fn generate(
    load: &mut dyn FnMut(&StepShapes) -> Result<Graph, String>,
    prompt: &[i64],
    steps: usize,
) -> Result<Generation, GenerateError> {
    if prompt.is_empty() {
        return Err(GenerateError::Model(
            "the prompt is empty; give at least one token id".into(),
        ));
    }
    if prompt.len() > MAX_PROMPT || steps > MAX_STEPS {
        return Err(GenerateError::Model(format!(
            "{} prompt tokens and {steps} steps: use at most {MAX_PROMPT} and {MAX_STEPS} (each step re-runs the model in the interpreter)",
            prompt.len()
        )));
    }
    if let Some(t) = prompt.iter().find(|t| **t < 0) {
        return Err(GenerateError::Model(format!(
            "prompt token {t}: token ids are non-negative"
        )));
    }
    let mut tokens: Vec<i64> = Vec::new();
    let mut checks = Vec::new();
    let mut cache: HashMap<String, Tensor> = HashMap::new();
    let mut layout: Option<Vec<(String, Feed)>> = None;
    let mut first: Option<Workload> = None;
    let mut ctx = 0usize;
    let mut new: Vec<i64> = prompt.to_vec();
    for step in 0..=steps {
        let t = new.len();
        // Shapes of this step: known from the previous step's graph (the first step's
        // cache shapes come from a probe load with one cached position).
        let lay = match &layout {
            Some(l) => l.clone(),
            None => {
                let probe = load(&StepShapes {
                    tokens: t,
                    ctx: 1,
                    inputs: HashMap::new(),
                })
                .map_err(GenerateError::Load)?;
                let l = feeds(&probe)?;
                // The coefficients come from this step with one cached position: an
                // empty cache's Concat may be folded away at import.
                let shapes = step_shapes(&l, t, 1);
                let g = load(&StepShapes {
                    tokens: t,
                    ctx: 1,
                    inputs: shapes,
                })
                .map_err(GenerateError::Load)?;
                first = Some(workload::extract(&g)?);
                layout = Some(l.clone());
                l
            }
        };
        let mut inputs: HashMap<String, Tensor> = HashMap::new();
        let mut shapes: HashMap<String, Vec<usize>> = HashMap::new();
        for (name, feed) in &lay {
            let tensor = match feed {
                Feed::Ids => Tensor::from_i64(vec![1, t], new.clone()),
                Feed::Mask => Tensor::from_i64(vec![1, ctx + t], vec![1; ctx + t]),
                Feed::Positions => {
                    Tensor::from_i64(vec![1, t], (ctx..ctx + t).map(|p| p as i64).collect())
                }
                Feed::Past { shape, .. } => match cache.remove(name) {
                    Some(c) => c,
                    None => {
                        let mut s = shape.clone();
                        s[positions_axis(shape)] = 0;
                        if s.len() == 4 {
                            s[0] = 1;
                        }
                        Tensor::zeros(DType::F32, s)
                    }
                },
            };
            shapes.insert(name.clone(), tensor.shape.clone());
            inputs.insert(name.clone(), tensor);
        }
        let g = load(&StepShapes {
            tokens: t,
            ctx,
            inputs: shapes,
        })
        .map_err(GenerateError::Load)?;
        let ops = workload::graph_ops(&g);
        let outs = pimkit_interp::run(&g, &inputs).map_err(|e| GenerateError::Run {
            step,
            msg: e.to_string(),
        })?;
        let by_name: HashMap<String, Tensor> = g
            .outputs
            .iter()
            .zip(outs)
            .map(|(o, t)| (g.value(*o).name.clone(), t))
            .collect();
        let logits = by_name
            .get("logits")
            .ok_or_else(|| GenerateError::Model(format!("{}: no 'logits' output", g.name)))?;
        let next = argmax_last(logits).ok_or_else(|| GenerateError::Run {
            step,
            msg: format!("logits have shape {:?}", logits.shape),
        })?;
        let mut kv_bytes = 0.0;
        for (name, feed) in &lay {
            if let Feed::Past { present, .. } = feed {
                let p = by_name[present].clone();
                kv_bytes += (p.numel() * p.dtype().size()) as f64;
                cache.insert(name.clone(), p);
            }
        }
        let reference = first.as_ref().expect("set at the first step");
        let (b, l) = (1.0, (ctx + t) as f64);
        checks.push(StepCheck {
            ctx,
            tokens: t,
            ops,
            ops_predicted: reference.total_ops(b, t as f64, l),
            kv_bytes,
            kv_bytes_predicted: reference.kv_elems_per_position * l * 4.0,
        });
        tokens.push(next);
        ctx += t;
        new = vec![next];
    }
    Ok(Generation {
        tokens,
        steps: checks,
    })
}

/// The argmax over the vocabulary of the last position of [batch=1, seq, vocab] logits
/// (first maximum, as numpy's argmax).
fn argmax_last(logits: &Tensor) -> Option<i64> {
    let vocab = *logits.shape.last()?;
    if vocab == 0 {
        return None;
    }
    let v = logits.to_f32_vec();
    let last = &v[v.len().checked_sub(vocab)?..];
    let mut best = 0;
    for (i, x) in last.iter().enumerate() {
        if *x > last[best] {
            best = i;
        }
    }
    Some(best as i64)
}
