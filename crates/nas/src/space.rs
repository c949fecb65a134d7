//! Search spaces as data: a MobileNetV3-style supernet template (stem, fixed blocks,
//! elastic stages, head) read from TOML (`arch/spaces/*.toml`), encoded as categorical
//! genes. Genome layout, per stage: `[depth, k_0, e_0, k_1, e_1, ..., k_{D-1}, e_{D-1}]`
//! with D the largest depth; every gene is an index into its choice list.

use crate::error::{NasError, Result, io_err};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The built-in `arch/spaces/mbv3-small.toml` (RNC's OFA MobileNetV3-small supernet).
pub const MBV3_SMALL_TOML: &str = include_str!("../../../arch/spaces/mbv3-small.toml");

/// Built-in spaces: (name, TOML text).
pub const BUILTIN: &[(&str, &str)] = &[("mbv3-small", MBV3_SMALL_TOML)];

/// Activation of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Act {
    Relu,
    Hswish,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StemSpec {
    pub out: usize,
    pub kernel: usize,
    pub stride: usize,
    pub act: Act,
}

/// A block that is not searched.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedBlock {
    pub out: usize,
    pub kernel: usize,
    pub expand: usize,
    pub stride: usize,
    pub act: Act,
    pub se: bool,
}

/// An elastic stage: `depth` blocks of width `out`, the first with `stride`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    pub out: usize,
    pub stride: usize,
    pub act: Act,
    pub se: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneChoices {
    pub kernel: Vec<usize>,
    pub expand: Vec<usize>,
    pub depth: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadSpec {
    pub final_expand: usize,
    pub feature_mix: usize,
    pub act: Act,
}

/// A search space (see `arch/spaces/mbv3-small.toml` for the meaning of each field).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Space {
    pub name: String,
    pub description: String,
    pub resolution: usize,
    pub in_channels: usize,
    pub classes: usize,
    pub proxy_resolution: usize,
    pub divisor: usize,
    pub se_reduction: usize,
    pub stem: StemSpec,
    #[serde(default)]
    pub fixed: Vec<FixedBlock>,
    pub stages: Vec<StageSpec>,
    pub genes: GeneChoices,
    pub head: HeadSpec,
}

/// One gene: its name and the values it can take.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Gene {
    pub name: String,
    pub choices: Vec<usize>,
}

/// A decoded elastic block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockChoice {
    pub kernel: usize,
    pub expand: usize,
}

/// A decoded candidate: the active blocks of every stage.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config {
    pub stages: Vec<Vec<(usize, usize)>>,
}

/// OFA / torchvision `make_divisible`.
pub fn make_divisible(v: f64, divisor: usize) -> usize {
    let d = divisor.max(1) as f64;
    let nv = d.max(((v + d / 2.0) / d).floor() * d);
    (if nv < 0.9 * v { nv + d } else { nv }) as usize
}

impl Space {
    pub fn from_toml_str(s: &str) -> Result<Space> {
        let sp: Space = toml::from_str(s).map_err(|e| NasError::Space {
            space: "(toml)".into(),
            msg: pimkit_ir::at_offset(s, e.span().map(|r| r.start), e.message()),
        })?;
        sp.validate()?;
        Ok(sp)
    }

    /// A built-in space by name, or a path to a space TOML file.
    pub fn load(name_or_path: &str) -> Result<Space> {
        if let Some((_, t)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Space::from_toml_str(t);
        }
        let p = Path::new(name_or_path);
        if name_or_path.ends_with(".toml") || p.exists() {
            let s = std::fs::read_to_string(p).map_err(|e| io_err(p, e))?;
            return Space::from_toml_str(&s).map_err(|e| match e {
                NasError::Space { msg, .. } => NasError::Space {
                    space: name_or_path.into(),
                    msg,
                },
                e => e,
            });
        }
        let names: Vec<&str> = BUILTIN.iter().map(|b| b.0).collect();
        Err(NasError::UnknownSpace(
            name_or_path.into(),
            names.join(", "),
        ))
    }

