//! Training-free accuracy proxy: NASWOT (Mellor et al., "Neural Architecture Search without
//! Training", ICML 2021). Run a small deterministic batch through the untrained network in
//! the reference interpreter, record for every sample the binary code "unit > 0" over all
//! ReLU / HardSwish outputs, build the kernel K[i][j] = units on which samples i and j
//! agree, and score log|det K|. Networks that separate inputs into more distinct linear
//! regions score higher.
//!
//! It is a *proxy*: rank correlation with trained accuracy is modest and space-dependent
//! (reference rnc.md §4.1: Spearman 0.6-0.8 on NAS-Bench-201, often no better than #params);
//! inside one OFA space the accuracy spread is narrow. Use `table:` or `cmd:` for real
//! accuracies.

use crate::build::{Part, SuperNet, build_weighted};
use crate::error::{NasError, Result};
use crate::proxy_cache::{Prefix, ProxyCache};
use crate::space::{Config, Space};
use pimkit_ir::{DType, Graph, NodeId, Op, Tensor, TensorType, UnaryOp};
use std::collections::HashMap;
use std::sync::Arc;

/// Proxy settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ProxyConfig {
    /// Samples in the batch (the size of K).
    pub batch: usize,
    /// Input resolution (the space's `proxy_resolution` by default).
    pub resolution: usize,
    /// Seed of the input batch.
    pub seed: u64,
}

/// Agreement kernel accumulator.
struct Kernel {
    b: usize,
    k: Vec<f64>,
}

impl Kernel {
    fn add(&mut self, t: &Tensor) {
        let Some(d) = t.as_f32() else { return };
        let b = self.b;
        if t.shape.first() != Some(&b) || d.is_empty() {
            return;
        }
        let per = d.len() / b;
        // Pack signs 64 per word, then count agreements by popcount.
        let words = per.div_ceil(64);
        let mut bits = vec![0u64; words * b];
        for (s, ws) in bits.chunks_exact_mut(words).enumerate() {
            // Branch-free: one compare and shift per unit (the sign of a random
            // activation is unpredictable).
            for (w, c) in ws.iter_mut().zip(d[s * per..(s + 1) * per].chunks(64)) {
                *w = c
                    .iter()
                    .enumerate()
                    .fold(0u64, |acc, (i, &v)| acc | (u64::from(v > 0.0) << i));
            }
        }
        for i in 0..b {
            for j in i..b {
                let mut diff = 0u32;
                for w in 0..words {
                    diff += (bits[i * words + w] ^ bits[j * words + w]).count_ones();
                }
                let agree = (per as u32 - diff) as f64;
                self.k[i * b + j] += agree;
                if i != j {
                    self.k[j * b + i] += agree;
                }
            }
        }
    }
}

/// log|det A| of a square matrix by LU with partial pivoting (−inf when singular).
pub fn log_abs_det(a: &[f64], n: usize) -> f64 {
    let mut m = a.to_vec();
    let mut acc = 0.0;
    for c in 0..n {
        let p = (c..n)
            .max_by(|&x, &y| m[x * n + c].abs().total_cmp(&m[y * n + c].abs()))
            .unwrap_or(c);
        let piv = m[p * n + c];
        if piv == 0.0 || !piv.is_finite() {
            return f64::NEG_INFINITY;
        }
        if p != c {
            for k in 0..n {
                m.swap(p * n + k, c * n + k);
            }
        }
        acc += piv.abs().ln();
        for r in c + 1..n {
            let f = m[r * n + c] / piv;
            if f != 0.0 {
                for k in c..n {
                    m[r * n + k] -= f * m[c * n + k];
                }
            }
        }
    }
    acc
}

/// Whether NASWOT reads the node's output as a binary code.
fn is_code(g: &Graph, id: NodeId) -> bool {
    matches!(
        g.node(id).op,
        Op::Unary(UnaryOp::Relu) | Op::Unary(UnaryOp::HardSwish)
    )
}

/// log|det K|, or an error naming `name` when K is singular.
fn score(ker: &Kernel, name: &str) -> Result<f64> {
    let s = log_abs_det(&ker.k, ker.b);
    if !s.is_finite() {
        return Err(NasError::Evaluator {
            spec: "proxy".into(),
            msg: format!("{name}: the activation kernel is singular (two inputs share every code)"),
        });
    }
    Ok(s)
}

