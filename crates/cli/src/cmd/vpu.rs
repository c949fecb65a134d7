//! `pimkit vpu`: the QUINN near-memory vector engine (crate pimkit-vpu).

use crate::error::user;
use crate::model::model_label;
use crate::output::print_json;
use pimkit_engine::Engine;
use pimkit_vpu::Arch;
use pimkit_vpu::network::{Characterize, DataflowChoice, NetOptions};
use pimkit_vpu::roofline::{Point, Scale, Sweep, run_sweep_with, table3};
use std::path::{Path, PathBuf};

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(clap::Subcommand, Debug)]
pub enum VpuCmd {
    /// Run a quantized model end to end on the simulated NM-Carus system
    Run {
        /// model.onnx or zoo:NAME?k=v (QOperator quantized, e.g. zoo:q_mobilenet_v2)
        model: String,
        /// Input tensor as NAME=FILE.npy, or FILE.npy for a model with one input
        /// (repeatable; inputs not given get deterministic random data)
        #[arg(long = "input")]
        input: Vec<String>,
        /// Cooperating VPUs: 1 to 64 (the paper evaluates 1, 2 and 4)
        #[arg(long)]
        vpus: Option<usize>,
        /// Off-chip bandwidth in B/cycle: 0.001 to 1e6 (the paper uses 1.2, 0.8 and 0.5)
        #[arg(long, allow_negative_numbers = true)]
        bandwidth: Option<f64>,
        /// Dataflow of the kernel layers: auto (the fastest, tried on the simulated system; see --characterize) | family (each kernel family's characterized winner) | os | is | ws
        #[arg(long, default_value = "auto")]
        dataflow: String,
        /// With --dataflow auto: shape (try the dataflows once per distinct layer workload, later
        /// layers of that workload reuse the winner) | layer (try them at every layer)
        #[arg(long, default_value = "shape")]
        characterize: String,
        /// Start every layer with a cold cache (each layer ends by writing its dirty lines back)
        #[arg(long)]
        cold: bool,
        /// pimkit (every node, pimkit kernels) | paper (quinn §5.11: kernel layers only,
        /// the paper's strict Table 2 kernel formulation)
        #[arg(long, default_value = "pimkit")]
        method: String,
        /// Architecture TOML (default: built-in arch/nm-carus.toml values)
        #[arg(long)]
        arch: Option<PathBuf>,
        /// Write outputs as .npy plus result.json, layers.csv and layers.svg here
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the result as JSON (totals and per-layer costs)
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        load: crate::model::LoadArgs,
    },
    /// Roofline sweeps (quinn Figs. 5-10): CSV + SVG per sweep
    Roofline {
        /// matmul, conv2d, conv1d, depthwise, simd, arch (repeatable; default all)
        #[arg(long = "kernel")]
        kernels: Vec<String>,
        /// Small problem sizes (seconds instead of minutes)
        #[arg(long)]
        quick: bool,
        /// Architecture TOML (default: built-in arch/nm-carus.toml values)
        #[arg(long)]
        arch: Option<PathBuf>,
        /// Directory for the CSV and SVG files (created if missing)
        #[arg(short = 'o', long)]
        out: PathBuf,
        /// Print every sweep point as JSON
        #[arg(long)]
        json: bool,
    },
    /// Print the Table 3 equivalent (vector kernels vs the scalar host)
    Table3 {
        /// Small problem sizes (seconds instead of the paper's sizes)
        #[arg(long)]
        quick: bool,
        /// Architecture TOML (default: built-in arch/nm-carus.toml values)
        #[arg(long)]
        arch: Option<PathBuf>,
        /// Print the table as JSON
        #[arg(long)]
        json: bool,
    },
}

fn arch_of(p: &Option<PathBuf>) -> anyhow::Result<Arch> {
    pimkit_engine::arch::load(p.as_deref()).map_err(user)
}

