//! What the `pimkit puma` subcommands do, as library functions (the CLI is a thin shell).

use crate::arch::Arch;
use crate::compile::{CompileError, CompileOptions, compile};
use crate::program::{Program, ProgramError};
use crate::result::{PumaResult, RunError, run_program};
use crate::sim::SimOptions;
use pimkit_ir::{Graph, Tensor};
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Program(#[from] ProgramError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("{0}")]
    Input(String),
}

/// `create_dir_all(dir)`, an error naming the directory and what it is for.
fn create_dir(dir: &Path, what: &str) -> Result<(), ToolError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        let hint = if dir.is_file() || dir.ancestors().skip(1).any(|a| a.is_file()) {
            " (a regular file is in the way: pass a directory path)"
        } else {
            ""
        };
        ToolError::Input(format!("cannot create {what} {}: {e}{hint}", dir.display()))
    })
}

/// Deterministic inputs for a program (uniform in [-1, 1), as the reference
/// interpreter's `random_inputs` draws them for float inputs).
pub fn default_inputs(g: &Graph) -> HashMap<String, Tensor> {
    pimkit_interp::random_inputs(g, 0)
}

/// Compile `g` into `dir`. When the graph has weights, the reference interpreter's
/// outputs for the default inputs are saved too (reference/*.npy, inputs/*.npy), so that
/// `sim DIR` can report `max_abs_error` without the model. A quantized model is compiled
/// as its float equivalent (`crate::dequant`), whose outputs are the reference.
pub fn compile_to_dir(
    g: &Graph,
    arch: &Arch,
    opts: &CompileOptions,
    dir: &Path,
) -> Result<Program, ToolError> {
    let fg = if crate::dequant::has_quantized(g) {
        crate::dequant::float_equivalent(g)
            .map_err(|e| ToolError::Input(format!("graph `{}`: {e}", g.name)))?
    } else {
        None
    };
    let g = fg.as_ref().map_or(g, |f| &f.graph);
    let p = compile(g, arch, opts)?;
    p.save(dir)?;
    let inputs = default_inputs(g);
    let idir = dir.join("inputs");
    create_dir(&idir, "the inputs directory")?;
    for (i, io) in p.inputs.iter().enumerate() {
        let path = idir.join(format!("input_{i}.npy"));
        pimkit_ir::npy::write_npy(&path, &inputs[&io.name])
            .map_err(|e| ToolError::Input(e.to_string()))?;
    }
    if !p.shape_only {
        let outs =
            pimkit_interp::run(g, &inputs).map_err(|e| RunError::Reference(e.to_string()))?;
        let rdir = dir.join("reference");
        create_dir(&rdir, "the reference directory")?;
        for (i, t) in outs.iter().enumerate() {
            let t = Tensor::from_f32(t.shape.clone(), t.to_f32_vec());
            pimkit_ir::npy::write_npy(&rdir.join(format!("output_{i}.npy")), &t)
                .map_err(|e| ToolError::Input(e.to_string()))?;
        }
    }
    Ok(p)
}

/// Simulate a compiled directory. `inputs` are .npy files in graph-input order; without
/// them the saved default inputs are used and compared with the saved reference outputs.
pub fn sim_dir(
    dir: &Path,
    inputs: &[std::path::PathBuf],
    opts: &SimOptions,
) -> Result<(PumaResult, Vec<Tensor>, Program), ToolError> {
    let p = Program::load(dir)?;
    let mut map = HashMap::new();
    let use_default = inputs.is_empty();
    for (i, io) in p.inputs.iter().enumerate() {
        let path = if use_default {
            dir.join("inputs").join(format!("input_{i}.npy"))
        } else {
            inputs.get(i).cloned().ok_or_else(|| {
                ToolError::Input(format!(
                    "the program has {} inputs; {} --input files given",
                    p.inputs.len(),
                    inputs.len()
                ))
            })?
        };
        // NpyError names the path.
        let t = pimkit_ir::npy::read_npy(&path).map_err(|e| ToolError::Input(e.to_string()))?;
        map.insert(io.name.clone(), t);
    }
    let reference: Option<Vec<Tensor>> = if use_default && dir.join("reference").exists() {
        let mut v = Vec::new();
        for i in 0..p.outputs.len() {
            let path = dir.join("reference").join(format!("output_{i}.npy"));
            v.push(pimkit_ir::npy::read_npy(&path).map_err(|e| ToolError::Input(e.to_string()))?);
        }
        Some(v)
    } else {
        None
    };
    let (res, outs) = run_program(&p, &map, opts, reference.as_deref())?;
    Ok((res, outs, p))
}

