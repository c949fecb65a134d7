//! `pimkit puma`: compile a model for the PUMA accelerator, simulate it, or both.
//! Argument parsing and printing only; the work is `pimkit_puma::tool`.

use crate::error::user;

use crate::output::print_json;
use pimkit_engine::Engine;
use pimkit_puma::{Arch, CompileOptions, NumMode, Puma, SimOptions, tool};
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ArchArgs {
    /// Architecture file (default: the built-in arch/puma.toml).
    #[arg(long)]
    arch: Option<PathBuf>,
    /// Constant set: head (simulator HEAD) or paper (paper-era commit).
    #[arg(long)]
    constants: Option<String>,
}

impl ArchArgs {
    /// The architecture file's name for results.
    fn name(&self) -> String {
        self.arch
            .as_ref()
            .map_or("arch/puma.toml".into(), |p| p.display().to_string())
    }
    fn load(&self) -> anyhow::Result<Arch> {
        let mut a: Arch = pimkit_engine::arch::load(self.arch.as_deref()).map_err(user)?;
        if let Some(c) = &self.constants {
            a.constants = match c.as_str() {
                "head" => pimkit_puma::arch::ConstSet::Head,
                "paper" => pimkit_puma::arch::ConstSet::Paper,
                _ => {
                    return Err(user(format!(
                        "--constants must be head or paper, not '{c}'"
                    )));
                }
            };
        }
        Ok(a)
    }
}

#[derive(clap::Args, Debug)]
pub struct CompileArgs {
    /// Keep convolutions fully unrolled.
    #[arg(long)]
    no_loops: bool,
    /// Number formats: auto (fraction bits per tensor from its range) or q4.12 (every
    /// word Q4.12, the original's arithmetic).
    #[arg(long, default_value = "auto")]
    fixed: String,
    /// Calibration inputs for the activation formats (.npy, graph-input order; repeat
    /// the option for more samples of a one-input model). Default: the run's inputs.
    #[arg(long)]
    calibrate: Vec<PathBuf>,
    /// Weight replication: auto (copies of the bottleneck layers within --budget) or N
    /// copies of every layer. Throughput and latency are reported separately.
    #[arg(long)]
    replicate: Option<String>,
    /// MVMU budget of --replicate auto: N (MVMUs), Ntiles, original (the original
    /// compiler's mapping) or node (one node's MVMUs, the default).
    #[arg(long)]
    budget: Option<String>,
    /// Depthwise and grouped convolutions: blockdiag (groups on a block-diagonal
    /// crossbar, one MVM per pixel) or compact (one crossbar column per group's kernel,
    /// one MVM per group and pixel, as the xbar engine's compact boxes).
    #[arg(long, default_value = "blockdiag")]
    depthwise: String,
}

impl CompileArgs {
    fn options(&self, g: &pimkit_ir::Graph) -> anyhow::Result<CompileOptions> {
        let mut o = CompileOptions {
            loops: !self.no_loops,
            fixed: tool::parse_fixed(&self.fixed).map_err(user)?,
            depthwise: tool::parse_depthwise(&self.depthwise).map_err(user)?,
            ..Default::default()
        };
        if let Some(r) = &self.replicate {
            o.replicate = tool::parse_replicate(r, self.budget.as_deref()).map_err(user)?;
        } else if self.budget.is_some() {
            return Err(user("--budget applies to --replicate auto"));
        }
        for p in &self.calibrate {
            o.calibration.push(read_inputs(g, std::slice::from_ref(p))?);
        }
        Ok(o)
    }
}

/// `--input` files with their input names: files given without a name go to the model's
/// inputs in order (the names come from a first load of the model, only when needed).
fn named_inputs(
    model: &str,
    load: &crate::model::LoadArgs,
    given: Vec<(String, pimkit_ir::Tensor)>,
) -> anyhow::Result<Vec<(String, pimkit_ir::Tensor)>> {
    let bare = given.iter().filter(|(n, _)| n.is_empty()).count();
    if bare == 0 || (bare == 1 && given.len() == 1) {
        // Named, or one file for (what must be) a one-input model: bind_inputs checks.
        return Ok(given);
    }
    if bare != given.len() {
        return Err(user(
            "--input: name every file (NAME=FILE.npy) or none (the model's inputs in order)",
        ));
    }
    let probe = crate::model::load_model_full(model, &[], load, &[])?;
    let names: Vec<String> = probe
        .inputs
        .iter()
        .map(|&v| probe.value(v).name.clone())
        .collect();
    if names.len() != given.len() {
        return Err(user(format!(
            "--input: the model has {} inputs ({}); {} files given",
            names.len(),
            names.join(", "),
            given.len()
        )));
    }
    Ok(names
        .into_iter()
        .zip(given.into_iter().map(|(_, t)| t))
        .collect())
}

