//! `pimkit xbar nas`: crossbar-aware neural architecture search (RNC, pimkit-nas).

use crate::error::user;
use anyhow::Context;
use pimkit_nas::{AccuracySpec, HwObjective, NsgaConfig, SearchConfig, Space};
use pimkit_xbar::{Arch, Budget};
use std::path::PathBuf;

/// NSGA-II over a supernet space with the crossbar compiler in the loop; writes the Pareto
/// front (CSV, JSON, SVG), the summary and the accuracy-/speed-optimal subnets as ONNX.
#[derive(clap::Args, Debug)]
pub struct NasArgs {
    /// Search space: a built-in name (mbv3-small) or a space .toml file
    #[arg(long, default_value = "mbv3-small")]
    pub space: String,
    /// Crossbar budget as an absolute count (1 to 100000)
    #[arg(long, conflicts_with = "budget", value_parser = crate::bounds::int_in::<1, 100000>)]
    pub crossbars: Option<usize>,
    /// Crossbar budget(s) as multiples of the base network's ISAAC-like crossbar count;
    /// a comma list runs one search per budget (e.g. 0.8,1,1.2 as in the paper's Fig. 10);
    /// each in (0, 1000]
    #[arg(long, value_delimiter = ',', default_value = "1.0", value_parser = crate::bounds::budget)]
    pub budget: Vec<f64>,
    /// Population size
    #[arg(long, default_value_t = 50, value_parser = crate::bounds::int_in::<2, 100000>)]
    pub pop: usize,
    /// Generations
    #[arg(long, default_value_t = 100, value_parser = crate::bounds::int_in::<0, 100000>)]
    pub gens: usize,
    /// Accuracy evaluator: proxy | table:FILE.csv | cmd:"COMMAND {onnx} {config}"
    #[arg(long, default_value = "proxy")]
    pub accuracy: String,
    /// Hardware objective: latency | throughput | crossbars | utilization | energy | area
    #[arg(long, default_value = "latency")]
    pub objective: String,
    /// Objectives: accuracy and one or more hardware objectives, e.g. accuracy,energy or
    /// accuracy,latency,area (energy and area from the cost engine; docs/cost.md)
    #[arg(long, conflicts_with = "objective")]
    pub objectives: Option<String>,
    /// Component library energy and area are priced with: a preset (isaac, puma,
    /// neurosim) or a TOML file laid over one
    #[arg(long, default_value = "isaac")]
    pub components: String,
    /// Random seed (search, shared supernet weights, proxy batch)
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Per-gene mutation probability
    #[arg(long, default_value_t = 0.1)]
    pub mutation_prob: f64,
    /// Fraction of the population that breeds
    #[arg(long, default_value_t = 0.25)]
    pub parent_ratio: f64,
    /// Fraction of children made by mutation (the rest by uniform crossover)
    #[arg(long, default_value_t = 0.5)]
    pub mutation_ratio: f64,
    /// Samples streamed through the mapped network for the latency
    #[arg(long, default_value_t = 8, value_parser = crate::bounds::int_in::<1, 1048576>)]
    pub samples: usize,
    /// Depthwise split factor S_DW
    #[arg(long, default_value_t = 1)]
    pub sdw: usize,
    /// Crossbar architecture TOML (default: built-in rram-128, one packing order per try)
    #[arg(long)]
    pub arch: Option<PathBuf>,
    /// Zoo entry of the base network (normalisation and ISAAC-like reference)
    #[arg(long, default_value = "rnc_mobilenet_v3_small")]
    pub base: String,
    /// Inputs in the proxy's batch (the size of NASWOT's kernel matrix; 1 to 256)
    #[arg(long, default_value_t = 4, value_parser = crate::bounds::int_in::<1, 256>)]
    pub proxy_batch: usize,
    /// Output directory
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
}

pub fn run(a: NasArgs) -> anyhow::Result<()> {
    crate::output::create_out_dir(&a.out, "-o")?;
    let space = Space::load(&a.space).map_err(user)?;
    let accuracy: AccuracySpec = a.accuracy.parse().map_err(user)?;
    let objectives: Vec<HwObjective> = match &a.objectives {
        Some(list) => pimkit_nas::parse_objectives(list).map_err(user)?,
        None => vec![a.objective.parse().map_err(user)?],
    };
    let components = if objectives.iter().any(|o| o.is_cost()) {
        Some(pimkit_xbar::cost::load_components(&a.components).map_err(user)?)
    } else {
        None
    };
    let arch = match &a.arch {
        Some(p) => Arch::from_file(p).map_err(user)?,
        None => {
            let mut arch = Arch::default();
            arch.packing.restarts = 1;
            arch
        }
    };
    let nsga = NsgaConfig {
        pop: a.pop,
        gens: a.gens,
        mutation_prob: a.mutation_prob,
        parent_ratio: a.parent_ratio,
        mutation_ratio: a.mutation_ratio,
        seed: a.seed,
    };
    nsga.validate().map_err(user)?;
    let budgets: Vec<Budget> = match a.crossbars {
        Some(n) => vec![Budget::Crossbars(n)],
        None => a.budget.iter().map(|&f| Budget::Relative(f)).collect(),
    };
    if budgets.is_empty() {
        return Err(user("give --budget F or --crossbars N"));
    }
    let mut results = Vec::new();
    for b in budgets {
        let cfg = SearchConfig {
            space: space.clone(),
            arch: arch.clone(),
            budget: b,
            samples: a.samples,
            sdw: a.sdw,
            nsga: nsga.clone(),
            accuracy: accuracy.clone(),
            objectives: objectives.clone(),
            components: components.clone(),
            base_model: a.base.clone(),
            proxy_batch: a.proxy_batch,
        };
        let label = match b {
            Budget::Relative(f) => format!("nas {f}x budget"),
            Budget::Crossbars(n) => format!("nas {n} crossbars"),
        };
        let pb = crate::output::progress(a.gens as u64 + 1, &label);
        let r = pimkit_nas::search(&cfg, &mut |s| {
            pb.set_position(s.generation as u64 + 1);
            pb.set_message(format!("{label}: front {}", s.front));
        });
        pb.finish_and_clear();
        let r = r.map_err(|e| match e {
            pimkit_nas::NasError::Option { .. }
            | pimkit_nas::NasError::Evaluator { .. }
            | pimkit_nas::NasError::Space { .. }
            | pimkit_nas::NasError::UnknownSpace(..)
            | pimkit_nas::NasError::Config { .. }
            | pimkit_nas::NasError::Io { .. }
            // The candidate graphs come from the user's space file and base model.
            | pimkit_nas::NasError::Ir(_)
            | pimkit_nas::NasError::Zoo(_) => user(e),
            e => anyhow::Error::new(e),
        })?;
        results.push(r);
    }
    let files = pimkit_nas::write_outputs(&results, &space, &a.out)
        .with_context(|| format!("writing the results to {}", a.out.display()))?;
    if let Some(r) = results.first() {
        println!("accuracy: {}", r.evaluator);
    }
    println!("{}", pimkit_nas::summary_table(&results).to_terminal());
    for r in &results {
        if r.front.is_empty() {
            println!(
                "no subnet fits {} crossbars ({} candidates evaluated)",
                r.budget_crossbars, r.unique_evaluations
            );
        }
    }
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(())
}