/// A file name for an output: its graph name with characters outside
/// `[A-Za-z0-9._-]` replaced by `_` (`output_<i>` when empty), unique among `taken`.
pub fn output_file_name(name: &str, i: usize, taken: &mut Vec<String>) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() || base.chars().all(|c| c == '.') {
        base = format!("output_{i}");
    }
    let mut f = format!("{base}.npy");
    let mut k = 1;
    while taken.contains(&f) {
        f = format!("{base}_{k}.npy");
        k += 1;
    }
    taken.push(f.clone());
    f
}

/// Write outputs as `<sanitized output name>.npy` (`output_file_name`); returns the
/// file names.
pub fn write_outputs(
    dir: &Path,
    names: &[String],
    outs: &[Tensor],
) -> Result<Vec<String>, ToolError> {
    create_dir(dir, "the output directory (--out)")?;
    let mut taken = Vec::new();
    for (i, t) in outs.iter().enumerate() {
        let name = names.get(i).map(String::as_str).unwrap_or("");
        let f = output_file_name(name, i, &mut taken);
        // NpyError names the file.
        pimkit_ir::npy::write_npy(&dir.join(&f), t)
            .map_err(|e| ToolError::Input(format!("cannot write output `{name}`: {e}")))?;
    }
    Ok(taken)
}

/// `--depthwise blockdiag|compact`.
pub fn parse_depthwise(s: &str) -> Result<crate::compile::Depthwise, String> {
    match s {
        "blockdiag" => Ok(crate::compile::Depthwise::BlockDiag),
        "compact" => Ok(crate::compile::Depthwise::Compact),
        _ => Err(format!(
            "--depthwise must be blockdiag or compact, not '{s}'"
        )),
    }
}

/// `--fixed`: `auto` (per tensor) or `q4.12` (every word in the architecture's format).
pub fn parse_fixed(s: &str) -> Result<crate::compile::Fixed, String> {
    match s {
        "auto" | "per-tensor" => Ok(crate::compile::Fixed::PerTensor),
        "q4.12" | "uniform" => Ok(crate::compile::Fixed::Uniform),
        _ => Err(format!("--fixed must be auto or q4.12, not '{s}'")),
    }
}

/// `--replicate auto|N` with `--budget N|Ntiles|original|node` (default: one node).
pub fn parse_replicate(
    s: &str,
    budget: Option<&str>,
) -> Result<crate::compile::replicate::Replicate, String> {
    use crate::compile::replicate::{Budget, Replicate};
    let b = match budget {
        None | Some("node") => Budget::Node,
        Some("original") => Budget::Original,
        Some(x) => {
            let (num, tiles) = match x.strip_suffix("tiles") {
                Some(n) => (n, true),
                None => (x, false),
            };
            let n: usize = num.trim().parse().map_err(|_| {
                format!("--budget must be N (MVMUs), Ntiles, original or node, not '{x}'")
            })?;
            if tiles {
                Budget::Tiles(n)
            } else {
                Budget::Mvmus(n)
            }
        }
    };
    match s {
        "auto" => Ok(Replicate::Auto(b)),
        "off" | "1" => Ok(Replicate::Off),
        _ => match s.parse::<usize>() {
            Ok(n) if (1..=4096).contains(&n) => Ok(Replicate::Factor(n)),
            _ => Err(format!(
                "--replicate must be auto or a copy count 1..=4096, not '{s}'"
            )),
        },
    }
}

