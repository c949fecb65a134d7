//! `pimkit quantize`: a float model to the QOperator model onnxruntime's
//! `quantize_static` would write (the zoo's quantizer: BN folding, MinMax calibration on
//! the given inputs, QLinear ops, ORT's parameter rules), for the VPU engine.

use crate::error::user;
use crate::model::{LoadArgs, load_model_full};
use pimkit_ir::DType;
use pimkit_zoo::quantize::{QuantOptions, quantize_calibrated_with};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Float model: path.onnx or zoo:NAME[?k=v&...]
    pub model: String,
    /// Output .onnx file
    #[arg(short = 'o', long)]
    pub out: PathBuf,
    /// Calibration inputs: a directory of .npy files, one per sample for a model with one
    /// input, or one subdirectory per sample holding <input name>.npy files
    #[arg(long, conflicts_with = "random")]
    pub calib: Option<PathBuf>,
    /// Calibrate on N deterministic random samples instead (default 8 when --calib is
    /// not given)
    #[arg(long, value_parser = crate::bounds::int_in::<1, 100000>)]
    pub random: Option<usize>,
    /// Per-output-channel weight scales (quantize_static's per_channel=True)
    #[arg(long)]
    pub per_channel: bool,
    /// Activation type: u8 (QUInt8, the default) or i8 (QInt8)
    #[arg(long, default_value = "u8")]
    pub act: String,
    /// Op types to keep in float, comma separated (e.g. Softmax,Sigmoid)
    #[arg(long, value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Print the summary as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let act = match a.act.as_str() {
        "u8" => DType::U8,
        "i8" | "s8" => DType::I8,
        o => return Err(user(format!("--act {o}: use u8 or i8"))),
    };
    let g = load_model_full(&a.model, &[], &a.load, &[])?;
    let g = pimkit_ir::require_static(&g).map_err(user)?;
    if g.is_shape_only() {
        return Err(user(
            "the model has no weight data (shape-only); quantization needs the weights",
        ));
    }
    let sets = match &a.calib {
        Some(dir) => pimkit_driver::samples::read_sample_dir(dir, &g)
            .map_err(|e| user(format!("--calib {e}")))?,
        None => {
            pimkit_interp::check_memory(&g).map_err(user)?;
            (0..a.random.unwrap_or(8) as u64)
                .map(|i| pimkit_interp::random_inputs(&g, i))
                .collect()
        }
    };
    let opts = QuantOptions {
        per_channel: a.per_channel,
        act,
        exclude: a.exclude.clone(),
    };
    // A bar step per calibration sample as it starts (they run on the worker threads).
    let pb = crate::output::progress(sets.len() as u64, "calibration samples");
    let q = quantize_calibrated_with(&g, &opts, sets.len(), |i| {
        pb.inc(1);
        sets[i].clone()
    });
    pb.finish_and_clear();
    let q = q.map_err(user)?;
    crate::output::write_file_atomic(&a.out, &pimkit_onnx::export(&q).map_err(user)?)?;
    let before = pimkit_ir::GraphStats::of(&g);
    let after = pimkit_ir::GraphStats::of(&q);
    let summary = serde_json::json!({
        "model": a.model,
        "out": a.out.display().to_string(),
        "calibration_samples": sets.len(),
        "per_channel": a.per_channel,
        "activations": act.to_string(),
        "ops_before": before.ops,
        "ops_after": after.ops,
    });
    if a.json {
        return crate::output::print_json(&summary);
    }
    let float_left: Vec<&String> = after
        .ops
        .keys()
        .filter(|k| {
            !k.starts_with("QLinear")
                && !matches!(k.as_str(), "QGemm" | "QuantizeLinear" | "DequantizeLinear")
        })
        .collect();
    println!(
        "wrote {} ({} nodes; {} calibration samples, {} activations{})",
        a.out.display(),
        after.nodes,
        sets.len(),
        act,
        if a.per_channel {
            ", per-channel weights"
        } else {
            ""
        }
    );
    for (k, v) in &after.ops {
        println!("  {k:<28} {v}");
    }
    if !float_left.is_empty() {
        println!(
            "ops that stay float or move 8-bit data unchanged: {}",
            float_left
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}
