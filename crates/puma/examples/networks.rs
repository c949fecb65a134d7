//! Whole-network runs for docs/puma.md: one markdown table row per model.
//!
//! `cargo run --release -p pimkit-puma --example networks -- MODEL...` where MODEL is a
//! zoo spec (`resnet18`, `lenet5?batch=4`) or an .onnx path (tools/export_puma_models.py
//! writes the torchvision exports). Options before the models: `--replicate auto|N`,
//! `--budget N|Ntiles|original|node`, `--fixed auto|q4.12`, `--depthwise compact`.

use pimkit_puma::{Arch, CompileOptions, SimOptions, run_graph, tool};

fn main() {
    let mut opts = CompileOptions::default();
    let mut models = Vec::new();
    let mut args = std::env::args().skip(1);
    let (mut rep, mut budget) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--replicate" => rep = args.next(),
            "--budget" => budget = args.next(),
            "--fixed" => opts.fixed = tool::parse_fixed(&args.next().expect("--fixed X")).unwrap(),
            "--depthwise" => {
                opts.depthwise =
                    tool::parse_depthwise(&args.next().expect("--depthwise X")).unwrap()
            }
            m => models.push(m.to_string()),
        }
    }
    if let Some(r) = rep {
        opts.replicate = tool::parse_replicate(&r, budget.as_deref()).unwrap();
    }
    println!(
        "| model | tiles (nodes) | MVMUs | cycles | energy | steady state (inf/s) | rel. error | top-1 | wall (s) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for m in models {
        let g = if m.ends_with(".onnx") {
            pimkit_onnx::load(std::path::Path::new(&m)).expect("onnx")
        } else {
            pimkit_zoo::build_spec(&m).expect("zoo spec")
        };
        let t0 = std::time::Instant::now();
        let (r, _, p) = run_graph(&g, &Arch::default(), &opts, &SimOptions::default(), None)
            .unwrap_or_else(|e| panic!("{m}: {e}"));
        println!(
            "| {m} | {} ({}) | {} | {} | {:.3} mJ | {:.1} | {:.3} % | {} | {:.0} |",
            r.stats.tiles,
            r.nodes,
            p.placement.mvmus_used,
            r.stats.cycles,
            r.stats.energy_nj / 1e6,
            r.stats.throughput_per_s,
            100.0 * r.relative_error.unwrap_or(f64::NAN),
            match r.top1_agree {
                Some(true) => "agrees",
                Some(false) => "DIFFERS",
                None => "-",
            },
            t0.elapsed().as_secs_f64()
        );
        for w in &r.warnings {
            eprintln!("warning: {w}");
        }
    }
}