/// Human-readable summary of a result.
pub fn summary(res: &PumaResult) -> String {
    let mut s = format!(
        "model {}  ({:?} arithmetic, {} constants)\ncycles {}  latency {:.3} us  energy {:.1} nJ\ntiles {} ({} node(s))  cores {}  MVMUs {}  MVMU utilization {:.2} %\nsimulated instructions {} (wall {:.3} s)\n",
        res.model,
        res.mode,
        res.constants,
        res.stats.cycles,
        res.stats.latency_ns / 1000.0,
        res.stats.energy_nj,
        res.stats.tiles,
        res.nodes,
        res.stats.cores,
        res.stats.mvmus,
        100.0 * res.stats.mvmu_utilization,
        res.stats.simulated_instructions,
        res.wall_s
    );
    if let Some(p) = &res.replication {
        s.push_str(&format!(
            "replication: {} MVMUs of a {}-MVMU budget;",
            p.mvmus, p.budget_mvmus
        ));
        for l in p.layers.iter().filter(|l| l.copies > 1) {
            s.push_str(&format!(" {} x{};", l.node, l.copies));
        }
        s.push('\n');
    }
    if res.stats.steady_state_cycles > 0 {
        s.push_str(&format!(
            "steady state: {:.1} inferences/s (one per {} cycles, set by {}); latency above is one inference alone\n",
            res.stats.throughput_per_s, res.stats.steady_state_cycles, res.stats.bottleneck
        ));
    }
    s.push_str("energy (nJ):");
    for (k, v) in &res.stats.energy_breakdown_nj {
        s.push_str(&format!(" {k} {v:.2};"));
    }
    s.push_str("\ninstructions:");
    for (k, v) in &res.stats.instructions {
        if *v > 0 {
            s.push_str(&format!(" {k} {v};"));
        }
    }
    s.push('\n');
    match res.max_abs_error {
        Some(e) => {
            s.push_str(&format!(
                "max |error| vs reference interpreter: {e:.6} ({:.3} % of the outputs' range, tolerance {:.2} %)",
                100.0 * res.relative_error.unwrap_or(0.0),
                100.0 * res.tolerance
            ));
            if let Some(t) = res.top1_agree {
                s.push_str(if t {
                    "; top-1 agrees"
                } else {
                    "; top-1 DIFFERS"
                });
            }
            s.push('\n');
        }
        None => s.push_str("max |error|: not compared (custom inputs or shape-only weights)\n"),
    }
    s
}

/// Human-readable table of a layer-by-layer run (`pimkit puma run --per-layer`).
pub fn per_layer_summary(r: &crate::PerLayerResult) -> String {
    let mut s = format!(
        "model {}  ({:?} arithmetic), simulated layer by layer (reference §5.3, ISS-38/ISS-65)\n{:<16} {:>18} {:>18} {:>8} {:>12} {:>12} {:>6} {:>6} {:>10}\n",
        r.model,
        r.mode,
        "layer",
        "input",
        "simulated",
        "scale",
        "cycles",
        "energy nJ",
        "tiles",
        "MVMUs",
        "max |err|"
    );
    for l in &r.layers {
        s.push_str(&format!(
            "{:<16} {:>18} {:>18} {:>8.2} {:>12} {:>12.1} {:>6} {:>6} {:>10}\n",
            l.name,
            format!("{:?}", l.input_shape),
            format!("{:?}", l.simulated_shape),
            l.scale,
            l.cycles,
            l.energy_nj,
            l.tiles,
            l.mvmus,
            l.max_abs_error
                .map(|e| format!("{e:.2e}"))
                .unwrap_or_else(|| "-".into())
        ));
    }
    s.push_str(&format!(
        "total: cycles {}  latency {:.3} us  energy {:.1} nJ{}\n",
        r.cycles,
        r.latency_ns / 1000.0,
        r.energy_nj,
        if r.scaled {
            "  (some layers simulated smaller and scaled by ((X+2p)/(x+2p))^2, ISS-65)"
        } else {
            ""
        }
    ));
    s
}
