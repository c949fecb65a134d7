//! Pluggable accuracy evaluators: `proxy` (training-free NASWOT score), `table:FILE.csv`
//! (measured accuracies keyed by configuration string) and `cmd:"..."` (run a user command
//! on the candidate's ONNX file and configuration JSON, read the last number it prints).

use crate::build::{SuperNet, build_with_weights};
use crate::error::{NasError, Result, io_err};
use crate::proxy::{ProxyConfig, naswot_cached, naswot_graph};
use crate::proxy_cache::{DEFAULT_BUDGET_BYTES, ProxyCache};
use crate::space::{Config, Space};
use pimkit_ir::Graph;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which evaluator, as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccuracySpec {
    Proxy,
    Table(PathBuf),
    Cmd(String),
}

impl std::str::FromStr for AccuracySpec {
    type Err = NasError;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        if s == "proxy" {
            return Ok(AccuracySpec::Proxy);
        }
        if let Some(f) = s.strip_prefix("table:") {
            if f.is_empty() {
                return Err(bad(s, "give a CSV file: table:FILE.csv"));
            }
            return Ok(AccuracySpec::Table(PathBuf::from(f)));
        }
        if let Some(c) = s.strip_prefix("cmd:") {
            let c = c.trim();
            let c = c
                .strip_prefix('"')
                .and_then(|c| c.strip_suffix('"'))
                .or_else(|| c.strip_prefix('\'').and_then(|c| c.strip_suffix('\'')))
                .unwrap_or(c);
            if c.trim().is_empty() {
                return Err(bad(
                    s,
                    "give a command: cmd:\"python eval.py {onnx} {config}\"",
                ));
            }
            return Ok(AccuracySpec::Cmd(c.to_string()));
        }
        Err(bad(
            s,
            "use 'proxy', 'table:FILE.csv' or 'cmd:\"COMMAND {onnx} {config}\"'",
        ))
    }
}

fn bad(spec: &str, msg: &str) -> NasError {
    NasError::Evaluator {
        spec: spec.into(),
        msg: msg.into(),
    }
}

/// Parse a table of measured accuracies: CSV with a header; the columns named `config`
/// and `accuracy` (else the first two columns). Config strings are normalised
/// (`k3e4-k5e6_...`); the key `base` gives the base network's accuracy.
pub fn parse_table(text: &str, origin: &str) -> Result<HashMap<String, f64>> {
    let err = |msg: String| NasError::Evaluator {
        spec: format!("table:{origin}"),
        msg,
    };
    let mut rd = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = rd.headers().map_err(|e| err(e.to_string()))?.clone();
    let find = |n: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(n));
    let (ci, ai) = match (find("config"), find("accuracy")) {
        (Some(c), Some(a)) => (c, a),
        _ if headers.len() >= 2 => (0, 1),
        _ => {
            return Err(err(
                "needs a header with 'config' and 'accuracy' columns".into()
            ));
        }
    };
    let mut m = HashMap::new();
    for (line, rec) in rd.records().enumerate() {
        let rec = rec.map_err(|e| err(format!("row {}: {e}", line + 2)))?;
        let (Some(c), Some(a)) = (rec.get(ci), rec.get(ai)) else {
            return Err(err(format!("row {}: missing column", line + 2)));
        };
        let acc: f64 = a
            .parse()
            .map_err(|_| err(format!("row {}: accuracy '{a}' is not a number", line + 2)))?;
        let key = if c == "base" {
            c.to_string()
        } else {
            c.parse::<Config>()
                .map_err(|e| err(format!("row {}: {e}", line + 2)))?
                .to_string()
        };
        m.insert(key, acc);
    }
    if m.is_empty() {
        return Err(err("the table has no rows".into()));
    }
    Ok(m)
}

/// The last number (integer or float) in `s`, e.g. the accuracy a script prints last.
pub fn last_float(s: &str) -> Option<f64> {
    s.split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
        .filter_map(|t| {
            // Tolerate trailing sentence punctuation ("acc 0.91.").
            let t = t.trim_end_matches('.');
            t.parse::<f64>().ok().filter(|v| v.is_finite())
        })
        .next_back()
}

/// An accuracy evaluator ready to run.
pub enum Evaluator {
    Proxy {
        net: SuperNet,
        cfg: ProxyConfig,
        /// Piece graphs and prefix activations shared by the candidates.
        cache: ProxyCache,
    },
    Table {
        path: PathBuf,
        map: HashMap<String, f64>,
    },
    Cmd {
        template: String,
        net: SuperNet,
    },
}

impl Evaluator {
    /// Prepare `spec` for `space`; `seed` seeds the shared supernet weights and the batch.
    pub fn new(
        spec: &AccuracySpec,
        space: &Space,
        seed: u64,
        proxy_batch: usize,
    ) -> Result<Evaluator> {
        Ok(match spec {
            AccuracySpec::Proxy => Evaluator::Proxy {
                net: SuperNet::new(space, seed)?,
                cfg: ProxyConfig {
                    batch: proxy_batch.max(2),
                    resolution: space.proxy_resolution,
                    seed,
                },
                cache: ProxyCache::new(DEFAULT_BUDGET_BYTES),
            },
            AccuracySpec::Table(p) => {
                let text = std::fs::read_to_string(p).map_err(|e| io_err(p, e))?;
                Evaluator::Table {
                    path: p.clone(),
                    map: parse_table(&text, &p.display().to_string())?,
                }
            }
            AccuracySpec::Cmd(c) => Evaluator::Cmd {
                template: c.clone(),
                net: SuperNet::new(space, seed)?,
            },
        })
    }

