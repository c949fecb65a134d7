//! `pimkit xbar accuracy`: crossbar non-idealities on a model's outputs. Library:
//! pimkit-xbar's `accuracy` module over pimkit-analog; docs/accuracy.md.

use crate::error::user;
use crate::model::{LoadArgs, load_static, model_label};
use pimkit_engine::{ArchSpec, Engine};
use pimkit_xbar::accuracy::{
    self, Accuracy, AccuracyOptions, AccuracyRun, AccuracySettings, InputSource,
};
use pimkit_xbar::{Arch, XbarError};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct AccuracyArgs {
    /// Model: path.onnx or zoo:NAME (e.g. zoo:q_resnet18).
    pub model: String,
    /// Architecture TOML with [analog] and [device] sections (default: the built-in arch/rram-128.toml).
    #[arg(long)]
    pub arch: Option<PathBuf>,
    /// Crossbar size (rows = columns): the rows each ADC read sums (NeuroSim's parallelRead).
    #[arg(long, value_parser = crate::bounds::int_in::<1, 65536>)]
    pub xbar: Option<usize>,
    /// Directory of .npy inputs (one file per input; or N stacked on a new first axis).
    #[arg(long, conflicts_with = "random")]
    pub inputs: Option<PathBuf>,
    /// Number of random inputs (pimkit-interp's ranges per dtype).
    #[arg(long, value_parser = crate::bounds::int_in::<1, 100000>)]
    pub random: Option<usize>,
    /// Monte-Carlo trials (each draws its own device programming).
    #[arg(long, default_value_t = 8, value_parser = crate::bounds::int_in::<1, 100000>)]
    pub trials: usize,
    /// Seed of the trials (default: the architecture's defaults.seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// ADC bits (0 = no ADC quantization).
    #[arg(long)]
    pub adc_bits: Option<u32>,
    /// ADC range policy: full-scale, calibrated or clipped.
    #[arg(long)]
    pub adc_range: Option<String>,
    /// Mitigation: calibrate each layer's ADC range (same as --adc-range calibrated).
    #[arg(long, conflicts_with = "adc_range")]
    pub calibrate_adc: bool,
    /// Programming variation sigma (relative).
    #[arg(long, value_parser = crate::bounds::non_negative)]
    pub variation: Option<f64>,
    /// Variation distribution: gaussian or lognormal.
    #[arg(long)]
    pub variation_model: Option<String>,
    /// Stuck-at rates: RATE (both) or OFF,ON (stuck at Gmin, stuck at Gmax).
    #[arg(long)]
    pub saf: Option<String>,
    /// Mitigation: spare columns per array for the columns with most stuck cells.
    #[arg(long)]
    pub spare_cols: Option<usize>,
    /// Mitigation: copies of every array whose currents are averaged.
    #[arg(long)]
    pub redundancy: Option<usize>,
    /// Set any model parameter NAME=VALUE (repeatable; e.g. read_noise=0.02, wire_resistance_ohm=1).
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Sweep axes NAME=V1,V2,... (e.g. --sweep adc_bits=4,6,8 variation=0,0.05,0.1).
    #[arg(long, num_args = 1..)]
    pub sweep: Vec<String>,
    /// Component library each point is priced with (energy, area, latency; docs/cost.md):
    /// a preset (isaac, puma, neurosim) or a TOML file laid over one.
    #[arg(long, default_value = "isaac")]
    pub components: String,
    /// Class labels (one per output row, in input order): text of integers or an .npy array.
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write result.json, points.csv, layers.csv and the charts here.
    #[arg(short = 'o', long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub load: LoadArgs,
}

fn xerr(e: XbarError) -> anyhow::Error {
    match e {
        XbarError::Io(_) => anyhow::Error::new(e),
        _ => user(e),
    }
}

/// Flags -> options (parameter names as in `--set` and `--sweep`).
fn options(a: &AccuracyArgs, seed: u64) -> anyhow::Result<AccuracyOptions> {
    let mut set = Vec::new();
    for kv in &a.set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| user(format!("--set {kv}: write NAME=VALUE")))?;
        let v: f64 = v
            .parse()
            .map_err(|_| user(format!("--set {kv}: '{v}' is not a number")))?;
        set.push((k.to_string(), v));
    }
    let settings = AccuracySettings {
        trials: a.trials,
        seed,
        adc_bits: a.adc_bits,
        adc_range: a.adc_range.clone(),
        calibrate_adc: a.calibrate_adc,
        variation: a.variation,
        variation_model: a.variation_model.clone(),
        saf: a
            .saf
            .as_deref()
            .map(accuracy::parse_saf)
            .transpose()
            .map_err(user)?,
        spare_cols: a.spare_cols,
        redundancy: a.redundancy,
        set,
        sweep: a
            .sweep
            .iter()
            .map(|s| pimkit_analog::study::parse_axis(s).map_err(user))
            .collect::<anyhow::Result<Vec<_>>>()?,
        components: Some(a.components.clone()),
    };
    settings.options().map_err(user)
}

pub fn run(a: AccuracyArgs) -> anyhow::Result<()> {
    let arch = Arch::load_sized(a.arch.as_deref(), a.xbar).map_err(user)?;
    let opts = options(&a, a.seed.unwrap_or(arch.defaults.seed))?;
    // Settings are checked before the model is built and run (and again by the engine).
    accuracy::base_config(&arch, &opts).map_err(xerr)?;
    if let Some(dir) = &a.out {
        crate::output::create_out_dir(dir, "-o")?;
    }
    let g = load_static(&a.model, &[], &a.load, &[])?;
    let run = AccuracyRun {
        label: model_label(&a.model),
        options: opts,
        inputs: match &a.inputs {
            Some(dir) => InputSource::Dir(dir.clone()),
            None => InputSource::Random {
                n: a.random.unwrap_or(1),
                seed: 0,
            },
        },
        labels: a
            .labels
            .as_deref()
            .map(accuracy::load_labels)
            .transpose()
            .map_err(xerr)?,
    };
    let pb = crate::output::progress(0, "trials");
    let r = Accuracy::run(
        &g,
        &arch,
        &run,
        &mut |done: usize, total: usize, _: &str| {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
        },
    )
    .map_err(crate::error::engine)?;
    pb.finish_and_clear();
    let arch_label = a.arch.as_ref().map_or_else(
        || Arch::DEFAULT_PATH.to_string(),
        |p| p.display().to_string(),
    );
    let json = pimkit_engine::result_json(Accuracy::NAME, &a.model, &arch_label, &r);
    if a.json {
        crate::output::print_json(&json)?;
    } else {
        for n in &r.notes {
            println!("note: {n}");
        }
        if let Some(acc) = r.ideal_accuracy {
            println!("ideal model accuracy: {:.1} %", 100.0 * acc);
        }
        println!("{}", accuracy::summary_table(&r).to_terminal());
        if r.points.len() == 1 {
            println!("{}", accuracy::layer_table(&r, 0).to_terminal());
        }
    }
    if let Some(dir) = &a.out {
        accuracy::write_outputs(dir, &json, &r)
            .map_err(|e| user(format!("-o {}: {e}", dir.display())))?;
        if !a.json {
            println!("wrote {}", dir.display());
        }
    }
    Ok(())
}
