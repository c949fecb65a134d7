//! `pimkit xbar`: RRAM crossbar compilation (RNC). Library: pimkit-xbar; docs/xbar.md.

use crate::error::user;
use crate::model::model_label;
use pimkit_engine::{ArchSpec, Engine};
use pimkit_xbar::sweep::{SweepSpec, sweep_graph};
use pimkit_xbar::{Arch, Budget, Xbar, XbarError, XbarOptions};
use std::path::PathBuf;

#[derive(clap::Subcommand, Debug)]
pub enum XbarCmd {
    /// Crossbar-aware neural architecture search (RNC): NSGA-II over the OFA MobileNetV3 space
    Nas(super::nas::NasArgs),
    /// Map a model onto crossbars: partition, duplication, packing, latency vs the ISAAC-like baseline.
    Map(MapArgs),
    /// Sweep crossbar budgets x depthwise split factors x sample counts (CSV + SVG charts).
    Sweep(SweepArgs),
    /// Analog accuracy: ADC/DAC precision, bit slicing, device variation, stuck-at faults and IR drop
    /// on a model's outputs (Monte-Carlo trials, sweeps; docs/accuracy.md).
    Accuracy(super::accuracy::AccuracyArgs),
    /// Hardware cost of the mapping: energy per inference by component, area, latency,
    /// throughput, power, TOPS/W on a component library (isaac, puma, neurosim or a file; docs/cost.md).
    Cost(CostArgs),
}

#[derive(clap::Args, Debug)]
pub struct CommonArgs {
    /// Model: path.onnx or zoo:NAME (e.g. zoo:rnc_mobilenet_v3_small).
    pub model: String,
    /// Architecture TOML (default: the built-in arch/rram-128.toml).
    #[arg(long)]
    pub arch: Option<PathBuf>,
    /// Crossbar size (rows = columns).
    #[arg(long)]
    pub xbar: Option<usize>,
    /// Depthwise/grouped mapping: compact (RNC) or blockdiag.
    #[arg(long)]
    pub depthwise: Option<String>,
    /// Rule set: pimkit or rnc-compat.
    #[arg(long)]
    pub mode: Option<String>,
    /// Seed of the random box orders.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Do not duplicate layers (packing only, minimum crossbars).
    #[arg(long)]
    pub no_dup: bool,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

/// The crossbar budget and depthwise split of `xbar map` and `xbar cost`.
#[derive(clap::Args, Debug)]
pub struct BudgetArgs {
    /// Budget as a multiple of the ISAAC-like crossbar count.
    #[arg(long, conflicts_with = "crossbars", value_parser = crate::bounds::budget)]
    pub budget: Option<f64>,
    /// Budget as an absolute number of crossbars.
    #[arg(long, value_parser = crate::bounds::int_in::<1, 16777216>)]
    pub crossbars: Option<usize>,
    /// Depthwise split factor S_DW.
    #[arg(long, value_parser = crate::bounds::int_in::<1, 4096>)]
    pub sdw: Option<usize>,
}

impl BudgetArgs {
    /// Set `opts`' budget and S_DW from these flags.
    fn apply(&self, opts: &mut XbarOptions) {
        opts.budget = Budget::from_flags(self.budget, self.crossbars);
        opts.sdw = self.sdw;
    }
}

#[derive(clap::Args, Debug)]
pub struct MapArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Samples streamed through the network.
    #[arg(long, value_parser = crate::bounds::int_in::<1, 1048576>)]
    pub samples: Option<usize>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write result.json, summary.csv, layers.csv and packing.svg here.
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Budgets (multiples of the ISAAC-like crossbar count).
    #[arg(long, value_delimiter = ',', default_value = "0.8,1,1.2,1.8", value_parser = crate::bounds::budget)]
    pub budgets: Vec<f64>,
    /// Depthwise split factors.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20")]
    pub sdw: Vec<usize>,
    /// Sample counts.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8,16,32,64,128,256,512,1024",
        value_parser = crate::bounds::int_in::<1, 1048576>
    )]
    pub samples: Vec<usize>,
    /// Print the sweep as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write sweep.csv, sweep.json, speedup.svg and sdw.svg here.
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct CostArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Component library: a preset (isaac, puma, neurosim) or a TOML file laid over one.
    #[arg(long, default_value = "isaac")]
    pub components: String,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Design-space sweep NAME=V1,V2,... (xbar, rows, cols, adc_bits, cell_bits, dac_bits,
    /// input_bits, weight_bits; the product of the axes, --jobs points at a time).
    #[arg(long, num_args = 1.., conflicts_with_all = ["inputs", "random"])]
    pub sweep: Vec<String>,
    /// Value-dependent counts from reference runs on the .npy inputs in this directory.
    #[arg(long, conflicts_with = "random")]
    pub inputs: Option<PathBuf>,
    /// Value-dependent counts from reference runs on this many random inputs.
    #[arg(long, value_parser = crate::bounds::int_in::<1, 100000>)]
    pub random: Option<usize>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write result.json, summary.csv, layers.csv, components.csv, energy.svg and area.svg
    /// here (a sweep: sweep.csv, sweep.json, front.svg).
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
}

