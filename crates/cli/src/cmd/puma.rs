//! `pimkit puma`: compile a model for the PUMA accelerator, simulate it, or both.
//! (Staged copy: the lead installs it as crates/cli/src/cmd/puma.rs once the CLI
//! depends on pimkit-puma.)

use crate::error::user;

use crate::output::print_json;
use pimkit_puma::{Arch, CompileOptions, NumMode, SimOptions, run_graph, tool};
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
    fn load(&self) -> anyhow::Result<Arch> {
        let mut a = match &self.arch {
            Some(p) => Arch::load(p).map_err(user)?,
            None => Arch::default(),
        };
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

#[derive(clap::Subcommand, Debug)]
pub enum PumaCmd {
    /// Compile MODEL (file.onnx or zoo:NAME) into a program directory.
    Compile {
        model: String,
        #[arg(short, long)]
        out: PathBuf,
        #[command(flatten)]
        arch: ArchArgs,
        /// Keep convolutions fully unrolled.
        #[arg(long)]
        no_loops: bool,
        #[command(flatten)]
        load: crate::model::LoadArgs,
    },
    /// Simulate a compiled program directory.
    Sim {
        dir: PathBuf,
        /// Input .npy files in graph-input order (default: the inputs saved at compile time).
        #[arg(long)]
        input: Vec<PathBuf>,
        /// Write outputs as DIR/output_<i>.npy.
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
        #[arg(long)]
        json: bool,
    },
    /// Compile and simulate MODEL, comparing with the reference interpreter.
    Run {
        model: String,
        #[arg(long)]
        input: Vec<PathBuf>,
        #[command(flatten)]
        arch: ArchArgs,
        #[arg(long)]
        bitserial: bool,
        /// Stop with an error if the program has not halted after this many cycles
        /// (per simulation; an infinite loop); at most 2^50.
        #[arg(long, default_value_t = pimkit_puma::sim::DEFAULT_MAX_CYCLES)]
        max_cycles: u64,
        /// Compile and simulate each layer separately, inputs from the reference
        /// interpreter, summing latency and energy (the original's method for CNNs whose
        /// feature maps do not fit; layers that still do not fit are simulated smaller
        /// and scaled, ISS-65). See docs/puma.md.
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

pub fn run(c: PumaCmd) -> anyhow::Result<()> {
    match c {
        PumaCmd::Compile {
            model,
            out,
            arch,
            no_loops,
            load,
        } => {
            crate::output::create_out_dir(&out, "-o")?;
            let g = crate::model::load_static(&model, &[], &load, &[])?;
            let a = arch.load()?;
            let opts = CompileOptions {
                loops: !no_loops,
                ..Default::default()
            };
            let p = tool::compile_to_dir(&g, &a, &opts, &out).map_err(user)?;
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
            json,
        } => {
            let so = SimOptions {
                mode: mode(bitserial),
                max_cycles,
                nonideal: nonideal(ni)?,
                ..Default::default()
            };
            let (res, outs, _) = tool::sim_dir(&dir, &input, &so).map_err(user)?;
            if let Some(o) = out {
                tool::write_outputs(&o, &outs).map_err(user)?;
            }
            if json {
                print_json(&res)?
            } else {
                print!("{}", tool::summary(&res))
            }
        }
        PumaCmd::Run {
            model,
            input,
            arch,
            bitserial,
            max_cycles,
            per_layer,
            nonideal: ni,
            json,
            load,
        } => {
            let g = crate::model::load_static(&model, &[], &load, &[])?;
            let a = arch.load()?;
            let inputs = if input.is_empty() {
                None
            } else {
                let mut m = std::collections::HashMap::new();
                for (i, &v) in g.inputs.iter().enumerate() {
                    let p = input.get(i).ok_or_else(|| {
                        user(format!(
                            "the model has {} inputs; {} --input files given",
                            g.inputs.len(),
                            input.len()
                        ))
                    })?;
                    m.insert(
                        g.value(v).name.clone(),
                        pimkit_ir::npy::read_npy(p).map_err(user)?,
                    );
                }
                Some(m)
            };
            let so = SimOptions {
                mode: mode(bitserial),
                max_cycles,
                nonideal: nonideal(ni)?,
                ..Default::default()
            };
            if per_layer {
                let pb = crate::output::progress(0, "layers");
                let r = pimkit_puma::run_per_layer_with(
                    &g,
                    &a,
                    &CompileOptions::default(),
                    &so,
                    inputs,
                    &mut |i, n, name| {
                        pb.set_length(n as u64);
                        pb.set_position(i as u64);
                        pb.set_message(name.to_string());
                    },
                );
                pb.finish_and_clear();
                let r = r.map_err(user)?;
                if json {
                    print_json(&r)?
                } else {
                    print!("{}", tool::per_layer_summary(&r))
                }
                return Ok(());
            }
            let (res, _, _) =
                run_graph(&g, &a, &CompileOptions::default(), &so, inputs).map_err(user)?;
            if json {
                print_json(&res)?
            } else {
                print!("{}", tool::summary(&res))
            }
        }
    }
    Ok(())
}