    fn validate(&self) -> Result<()> {
        let err = |msg: String| NasError::Space {
            space: self.name.clone(),
            msg,
        };
        if self.stages.is_empty() {
            return Err(err("give at least one [[stages]] entry".into()));
        }
        let g = &self.genes;
        for (n, v) in [
            ("kernel", &g.kernel),
            ("expand", &g.expand),
            ("depth", &g.depth),
        ] {
            if v.is_empty() || v.contains(&0) {
                return Err(err(format!(
                    "genes.{n} must be a non-empty list of positive integers"
                )));
            }
            if v.len() > 255 {
                return Err(err(format!("genes.{n} has more than 255 choices")));
            }
        }
        if g.kernel.iter().any(|k| k % 2 == 0) {
            return Err(err(
                "genes.kernel must hold odd kernel sizes (same padding)".into(),
            ));
        }
        // Ranges: every field positive, and bounded well above MobileNet-class networks
        // so that a typo cannot ask for terabytes of activations or an endless search.
        let range = |name: String, v: usize, lo: usize, hi: usize| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(err(format!("{name} = {v}: use {lo}..={hi}")))
            }
        };
        range("resolution".into(), self.resolution, 8, 1024)?;
        range("proxy_resolution".into(), self.proxy_resolution, 8, 1024)?;
        range("in_channels".into(), self.in_channels, 1, 64)?;
        range("classes".into(), self.classes, 1, 100_000)?;
        range("divisor".into(), self.divisor, 1, 64)?;
        range("se_reduction".into(), self.se_reduction, 1, 64)?;
        for (n, v) in g.kernel.iter().map(|&k| ("genes.kernel", k)).chain(
            g.expand
                .iter()
                .map(|&e| ("genes.expand", e))
                .chain(g.depth.iter().map(|&d| ("genes.depth", d))),
        ) {
            let hi = if n == "genes.kernel" { 15 } else { 16 };
            range(n.into(), v, 1, hi)?;
        }
        let conv = |at: String, out: usize, kernel: usize, stride: usize| {
            range(format!("{at}.out"), out, 1, 4096)?;
            range(format!("{at}.kernel"), kernel, 1, 15)?;
            range(format!("{at}.stride"), stride, 1, 4)
        };
        conv(
            "stem".into(),
            self.stem.out,
            self.stem.kernel,
            self.stem.stride,
        )?;
        for (i, f) in self.fixed.iter().enumerate() {
            conv(format!("fixed[{i}]"), f.out, f.kernel, f.stride)?;
            range(format!("fixed[{i}].expand"), f.expand, 1, 16)?;
        }
        for (i, st) in self.stages.iter().enumerate() {
            range(format!("stages[{i}].out"), st.out, 1, 4096)?;
            range(format!("stages[{i}].stride"), st.stride, 1, 4)?;
        }
        range("head.final_expand".into(), self.head.final_expand, 1, 8192)?;
        range("head.feature_mix".into(), self.head.feature_mix, 1, 8192)?;
        Ok(())
    }

    pub fn max_depth(&self) -> usize {
        *self.genes.depth.iter().max().unwrap_or(&1)
    }

    pub fn max_kernel(&self) -> usize {
        *self.genes.kernel.iter().max().unwrap_or(&1)
    }

    pub fn max_expand(&self) -> usize {
        *self.genes.expand.iter().max().unwrap_or(&1)
    }

    fn genes_per_stage(&self) -> usize {
        1 + 2 * self.max_depth()
    }

    /// The genes in genome order.
    pub fn genes(&self) -> Vec<Gene> {
        let mut v = Vec::new();
        for s in 0..self.stages.len() {
            v.push(Gene {
                name: format!("s{s}.depth"),
                choices: self.genes.depth.clone(),
            });
            for b in 0..self.max_depth() {
                v.push(Gene {
                    name: format!("s{s}.b{b}.kernel"),
                    choices: self.genes.kernel.clone(),
                });
                v.push(Gene {
                    name: format!("s{s}.b{b}.expand"),
                    choices: self.genes.expand.clone(),
                });
            }
        }
        v
    }

    /// Choices per gene (what NSGA-II needs).
    pub fn cardinalities(&self) -> Vec<usize> {
        self.genes().iter().map(|g| g.choices.len()).collect()
    }

    /// Set the genes of inactive blocks (beyond a stage's depth) to 0, so equal networks
    /// have equal genomes (reference rnc.md §3.3: canonicalise dead genes).
    pub fn canonicalize(&self, genome: &mut [u8]) {
        let gps = self.genes_per_stage();
        for s in 0..self.stages.len() {
            let d = self.genes.depth[genome[s * gps] as usize % self.genes.depth.len()];
            for b in d..self.max_depth() {
                genome[s * gps + 1 + 2 * b] = 0;
                genome[s * gps + 2 + 2 * b] = 0;
            }
        }
    }

    pub fn decode(&self, genome: &[u8]) -> Result<Config> {
        let gps = self.genes_per_stage();
        if genome.len() != gps * self.stages.len() {
            return Err(NasError::Config {
                config: format!("{genome:?}"),
                msg: format!(
                    "genome has {} genes, space '{}' has {}",
                    genome.len(),
                    self.name,
                    gps * self.stages.len()
                ),
            });
        }
        let pick = |v: &[usize], i: u8| {
            v.get(i as usize).copied().ok_or_else(|| NasError::Config {
                config: format!("{genome:?}"),
                msg: format!("gene index {i} out of range (choices {v:?})"),
            })
        };
        let mut stages = Vec::new();
        for s in 0..self.stages.len() {
            let d = pick(&self.genes.depth, genome[s * gps])?;
            let mut blocks = Vec::new();
            for b in 0..d {
                let k = pick(&self.genes.kernel, genome[s * gps + 1 + 2 * b])?;
                let e = pick(&self.genes.expand, genome[s * gps + 2 + 2 * b])?;
                blocks.push((k, e));
            }
            stages.push(blocks);
        }
        Ok(Config { stages })
    }

    /// Canonical genome of a configuration (inverse of [`Space::decode`]).
    pub fn encode(&self, c: &Config) -> Result<Vec<u8>> {
        let err = |msg: String| NasError::Config {
            config: c.to_string(),
            msg,
        };
        if c.stages.len() != self.stages.len() {
            return Err(err(format!(
                "{} stages given, space '{}' has {}",
                c.stages.len(),
                self.name,
                self.stages.len()
            )));
        }
        let idx = |v: &[usize], x: usize, what: &str| {
            v.iter()
                .position(|&y| y == x)
                .map(|i| i as u8)
                .ok_or_else(|| err(format!("{what} {x} is not one of {v:?}")))
        };
        let mut g = vec![0u8; self.genes_per_stage() * self.stages.len()];
        let gps = self.genes_per_stage();
        for (s, blocks) in c.stages.iter().enumerate() {
            g[s * gps] = idx(&self.genes.depth, blocks.len(), "depth")?;
            for (b, &(k, e)) in blocks.iter().enumerate() {
                g[s * gps + 1 + 2 * b] = idx(&self.genes.kernel, k, "kernel")?;
                g[s * gps + 2 + 2 * b] = idx(&self.genes.expand, e, "expand")?;
            }
        }
        Ok(g)
    }

    /// The largest network of the space (every gene at its largest value).
    pub fn largest(&self) -> Config {
        let b = (self.max_kernel(), self.max_expand());
        Config {
            stages: vec![vec![b; self.max_depth()]; self.stages.len()],
        }
    }

    /// The smallest network of the space.
    pub fn smallest(&self) -> Config {
        let k = *self.genes.kernel.iter().min().unwrap_or(&1);
        let e = *self.genes.expand.iter().min().unwrap_or(&1);
        let d = *self.genes.depth.iter().min().unwrap_or(&1);
        Config {
            stages: vec![vec![(k, e); d]; self.stages.len()],
        }
    }

    /// OFA's `set_active_subnet` arguments: `ks`, `e` (one entry per block slot, inactive
    /// slots repeat the smallest choice) and `d` (per stage), plus the config string.
    pub fn ofa_json(&self, c: &Config) -> serde_json::Value {
        let (k0, e0) = (self.genes.kernel[0], self.genes.expand[0]);
        let mut ks = Vec::new();
        let mut es = Vec::new();
        for blocks in &c.stages {
            for b in 0..self.max_depth() {
                let (k, e) = blocks.get(b).copied().unwrap_or((k0, e0));
                ks.push(k);
                es.push(e);
            }
        }
        let d: Vec<usize> = c.stages.iter().map(|s| s.len()).collect();
        serde_json::json!({
            "space": self.name,
            "config": c.to_string(),
            "ks": ks,
            "e": es,
            "d": d,
            "resolution": self.resolution,
        })
    }
}