fn xerr(e: XbarError) -> anyhow::Error {
    crate::error::engine(pimkit_xbar::engine::engine_error(e))
}

/// The architecture and engine options of the shared arguments.
fn setup_opts(c: &CommonArgs) -> anyhow::Result<(Arch, XbarOptions)> {
    let arch = Arch::load_sized(c.arch.as_deref(), c.xbar).map_err(user)?;
    let opts = XbarOptions {
        label: model_label(&c.model),
        seed: c.seed,
        no_dup: c.no_dup,
        ..Default::default()
    }
    .with_names(c.mode.as_deref(), c.depthwise.as_deref())
    .map_err(user)?;
    Ok((arch, opts))
}

/// The model, architecture and engine options of the shared arguments.
fn setup(c: &CommonArgs) -> anyhow::Result<(pimkit_ir::Graph, Arch, XbarOptions)> {
    let (arch, opts) = setup_opts(c)?;
    // Shape-only weights suffice for mapping (ignored for .onnx files).
    let g =
        crate::model::load_static(&c.model, &[("weights".into(), "none".into())], &c.load, &[])?;
    Ok((g, arch, opts))
}

pub fn run(c: XbarCmd) -> anyhow::Result<()> {
    match c {
        XbarCmd::Cost(a) => cost(a),
        XbarCmd::Nas(a) => super::nas::run(a),
        XbarCmd::Accuracy(a) => super::accuracy::run(a),
        XbarCmd::Map(a) => {
            if let Some(dir) = &a.out {
                crate::output::create_out_dir(dir, "-o")?;
            }
            let (g, arch, mut opts) = setup(&a.common)?;
            a.budget.apply(&mut opts);
            opts.samples = a.samples;
            opts.packing_svg = a.out.is_some().then_some(2000);
            // The engine's stages (extract, map, sweep): a huge model maps for seconds.
            let pb = crate::output::spinner("xbar map");
            let out = Xbar::run(&g, &arch, &opts, &mut |i: usize, _: usize, what: &str| {
                pb.set_position(i as u64);
                pb.set_message(what.to_string());
            });
            pb.finish_and_clear();
            let out = out.map_err(crate::error::engine)?;
            let r = &out.map;
            let arch_name = a
                .common
                .arch
                .as_ref()
                .map_or(Arch::DEFAULT_PATH.into(), |p| p.display().to_string());
            let json = pimkit_engine::result_json("xbar", &a.common.model, &arch_name, &out);
            let (summary, layers) = pimkit_xbar::result_tables(r);
            if a.json {
                crate::output::print_json(&json)?;
            } else {
                println!("{}", summary.to_terminal());
                println!("{}", layers.to_terminal());
                if !r.fits {
                    println!(
                        "note: the model does not fit {} crossbars; the packer needed {}",
                        r.crossbars_budget, r.crossbars_used
                    );
                }
            }
            if let Some(dir) = &a.out {
                out.write_dir(dir, &json)
                    .map_err(|e| user(format!("-o {}: {e}", dir.display())))?;
                if !a.json {
                    println!("wrote {}", dir.display());
                }
            }
            Ok(())
        }
        XbarCmd::Sweep(a) => {
            if let Some(dir) = &a.out {
                crate::output::create_out_dir(dir, "-o")?;
            }
            let (g, arch, xo) = setup(&a.common)?;
            let opts = xo.resolve(&arch);
            let spec = SweepSpec {
                budgets: a.budgets.clone(),
                sdws: a.sdw.clone(),
                samples: a.samples.clone(),
            };
            let s = sweep_graph(&model_label(&a.common.model), &g, &arch, &opts, &spec)
                .map_err(xerr)?;
            if a.json {
                crate::output::print_json(&s)?;
            } else {
                println!("{}", s.table().to_terminal());
            }
            if let Some(dir) = &a.out {
                s.write_dir(dir, opts.samples)
                    .map_err(|e| user(format!("-o {}: {e}", dir.display())))?;
                if !a.json {
                    println!("wrote {}", dir.display());
                }
            }
            Ok(())
        }
    }
}