    /// A label for tables and plots.
    pub fn label(&self) -> String {
        match self {
            Evaluator::Proxy { cfg, .. } => format!(
                "proxy: NASWOT log-det score of the untrained net ({} inputs at {}x{}), not an accuracy",
                cfg.batch, cfg.resolution, cfg.resolution
            ),
            Evaluator::Table { path, .. } => format!("table:{}", path.display()),
            Evaluator::Cmd { template, .. } => format!("cmd:\"{template}\""),
        }
    }

    pub fn is_proxy(&self) -> bool {
        matches!(self, Evaluator::Proxy { .. })
    }

    /// Whether candidates may be evaluated in parallel (user commands run one at a time).
    pub fn parallel(&self) -> bool {
        !matches!(self, Evaluator::Cmd { .. })
    }

    /// Accuracy of a candidate; `None` when a table does not list it.
    pub fn evaluate(&self, space: &Space, c: &Config) -> Result<Option<f64>> {
        match self {
            Evaluator::Proxy { net, cfg, cache } => {
                naswot_cached(space, c, net, cfg, cache).map(Some)
            }
            Evaluator::Table { map, .. } => Ok(map.get(&c.to_string()).copied()),
            Evaluator::Cmd { template, net } => {
                let g = build_with_weights(space, c, net, space.resolution, 1)?;
                run_cmd(template, &g, &space.ofa_json(c)).map(Some)
            }
        }
    }

    /// Accuracy of the (non-space) base network `g_full` (batch 1, full resolution);
    /// `g_proxy` builds it at the proxy's resolution and batch. `None` when unknown.
    pub fn evaluate_base(
        &self,
        g_full: &Graph,
        g_proxy: &dyn Fn(usize, usize) -> Result<Graph>,
    ) -> Result<Option<f64>> {
        match self {
            Evaluator::Proxy { cfg, .. } => {
                let g = g_proxy(cfg.resolution, cfg.batch)?;
                naswot_graph(&g, cfg.batch, cfg.seed).map(Some)
            }
            Evaluator::Table { map, .. } => Ok(map.get("base").copied()),
            Evaluator::Cmd { template, .. } => {
                let cfg = serde_json::json!({ "config": "base", "model": g_full.name });
                run_cmd(template, g_full, &cfg).map(Some)
            }
        }
    }
}

/// Write `g` and `config` to a temporary directory, run `template` with `{onnx}`,
/// `{config}` and `{dir}` replaced through `sh -c`, and parse the last number it prints.
pub fn run_cmd(template: &str, g: &Graph, config: &serde_json::Value) -> Result<f64> {
    let err = |msg: String| NasError::Evaluator {
        spec: format!("cmd:\"{template}\""),
        msg,
    };
    let dir = tempfile::tempdir().map_err(|e| io_err(Path::new("(temp dir)"), e))?;
    let onnx = dir.path().join("candidate.onnx");
    let cfg = dir.path().join("config.json");
    pimkit_onnx::save(g, &onnx)?;
    let text = serde_json::to_string_pretty(config).unwrap_or_default();
    std::fs::write(&cfg, text).map_err(|e| io_err(&cfg, e))?;
    let cmd = template
        .replace("{onnx}", &onnx.display().to_string())
        .replace("{config}", &cfg.display().to_string())
        .replace("{dir}", &dir.path().display().to_string());
    let out = Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .output()
        .map_err(|e| err(format!("could not start 'sh -c {cmd}': {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let se = String::from_utf8_lossy(&out.stderr);
        let tail: String = se
            .chars()
            .rev()
            .take(400)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(err(format!("command exited with {}: {tail}", out.status)));
    }
    last_float(&stdout).ok_or_else(|| {
        err(format!(
            "the command printed no number on stdout (got '{}'); print the accuracy last",
            stdout.trim()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert_eq!(
            "proxy".parse::<AccuracySpec>().unwrap(),
            AccuracySpec::Proxy
        );
        assert_eq!(
            "table:acc.csv".parse::<AccuracySpec>().unwrap(),
            AccuracySpec::Table("acc.csv".into())
        );
        assert_eq!(
            "cmd:\"python e.py {onnx}\""
                .parse::<AccuracySpec>()
                .unwrap(),
            AccuracySpec::Cmd("python e.py {onnx}".into())
        );
        assert!("table:".parse::<AccuracySpec>().is_err());
        assert!("cmd:".parse::<AccuracySpec>().is_err());
        assert!("flops".parse::<AccuracySpec>().is_err());
    }

    #[test]
    fn last_number() {
        assert_eq!(
            last_float("epoch 3/10 loss 1.2e-1\nacc=0.913\n"),
            Some(0.913)
        );
        assert_eq!(last_float("accuracy: 91."), Some(91.0));
        assert_eq!(last_float("-0.5"), Some(-0.5));
        assert_eq!(last_float("no numbers here"), None);
    }

    #[test]
    fn table_by_name_and_position() {
        let t =
            "name,accuracy,config\nx, 0.91 ,k3e4-k3e4_k3e3-k3e3_k3e3-k3e3_k3e3-k3e3\ny,0.89,base\n";
        let m = parse_table(t, "t.csv").unwrap();
        assert_eq!(m["k3e4-k3e4_k3e3-k3e3_k3e3-k3e3_k3e3-k3e3"], 0.91);
        assert_eq!(m["base"], 0.89);
        let m = parse_table("cfg,acc\nk3e3-k3e3,0.5\n", "u.csv").unwrap();
        assert_eq!(m["k3e3-k3e3"], 0.5);
        assert!(parse_table("config,accuracy\nk3e3,abc\n", "v.csv").is_err());
        assert!(parse_table("config,accuracy\nnot-a-config,0.5\n", "v.csv").is_err());
        assert!(parse_table("config,accuracy\n", "w.csv").is_err());
    }
}
