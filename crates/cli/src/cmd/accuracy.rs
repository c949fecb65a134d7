//! `pimkit xbar accuracy`: crossbar non-idealities on a model's outputs. Library:
//! pimkit-xbar's `accuracy` module over pimkit-analog; docs/accuracy.md.

use crate::error::user;
use crate::model::{LoadArgs, load_static, model_label};
use pimkit_xbar::accuracy::{self, AccuracyOptions};
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
    let mut set: Vec<(String, f64)> = Vec::new();
    if let Some(b) = a.adc_bits {
        set.push(("adc_bits".into(), b as f64));
    }
    if let Some(v) = a.variation {
        set.push(("variation".into(), v));
    }
    if let Some(s) = &a.saf {
        let v: Vec<f64> = s
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                user(format!(
                    "--saf {s}: write RATE or OFF,ON (e.g. 0.001,0.001)"
                ))
            })?;
        match v.as_slice() {
            [r] => set.extend([("saf_off".into(), *r), ("saf_on".into(), *r)]),
            [o, n] => set.extend([("saf_off".into(), *o), ("saf_on".into(), *n)]),
            _ => return Err(user(format!("--saf {s}: write RATE or OFF,ON"))),
        }
    }
    if let Some(n) = a.spare_cols {
        set.push(("spare_cols".into(), n as f64));
    }
    if let Some(n) = a.redundancy {
        set.push(("redundancy".into(), n as f64));
    }
    for kv in &a.set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| user(format!("--set {kv}: write NAME=VALUE")))?;
        let v: f64 = v
            .parse()
            .map_err(|_| user(format!("--set {kv}: '{v}' is not a number")))?;
        set.push((k.to_string(), v));
    }
    let adc_range = match (&a.adc_range, a.calibrate_adc) {
        (Some(r), _) => Some(r.parse().map_err(user)?),
        (None, true) => Some(pimkit_analog::AdcRange::Calibrated),
        _ => None,
    };
    let variation_model = a
        .variation_model
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(user)?;
    let sweep = a
        .sweep
        .iter()
        .map(|s| pimkit_analog::study::parse_axis(s).map_err(user))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(AccuracyOptions {
        trials: a.trials,
        seed,
        set,
        adc_range,
        variation_model,
        sweep,
    })
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> anyhow::Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| user(format!("cannot write {}: {e}", path.display())))
}

pub fn run(a: AccuracyArgs) -> anyhow::Result<()> {
    let mut arch = match &a.arch {
        Some(p) => Arch::from_file(p).map_err(user)?,
        None => Arch::default(),
    };
    if let Some(n) = a.xbar {
        arch.crossbar.rows = n;
        arch.crossbar.cols = n;
        arch.validate().map_err(user)?;
    }
    let opts = options(&a, a.seed.unwrap_or(arch.defaults.seed))?;
    // Settings are checked before the model is built and run.
    accuracy::base_config(&arch, &opts).map_err(xerr)?;
    if let Some(dir) = &a.out {
        crate::output::create_out_dir(dir, "-o")?;
    }
    let g = load_static(&a.model, &[], &a.load, &[])?;
    pimkit_interp::check_memory(&g).map_err(user)?;
    let inputs = match &a.inputs {
        Some(dir) => accuracy::load_inputs_dir(&g, dir).map_err(xerr)?,
        None => accuracy::random_inputs(&g, a.random.unwrap_or(1), 0),
    };
    let labels = a
        .labels
        .as_deref()
        .map(accuracy::load_labels)
        .transpose()
        .map_err(xerr)?;
    let label = model_label(&a.model);
    let pb = crate::output::progress(0, "trials");
    let r = accuracy::run_accuracy(&label, &g, &arch, inputs, labels, &opts, &|done, total| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    })
    .map_err(xerr)?;
    pb.finish_and_clear();
    if a.json {
        crate::output::print_json(&r)?;
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
        write(
            dir,
            "result.json",
            &(serde_json::to_string_pretty(&r)? + "\n"),
        )?;
        write(dir, "points.csv", &accuracy::points_csv(&r))?;
        write(
            dir,
            "layers.csv",
            &accuracy::layer_table(&r, r.points.len() - 1).to_csv(),
        )?;
        if let Some(h) = accuracy::heat_map(&r) {
            write(dir, "heatmap.svg", &h)?;
        }
        if let Some((c, e)) = accuracy::sweep_curves(&r) {
            write(dir, "curves.svg", &c)?;
            write(dir, "error.svg", &e)?;
        }
        if !a.json {
            println!("wrote {}", dir.display());
        }
    }
    Ok(())
}
