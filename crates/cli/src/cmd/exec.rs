use crate::error::user;
use crate::model::{LoadArgs, bind_inputs, load_model_full, read_inputs};
use pimkit_ir::Tensor;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Path to an .onnx file or zoo:NAME[?k=v&...]
    pub model: String,
    /// Input tensor as NAME=FILE.npy (repeatable); a lone input may be given as FILE.npy
    #[arg(long = "input", short = 'i')]
    pub inputs: Vec<String>,
    /// Fill every input not given with deterministic random data from this seed
    #[arg(long)]
    pub random: Option<u64>,
    /// Write each output as DIR/<output name>.npy
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Print the output summary as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// min, max, mean of a tensor as f64 (for summaries); NaN elements are skipped by min and
/// max, and all three are NaN for an empty or all-NaN tensor (never a placeholder value).
pub fn summary(t: &Tensor) -> (f64, f64, f64) {
    let v = t.to_f64_vec();
    let (lo, hi) = v
        .iter()
        .fold((f64::NAN, f64::NAN), |(a, b), &x| (a.min(x), b.max(x)));
    (lo, hi, v.iter().sum::<f64>() / v.len() as f64)
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let given = read_inputs(&a.inputs)?;
    let g = load_model_full(&a.model, &[], &a.load, &given)?;
    let inputs = bind_inputs(&g, given, a.random)?;
    let t0 = std::time::Instant::now();
    let outs = pimkit_interp::run(&g, &inputs).map_err(user)?;
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    if let Some(dir) = &a.out {
        crate::output::create_out_dir(dir, "--out")?;
    }
    let mut rows = Vec::new();
    let mut table = pimkit_report::Table::new(
        "outputs",
        &["name", "dtype", "shape", "min", "max", "mean", "file"],
    );
    let names: Vec<String> = g.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
    let files = match &a.out {
        Some(dir) => crate::output::write_outputs(dir, &names, &outs)?,
        None => vec![],
    };
    for (k, (name, t)) in names.iter().zip(&outs).enumerate() {
        let file = files
            .get(k)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let (lo, hi, mean) = summary(t);
        table.push(vec![
            name.clone(),
            t.dtype().to_string(),
            format!("{:?}", t.shape),
            format!("{lo:.6}"),
            format!("{hi:.6}"),
            format!("{mean:.6}"),
            file.clone(),
        ]);
        rows.push(serde_json::json!({"name": name, "dtype": t.dtype().to_string(), "shape": t.shape, "min": lo, "max": hi, "mean": mean, "file": file}));
    }
    if a.json {
        return crate::output::print_json(&serde_json::json!({"outputs": rows, "time_ms": ms}));
    }
    print!("{}", table.to_terminal());
    println!("reference interpreter: {ms:.1} ms");
    Ok(())
}