fn cost(a: CostArgs) -> anyhow::Result<()> {
    use pimkit_xbar::accuracy::InputSource;
    use pimkit_xbar::cost::{Cost, CostOptions, cost_tables};
    // Bad component files and sweep axes are found before anything is loaded or written.
    let lib = pimkit_xbar::cost::load_components(&a.components).map_err(user)?;
    let axes = a
        .sweep
        .iter()
        .map(|s| pimkit_xbar::cost::sweep::parse_axis(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(user)?;
    if let Some(dir) = &a.out {
        crate::output::create_out_dir(dir, "-o")?;
    }
    let inputs = match (&a.inputs, a.random) {
        (Some(d), _) => Some(InputSource::Dir(d.clone())),
        (None, Some(n)) => Some(InputSource::Random {
            n,
            seed: a.common.seed.unwrap_or(0),
        }),
        (None, None) => None,
    };
    let (g, arch, mut map) = if inputs.is_some() {
        // Reference runs need the weights.
        let (arch, map) = setup_opts(&a.common)?;
        let g = crate::model::load_static(&a.common.model, &[], &a.common.load, &[])?;
        (g, arch, map)
    } else {
        setup(&a.common)?
    };
    a.budget.apply(&mut map);
    let opts = CostOptions {
        map,
        components: lib,
        inputs,
    };
    if !axes.is_empty() {
        let s = pimkit_xbar::cost::sweep::sweep(&g, &arch, &opts, &axes).map_err(xerr)?;
        if a.json {
            crate::output::print_json(&s)?;
        } else {
            println!("{}", s.table().to_terminal());
        }
        if let Some(dir) = &a.out {
            s.write_dir(dir)
                .map_err(|e| user(format!("-o {}: {e}", dir.display())))?;
            if !a.json {
                println!("wrote {}", dir.display());
            }
        }
        return Ok(());
    }
    let pb = crate::output::progress(3, "xbar cost");
    let out = Cost::run(&g, &arch, &opts, &mut |i: usize, n: usize, what: &str| {
        pb.set_length(n as u64);
        pb.set_position(i as u64);
        pb.set_message(what.to_string());
    });
    pb.finish_and_clear();
    let out = out.map_err(crate::error::engine)?;
    let arch_name = a
        .common
        .arch
        .as_ref()
        .map_or(Arch::DEFAULT_PATH.into(), |p| p.display().to_string());
    let json = pimkit_engine::result_json("cost", &a.common.model, &arch_name, &out);
    if a.json {
        crate::output::print_json(&json)?;
    } else {
        let (s, l, c) = cost_tables(&out);
        println!("{}", s.to_terminal());
        println!("{}", c.to_terminal());
        println!("{}", l.to_terminal());
        for n in &out.notes {
            println!("note: {n}");
        }
    }
    if let Some(dir) = &a.out {
        out.write_dir(dir, &json)
            .map_err(|e| user(format!("-o {}: {e}", dir.display())))?;
        if !a.json {
            println!("wrote {}", dir.display());
        }
    }
    Ok(())
}