/// Input tensors in graph-input order.
fn read_inputs(
    g: &pimkit_ir::Graph,
    files: &[PathBuf],
) -> anyhow::Result<HashMap<String, pimkit_ir::Tensor>> {
    let mut m = HashMap::new();
    for (i, &v) in g.inputs.iter().enumerate() {
        let p = files.get(i).ok_or_else(|| {
            user(format!(
                "the model has {} inputs; {} files given",
                g.inputs.len(),
                files.len()
            ))
        })?;
        m.insert(
            g.value(v).name.clone(),
            pimkit_ir::npy::read_npy(p).map_err(user)?,
        );
    }
    Ok(m)
}

#[derive(clap::Subcommand, Debug)]
pub enum PumaCmd {
    /// Compile MODEL (file.onnx or zoo:NAME) into a program directory.
    Compile {
        model: String,
        #[arg(short, long)]
        out: PathBuf,
        #[command(flatten)]
        arch: ArchArgs,
        #[command(flatten)]
        compile: CompileArgs,
        #[command(flatten)]
        load: crate::model::LoadArgs,
    },
    /// Simulate a compiled program directory.
    Sim {
        dir: PathBuf,
        /// Input .npy files in graph-input order (default: the inputs saved at compile time).
        #[arg(long)]
        input: Vec<PathBuf>,
        /// Write outputs as DIR/<output name>.npy.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Reproduce the original simulator's bit-serial rounding.
        #[arg(long)]
        bitserial: bool,
        /// Stop with an error if the program has not halted after this many cycles
        /// (an infinite loop); at most 2^50.
        #[arg(long, default_value_t = pimkit_puma::sim::DEFAULT_MAX_CYCLES)]
        max_cycles: u64,
        /// Send every MVM through the analog crossbar model (docs/accuracy.md): the [analog]
        /// and [device] sections of FILE (default: the built-in arch/rram-128.toml's); the
        /// geometry, DAC and ADC bits are the PUMA architecture's.
        #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "FILE")]
        nonideal: Option<String>,
        /// Relative output error (of the outputs' range) above which a warning is given.
        #[arg(long, default_value_t = pimkit_puma::DEFAULT_TOLERANCE)]
        tolerance: f64,
        #[arg(long)]
        json: bool,
    },
    /// Compile and simulate MODEL, comparing with the reference interpreter.
    Run {
        model: String,
        /// Input tensor as NAME=FILE.npy, or FILE.npy (files without a name go to the
        /// model's inputs in order); the files' shapes bind the model's symbolic dims
        #[arg(long)]
        input: Vec<String>,
        /// Write the outputs as DIR/<output name>.npy.
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        arch: ArchArgs,
        #[command(flatten)]
        compile: CompileArgs,
        #[arg(long)]
        bitserial: bool,
        /// Stop with an error if the program has not halted after this many cycles
        /// (per simulation; an infinite loop); at most 2^50.
        #[arg(long, default_value_t = pimkit_puma::sim::DEFAULT_MAX_CYCLES)]
        max_cycles: u64,
        /// Relative output error (of the outputs' range) above which a warning is given.
        #[arg(long, default_value_t = pimkit_puma::DEFAULT_TOLERANCE)]
        tolerance: f64,
        /// Compile and simulate each layer separately, inputs from the reference
        /// interpreter, summing latency and energy (the original's method for CNNs).
        /// See docs/puma.md.
        #[arg(long)]
        per_layer: bool,
        /// Send every MVM through the analog crossbar model (docs/accuracy.md): the [analog]
        /// and [device] sections of FILE (default: the built-in arch/rram-128.toml's); the
        /// geometry, DAC and ADC bits are the PUMA architecture's.
        #[arg(long, num_args = 0..=1, default_missing_value = "", value_name = "FILE")]
        nonideal: Option<String>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        load: crate::model::LoadArgs,
    },
}

/// `--nonideal [FILE]`: the analog model's read-out and device sections.
fn nonideal(arg: Option<String>) -> anyhow::Result<Option<pimkit_analog::mvmu::NonIdeal>> {
    let Some(path) = arg else { return Ok(None) };
    let text = if path.is_empty() {
        None
    } else {
        Some(std::fs::read_to_string(&path).map_err(|e| user(format!("--nonideal {path}: {e}")))?)
    };
    let (analog, device) = pimkit_analog::mvmu::read_sections(text.as_deref())
        .map_err(|e| user(format!("--nonideal {path}: {e}")))?;
    Ok(Some(pimkit_analog::mvmu::NonIdeal {
        analog,
        device,
        seed: 0,
    }))
}

fn mode(bitserial: bool) -> NumMode {
    if bitserial {
        NumMode::BitSerial
    } else {
        NumMode::Exact
    }
}