/// `k3e4-k5e6_k7e3-k3e3-k5e4_...`: stages joined by `_`, blocks by `-`.
impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s: Vec<String> = self
            .stages
            .iter()
            .map(|b| {
                b.iter()
                    .map(|(k, e)| format!("k{k}e{e}"))
                    .collect::<Vec<_>>()
                    .join("-")
            })
            .collect();
        f.write_str(&s.join("_"))
    }
}

impl std::str::FromStr for Config {
    type Err = NasError;
    fn from_str(s: &str) -> Result<Config> {
        let err = |msg: String| NasError::Config {
            config: s.into(),
            msg,
        };
        let mut stages = Vec::new();
        for st in s.trim().split('_') {
            let mut blocks = Vec::new();
            for b in st.split('-') {
                let rest = b
                    .strip_prefix('k')
                    .ok_or_else(|| err(format!("block '{b}' must look like k3e4")))?;
                let (k, e) = rest
                    .split_once('e')
                    .ok_or_else(|| err(format!("block '{b}' must look like k3e4")))?;
                let k: usize = k.parse().map_err(|_| err(format!("bad kernel in '{b}'")))?;
                let e: usize = e
                    .parse()
                    .map_err(|_| err(format!("bad expand ratio in '{b}'")))?;
                blocks.push((k, e));
            }
            stages.push(blocks);
        }
        Ok(Config { stages })
    }
}
