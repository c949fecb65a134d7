//! `pimkit llm`: generative inference of decoder models on xPU + DRAM-PIM systems
//! (crate pimkit-llm, docs/llm.md), and greedy generation with the interpreter.

use crate::error::{engine, user};
use pimkit_llm::analysis::LlmOutput;
use pimkit_llm::section::{breakdown_table, decode_table, generation_table};
use pimkit_llm::{LlmOptions, Policy, Precision};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Decoder models: .onnx exports with past key/values (Hugging Face names) or zoo
    /// decoders (zoo:llama2_7b, zoo:gpt3_175b, ...; `pimkit zoo list` family llm)
    #[arg(required = true)]
    models: Vec<String>,
    /// Systems, comma-separated: built-in names (dgx-a100, dgx-a100x2, dgx-a100-attacc, dgx-h100,
    /// dgx-h100-attacc-bank, dgx-h100-attacc-bg, dgx-h100-attacc-buffer, dgx-h100-aim,
    /// dgx-h100-upmem, cent) or TOML files
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "dgx-h100,dgx-h100-attacc-bank"
    )]
    system: Vec<String>,
    /// Placement: xpu | attn-pim (AttAcc) | fc-pim | all-pim | auto (fastest place per op
    /// class) | torch-pim (Torch-PIM's two-stage rule per op class) (default: attn-pim on a
    /// system with PIM, xpu on one without)
    #[arg(long)]
    policy: Option<String>,
    /// Prompt length (prefill tokens)
    #[arg(long, default_value_t = 1024)]
    prompt: usize,
    /// Tokens generated after the prompt (end-to-end figures)
    #[arg(long, default_value_t = 128)]
    generate: usize,
    /// Context lengths of the decode grid, comma-separated
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "512,1024,2048,4096,8192,16384"
    )]
    context: Vec<usize>,
    /// Batch sizes, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,256")]
    batch: Vec<usize>,
    /// Bits per weight (16: FP16 serving; 4: MatMulNBits-style 4-bit weights)
    #[arg(long, default_value_t = 16.0)]
    weight_bits: f64,
    /// Weights per 16-bit scale of block-quantized weights (0: none; MatMulNBits uses 32..256)
    #[arg(long, default_value_t = 0)]
    weight_group: usize,
    /// Bits per KV-cache element
    #[arg(long, default_value_t = 16.0)]
    kv_bits: f64,
    /// Bits per activation element
    #[arg(long, default_value_t = 16.0)]
    act_bits: f64,
    /// Pipeline stages: the layers split evenly over that many groups of devices, the
    /// batch in micro-batches through them (CENT's pipeline parallelism; 1: tensor
    /// parallelism over every device)
    #[arg(long, default_value_t = 1)]
    pipeline: usize,
    /// Compute contexts beyond the model's and points whose weights or KV cache do not fit
    /// (rows marked fits = no) instead of stopping (AttAcc's simulator enforces neither)
    #[arg(long)]
    ignore_limits: bool,
    /// Print the result as JSON (one object for one model on one system, else a list)
    #[arg(long)]
    json: bool,
    /// Write result.json, decode.csv, generation.csv, breakdown.csv and SVG curves here
    /// (one subfolder per model and system when there are several)
    #[arg(short = 'o', long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    load: crate::model::LoadArgs,
}

/// `pimkit llm-generate`: greedy tokens with the interpreter.
#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// A decoder export with past key/values, or a zoo decoder with weights (zoo:decoder)
    model: String,
    /// Prompt token ids, comma-separated
    #[arg(long, value_delimiter = ',', required = true)]
    prompt: Vec<i64>,
    /// Tokens to generate
    #[arg(long, default_value_t = 8)]
    tokens: usize,
    /// Print the tokens and the per-step work check as JSON
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let policy = Policy::from_option("--policy", a.policy.as_deref()).map_err(user)?;
    let opts = LlmOptions {
        policy,
        prompt: a.prompt,
        generate: a.generate,
        contexts: a.context.clone(),
        batches: a.batch.clone(),
        precision: Precision {
            weight_bits: a.weight_bits,
            kv_bits: a.kv_bits,
            act_bits: a.act_bits,
            weight_group: a.weight_group,
        },
        pipeline: a.pipeline,
        ignore_limits: a.ignore_limits,
    };
    // Bad options and system files are found before anything is loaded or written.
    pimkit_llm::check_options(&opts).map_err(user)?;
    for s in &a.system {
        pimkit_llm::system::load(s).map_err(user)?;
    }
    if let Some(dir) = &a.out {
        crate::output::create_out_dir(dir, "-o")?;
    }
    let lo = crate::model::load_options(&a.load, &[])?;
    let mut notes = Vec::new();
    let outs = pimkit_driver::llm::analyze(&a.models, &a.system, &opts, &lo, &mut notes);
    for n in &notes {
        eprintln!("note: {n}");
    }
    let outs = outs.map_err(engine)?;
    if a.json {
        let js: Vec<serde_json::Value> = outs.iter().map(pimkit_llm::section::json).collect();
        if js.len() == 1 {
            crate::output::print_json(&js[0])?;
        } else {
            crate::output::print_json(&js)?;
        }
    } else if outs.len() == 1 {
        print_one(&outs[0]);
    } else {
        println!(
            "{}",
            pimkit_llm::section::summary_table(&outs).to_terminal()
        );
    }
    if let Some(dir) = &a.out {
        let many = outs.len() > 1;
        for o in &outs {
            let d = if many {
                dir.join(pimkit_llm::section::folder_name(o))
            } else {
                dir.clone()
            };
            crate::output::create_out_dir(&d, "-o")?;
            pimkit_llm::section::write_dir(o, &d)
                .map_err(|e| user(format!("-o {}: {e}", d.display())))?;
        }
        if many {
            let t = pimkit_llm::section::summary_table(&outs);
            crate::output::write_file_atomic(&dir.join("summary.csv"), t.to_csv().as_bytes())?;
        }
        if !a.json {
            println!("wrote {}", dir.display());
        }
    }
    Ok(())
}

fn print_one(o: &LlmOutput) {
    println!(
        "{} on {} ({}): {:.3} GB of weights, {:.1} KB of KV cache per position, largest batch {} at {} + {} positions",
        o.model,
        o.system.name,
        pimkit_llm::section::setting(o),
        o.memory.weight_bytes / 1e9,
        o.memory.kv_bytes_per_position / 1e3,
        o.memory.max_batch,
        o.options.prompt,
        o.options.generate
    );
    println!("{}", generation_table(o).to_terminal());
    println!("{}", decode_table(o).to_terminal());
    if let Some(t) = breakdown_table(o) {
        println!("{}", t.to_terminal());
    }
    for n in &o.notes {
        println!("note: {n}");
    }
}

pub fn run_generate(a: GenerateArgs) -> anyhow::Result<()> {
    let g = pimkit_driver::llm::generate_tokens(&a.model, &a.prompt, a.tokens).map_err(engine)?;
    if a.json {
        crate::output::print_json(&g)?;
    } else {
        let t: Vec<String> = g.tokens.iter().map(|t| t.to_string()).collect();
        println!("{}", t.join(","));
    }
    Ok(())
}