fn sim_options(
    bitserial: bool,
    max_cycles: u64,
    tolerance: f64,
    ni: Option<String>,
) -> anyhow::Result<SimOptions> {
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(user(format!(
            "--tolerance must be a non-negative number, not {tolerance}"
        )));
    }
    Ok(SimOptions {
        mode: mode(bitserial),
        max_cycles,
        tolerance,
        nonideal: nonideal(ni)?,
        ..Default::default()
    })
}

/// Notes and warnings of a result, on stderr.
fn tell(res: &pimkit_puma::PumaResult) {
    for n in &res.notes {
        eprintln!("note: {n}");
    }
    for w in &res.warnings {
        eprintln!("warning: {w}");
    }
}

pub fn run(c: PumaCmd) -> anyhow::Result<()> {
    match c {
        PumaCmd::Compile {
            model,
            out,
            arch,
            compile,
            load,
        } => {
            crate::output::create_out_dir(&out, "-o")?;
            let g = crate::model::load_static(&model, &[], &load, &[])?;
            let a = arch.load()?;
            let opts = compile.options(&g)?;
            // A spinner (elapsed time) while a large network compiles.
            let pb = crate::output::spinner("puma compile");
            pb.set_message(format!("compiling into {}", out.display()));
            let p = tool::compile_to_dir(&g, &a, &opts, &out);
            pb.finish_and_clear();
            let p = p.map_err(user)?;
            print!("{}", p.placement_summary());
            println!("wrote {}", out.display());
        }
        PumaCmd::Sim {
            dir,
            input,
            out,
            bitserial,
            max_cycles,
            nonideal: ni,
            tolerance,
            json,
        } => {
            let so = sim_options(bitserial, max_cycles, tolerance, ni)?;
            let pb = crate::output::spinner("puma sim");
            pb.set_message(format!("simulating {}", dir.display()));
            let r = tool::sim_dir(&dir, &input, &so);
            pb.finish_and_clear();
            let (res, outs, p) = r.map_err(user)?;
            if let Some(o) = out {
                let names: Vec<String> = p.outputs.iter().map(|o| o.name.clone()).collect();
                tool::write_outputs(&o, &names, &outs).map_err(user)?;
            }
            tell(&res);
            if json {
                print_json(&res)?
            } else {
                print!("{}", tool::summary(&res))
            }
        }
        PumaCmd::Run {
            model,
            input,
            out,
            arch,
            compile,
            bitserial,
            max_cycles,
            tolerance,
            per_layer,
            nonideal: ni,
            json,
            load,
        } => {
            let given = named_inputs(&model, &load, crate::model::read_inputs(&input)?)?;
            let g = crate::model::load_static(&model, &[], &load, &given)?;
            let a = arch.load()?;
            let opts = compile.options(&g)?;
            let inputs = if given.is_empty() {
                None
            } else {
                Some(crate::model::bind_inputs(&g, given, None)?)
            };
            let so = sim_options(bitserial, max_cycles, tolerance, ni)?;
            if per_layer && out.is_some() {
                return Err(user(
                    "--out writes the outputs of a whole-network run; --per-layer simulates layers on the reference run's inputs",
                ));
            }
            let popts = pimkit_puma::PumaOptions {
                compile: opts,
                sim: so,
                inputs,
                per_layer: if per_layer {
                    pimkit_puma::PerLayer::Always
                } else {
                    pimkit_puma::PerLayer::Never
                },
            };
            let pb = crate::output::progress(0, "layers");
            let r = Puma::run(&g, &a, &popts, &mut |i: usize, n: usize, name: &str| {
                pb.set_length(n as u64);
                pb.set_position(i as u64);
                pb.set_message(name.to_string());
            });
            pb.finish_and_clear();
            let r = r.map_err(crate::error::engine)?;
            let json_out = pimkit_engine::result_json("puma", &model, &arch.name(), &r);
            match &r {
                pimkit_puma::PumaOutput::PerLayer(pl) => {
                    for n in &pl.notes {
                        eprintln!("note: {n}");
                    }
                    for w in &pl.warnings {
                        eprintln!("warning: {w}");
                    }
                    if json {
                        print_json(&json_out)?
                    } else {
                        print!("{}", tool::per_layer_summary(pl))
                    }
                }
                pimkit_puma::PumaOutput::Whole {
                    result,
                    outputs,
                    program,
                } => {
                    if let Some(o) = out {
                        let names: Vec<String> =
                            program.outputs.iter().map(|o| o.name.clone()).collect();
                        tool::write_outputs(&o, &names, outputs).map_err(user)?;
                    }
                    tell(result);
                    if json {
                        print_json(&json_out)?
                    } else {
                        print!("{}", tool::summary(result))
                    }
                }
            }
        }
    }
    Ok(())
}