/// NASWOT score of any graph whose first input is a float image batch of `batch` samples.
pub fn naswot_graph(g: &Graph, batch: usize, seed: u64) -> Result<f64> {
    let inputs = pimkit_interp::random_inputs(g, seed);
    let mut ker = Kernel {
        b: batch,
        k: vec![0.0; batch * batch],
    };
    pimkit_interp::run_observed(g, &inputs, &mut |id, outs| {
        if is_code(g, id)
            && let Some(t) = outs.first()
        {
            ker.add(t);
        }
    })?;
    score(&ker, &g.name)
}

/// NASWOT score of a candidate with weights sliced from `net` (the whole graph built and
/// run; [`naswot_cached`] gives the same bits faster inside a search).
pub fn naswot(space: &Space, c: &Config, net: &SuperNet, cfg: &ProxyConfig) -> Result<f64> {
    let g = build_weighted(space, c, net, cfg.resolution, cfg.batch, false)?;
    naswot_graph(&g, cfg.batch, cfg.seed)
}

/// [`naswot`] piece by piece ([`Part`]): the activations and kernel share of the longest
/// prefix `cache` has seen are reused, the rest is run and remembered. Same score, same
/// bits: every piece runs the same nodes on the same inputs, and the kernel entries are
/// integer counts.
pub fn naswot_cached(
    space: &Space,
    c: &Config,
    net: &SuperNet,
    cfg: &ProxyConfig,
    cache: &ProxyCache,
) -> Result<f64> {
    space.encode(c)?;
    let parts = Part::of(c);
    let b = cfg.batch;
    let (start, mut x, k) = match cache.longest(&parts) {
        Some((n, p)) => (n, Some(p.out), (*p.kernel).clone()),
        None => (0, None, vec![0.0; b * b]),
    };
    let mut ker = Kernel { b, k };
    for (i, &part) in parts.iter().enumerate().skip(start) {
        let x_ty = match &x {
            Some(t) => TensorType::new(t.dtype(), t.shape.clone()),
            None => TensorType::new(DType::F32, Vec::<usize>::new()),
        };
        let g = cache.graph(space, net, part, cfg.resolution, b, &x_ty)?;
        let inputs = match &x {
            None => pimkit_interp::random_inputs(&g, cfg.seed),
            Some(t) => HashMap::from([("x".to_string(), (**t).clone())]),
        };
        let outs = pimkit_interp::run_observed(&g, &inputs, &mut |id, outs| {
            if is_code(&g, id)
                && let Some(t) = outs.first()
            {
                ker.add(t);
            }
        })?;
        let y = Arc::new(outs.into_iter().next().ok_or_else(|| NasError::Evaluator {
            spec: "proxy".into(),
            msg: format!("{part:?} produced no output"),
        })?);
        if i + 1 < parts.len() {
            cache.put(
                &parts[..=i],
                Prefix {
                    out: y.clone(),
                    kernel: Arc::new(ker.k.clone()),
                },
            );
        }
        x = Some(y);
    }
    score(&ker, &format!("{}:{c}", space.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logdet_of_known_matrices() {
        // det [[4,2],[2,3]] = 8.
        assert!((log_abs_det(&[4.0, 2.0, 2.0, 3.0], 2) - 8f64.ln()).abs() < 1e-12);
        // Needs a row swap: det [[0,1],[2,0]] = -2.
        assert!((log_abs_det(&[0.0, 1.0, 2.0, 0.0], 2) - 2f64.ln()).abs() < 1e-12);
        assert_eq!(log_abs_det(&[1.0, 2.0, 2.0, 4.0], 2), f64::NEG_INFINITY);
    }

    #[test]
    fn kernel_counts_agreements() {
        let mut k = Kernel {
            b: 2,
            k: vec![0.0; 4],
        };
        // Sample 0 codes 1,0,1; sample 1 codes 1,1,0: agree on 1 unit.
        k.add(&Tensor::from_f32(
            vec![2, 3],
            vec![1.0, -1.0, 2.0, 3.0, 0.5, -2.0],
        ));
        assert_eq!(k.k, vec![3.0, 1.0, 1.0, 3.0]);
    }
}