pub fn run(c: VpuCmd) -> anyhow::Result<()> {
    match c {
        VpuCmd::Run {
            model,
            input,
            vpus,
            bandwidth,
            dataflow,
            characterize,
            cold,
            method,
            arch,
            out,
            json,
            load,
        } => {
            let mut a = arch_of(&arch)?;
            // The flags override the file; validate() checks them with every other field.
            if let Some(v) = vpus {
                a.vpus = v;
            }
            if let Some(b) = bandwidth {
                a.memory.bandwidth = b;
            }
            a.validate()
                .map_err(|e| user(format!("--vpus/--bandwidth/--arch: {e}")))?;
            let df = DataflowChoice::parse(&dataflow).ok_or_else(|| {
                user(format!(
                    "--dataflow {dataflow}: use auto, family, os, is or ws"
                ))
            })?;
            let characterize = Characterize::parse(&characterize).ok_or_else(|| {
                user(format!("--characterize {characterize}: use shape or layer"))
            })?;
            let method = pimkit_vpu::network::Method::parse(&method)
                .ok_or_else(|| user(format!("--method {method}: use pimkit or paper")))?;
            if let Some(dir) = &out {
                // Before the (possibly long) run, so a bad --out fails at once.
                crate::output::create_out_dir(dir, "--out")?;
            }
            let given = crate::model::read_inputs(&input)?;
            let g = crate::model::load_static(&model, &[], &load, &given)?;
            let inputs = crate::model::bind_inputs(&g, given, Some(0))?;
            let pb = crate::output::progress(g.nodes.len() as u64, "layers");
            let vo = pimkit_vpu::VpuOptions {
                net: NetOptions {
                    dataflow: df,
                    cold_layers: cold,
                    method,
                    characterize,
                },
                inputs: Some(inputs),
                quantize_float: false,
            };
            let r = pimkit_vpu::Vpu::run(&g, &a, &vo, &mut |i: usize, _: usize, name: &str| {
                pb.set_position(i as u64);
                pb.set_message(name.to_string());
            });
            pb.finish_and_clear();
            let full = r.map_err(crate::error::engine)?;
            let arch_name = arch.as_ref().map_or(
                <pimkit_vpu::Arch as pimkit_engine::ArchSpec>::DEFAULT_PATH.into(),
                |p| p.display().to_string(),
            );
            let json_out = pimkit_engine::result_json("vpu", &model, &arch_name, &full);
            let r = full.result;
            for note in &r.notes {
                eprintln!("note: {note}");
            }
            if r.kernel_cycles == 0 && r.notes.is_empty() {
                eprintln!(
                    "note: no layer of {} ran on the VPUs (they run QLinearConv/QLinearMatMul/QGemm); everything ran on the modelled host. Quantize the model (QOperator) to use them.",
                    r.model
                );
            } else if r.kernel_cycles == 0 {
                eprintln!(
                    "note: no layer of {} ran on the VPUs; the notes above say why",
                    r.model
                );
            }
            if let Some(dir) = &out {
                let names: Vec<String> =
                    g.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
                crate::output::write_outputs(dir, &names, &r.outputs)?;
                pimkit_vpu::report::write_run_dir(dir, &json_out, &r)
                    .map_err(|e| user(format!("--out: {e}")))?;
            }
            if json {
                return print_json(&json_out);
            }
            println!("{}", pimkit_vpu::report::layer_table(&r).to_terminal());
            println!(
                "{}: {:.1} M cycles ({:.1} ms at {} MHz; compute {:.1} M, DMA stall {:.1} M, host {:.1} M), off-chip {:.2} MiB, {:.1} M ops ({:.2} Ops/cycle), {:.3} J",
                model_label(&model),
                r.cycles as f64 / 1e6,
                r.latency_ms,
                a.clock_mhz,
                r.compute_cycles as f64 / 1e6,
                r.dma_stall_cycles as f64 / 1e6,
                r.host_cycles as f64 / 1e6,
                r.offchip_bytes as f64 / 1048576.0,
                r.ops as f64 / 1e6,
                r.ops as f64 / r.cycles.max(1) as f64,
                r.energy_j
            );
            if r.excluded_cycles > 0 {
                println!(
                    "paper method (quinn §5.11): kernel layers only; {:.1} M cycles of host nodes excluded",
                    r.excluded_cycles as f64 / 1e6
                );
            }
            Ok(())
        }
        VpuCmd::Roofline {
            kernels,
            quick,
            arch,
            out,
            json,
        } => {
            let a = arch_of(&arch)?;
            // Before the sweeps (minutes without --quick), so a bad -o fails at once.
            crate::output::create_out_dir(&out, "--out")?;
            let sweeps: Vec<Sweep> = if kernels.is_empty() {
                Sweep::ALL.to_vec()
            } else {
                kernels
                    .iter()
                    .map(|k| Sweep::parse(k).map_err(user))
                    .collect::<anyhow::Result<_>>()?
            };
            let mut pts = vec![];
            for s in sweeps {
                let pb = crate::output::spinner(&format!("roofline {}", s.name()));
                let got = run_sweep_with(&a, s, Scale { quick }, &mut tick(&pb));
                pb.finish_and_clear();
                pts.extend(got.map_err(user)?);
            }
            let files = pimkit_vpu::report::write_roofline_dir(&pts, Path::new(&out))
                .map_err(|e| user(format!("--out: {e}")))?;
            if json {
                return print_json(&pts);
            }
            for f in files {
                println!("wrote {f}");
            }
            Ok(())
        }
        VpuCmd::Table3 { quick, arch, json } => {
            let a = arch_of(&arch)?;
            let pb = crate::output::spinner("table3 (the §5.9 sweep)");
            let pts = run_sweep_with(&a, Sweep::Simd, Scale { quick }, &mut tick(&pb));
            pb.finish_and_clear();
            let pts = pts.map_err(user)?;
            let t = table3(&pts);
            if json {
                return print_json(&t);
            }
            println!("{}", t.to_terminal());
            Ok(())
        }
    }
}

/// Advance a spinner by one sweep point, naming it.
fn tick(pb: &indicatif::ProgressBar) -> impl FnMut(&Point) + '_ {
    move |p| {
        pb.inc(1);
        let what = if p.label.starts_with(&p.kernel) {
            p.label.clone()
        } else {
            format!("{} {}", p.kernel, p.label)
        };
        pb.set_message(format!("{what} {}", p.dataflow));
    }
}
