//! `pimkit report`: every engine's section for a model in one HTML page + JSON + SVG/CSV.

use crate::error::user;
use crate::model::model_label;
use pimkit_ir::{Graph, node_cost};
use pimkit_report::{Report, Section, Table, plot};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model (path or zoo:NAME); default: the built-in set
    pub model: Option<String>,
    /// Output directory
    #[arg(short = 'o', long, default_value = "pimkit-report")]
    pub out: PathBuf,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

/// Which engine a report job runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Engine {
    Model,
    Loops,
    Offload,
    Xbar,
    Puma,
    Vpu,
    /// A short crossbar-aware NAS (only in the built-in set: it searches a space, not a model).
    Nas,
    /// Analog accuracy of the crossbar mapping (functional model, Monte-Carlo trials).
    Accuracy,
}

/// The built-in set: each engine on a model of the kind its paper studies.
pub const DEFAULT_JOBS: &[(Engine, &str)] = &[
    (Engine::Model, "zoo:mobilenet_v2"),
    (Engine::Loops, "zoo:softmax?n=1024"),
    (Engine::Offload, "zoo:llama_decode?weights=none"),
    (Engine::Xbar, "zoo:rnc_mobilenet_v3_small?weights=none"),
    (Engine::Puma, "zoo:puma_mlp_l4"),
    (Engine::Vpu, "zoo:q_mobilenet_v2"),
    (Engine::Nas, "zoo:rnc_mobilenet_v3_small?weights=none"),
    (Engine::Accuracy, "zoo:q_mobilenet_v2?res=64"),
];

/// Every engine, for a model the user names.
pub const ALL_ENGINES: &[Engine] = &[
    Engine::Model,
    Engine::Loops,
    Engine::Offload,
    Engine::Xbar,
    Engine::Puma,
    Engine::Vpu,
    Engine::Accuracy,
];

/// Loop nests of the model with native per-nest timings.
fn loops_section(g: &Graph) -> anyhow::Result<Section> {
    let p = pimkit_loops::lower(g).map_err(user)?;
    let prof = pimkit_loops::profile(&p, 3).map_err(user)?;
    Ok(pimkit_loops::report_section(&p, Some(&prof)))
}

/// A section without headline figures.
fn plain(s: anyhow::Result<Section>) -> anyhow::Result<(Section, Option<pimkit_engine::Headline>)> {
    s.map(|s| (s, None))
}

/// One engine through the contract: its section and its summary row's figures.
fn via_engine<E: pimkit_engine::Engine>(
    g: &Graph,
    arch: &E::Arch,
    opts: &E::Options,
) -> anyhow::Result<(Section, Option<pimkit_engine::Headline>)> {
    let out =
        E::run(g, arch, opts, &mut pimkit_engine::NoProgress).map_err(crate::error::engine)?;
    Ok((E::section(&out), Some(E::headline(&out))))
}

/// Host-vs-PIM placement per nest: this machine (calibration cached) and the paper's
/// reference host side by side.
fn offload_section(g: &Graph) -> anyhow::Result<(Section, Option<pimkit_engine::Headline>)> {
    let opts = pimkit_offload::OffloadOptions {
        host: pimkit_offload::HostChoice::Measured(pimkit_offload::host::default_cache_path()),
        with_reference: true,
        ..Default::default()
    };
    via_engine::<pimkit_offload::Offload>(g, &pimkit_offload::PimArch::default(), &opts)
}

/// Crossbar mapping (RNC) at the architecture file's default budget.
fn xbar_section(g: &Graph) -> anyhow::Result<(Section, Option<pimkit_engine::Headline>)> {
    let arch = pimkit_xbar::Arch::default();
    let opts = pimkit_xbar::Xbar::report_options(&arch, &g.name);
    via_engine::<pimkit_xbar::Xbar>(g, &arch, &opts)
}

/// PUMA compile + simulate (exact arithmetic), layer by layer when the whole network
/// does not run as one program.
fn puma_section(g: &Graph) -> anyhow::Result<(Section, Option<pimkit_engine::Headline>)> {
    let opts = pimkit_puma::PumaOptions {
        per_layer: pimkit_puma::PerLayer::Fallback,
        ..Default::default()
    };
    via_engine::<pimkit_puma::Puma>(g, &pimkit_puma::Arch::default(), &opts)
}

/// The model on the simulated VPUs (a float model quantized first, noted), then quick
/// roofline sweeps.
fn vpu_section(g: &Graph) -> anyhow::Result<(Section, Option<pimkit_engine::Headline>)> {
    let arch = pimkit_vpu::Arch::default();
    let opts = pimkit_vpu::VpuOptions {
        quantize_float: true,
        ..Default::default()
    };
    let (mut s, h) = via_engine::<pimkit_vpu::Vpu>(g, &arch, &opts)?;
    let sweeps = pimkit_vpu::report::build_section(&arch, None, true).map_err(user)?;
    s.blocks.extend(sweeps.blocks);
    Ok((s, h))
}

/// Population and generations of the report's NAS: a few seconds, enough to show the
/// front's shape; `pimkit xbar nas` runs the full search (50 x 100 by default, ~80 s).
const REPORT_NAS: (usize, usize) = (24, 12);

/// A short NSGA-II search over the MobileNetV3-small space at the base network's
/// crossbar count (RNC's Fig. 10 setting at 1x), accuracy from the proxy.
fn nas_section() -> anyhow::Result<Section> {
    let mut cfg =
        pimkit_nas::SearchConfig::rnc_default(pimkit_nas::Space::load("mbv3-small").map_err(user)?);
    (cfg.nsga.pop, cfg.nsga.gens) = REPORT_NAS;
    let r = pimkit_nas::search(&cfg, &mut |_| {}).map_err(user)?;
    let mut s = pimkit_nas::report_section(&[r]);
    s.note(format!(
        "A short search (population {}, {} generations) to keep the report quick; \
         `pimkit xbar nas -o DIR` runs the full one (--pop 50 --gens 100, --budget 0.8,1,1.2).",
        REPORT_NAS.0, REPORT_NAS.1
    ));
    Ok(s)
}

/// Trials, inputs and the sweep of the report's accuracy study: a few seconds on a small
/// network; `pimkit xbar accuracy` runs any size.
const REPORT_ACCURACY: (usize, usize) = (2, 2);

/// Analog accuracy on ISAAC/PUMA-style 2-bit cells (arch/rram-128-2bit.toml) with
/// calibrated ADC ranges: a 3 x 3 sweep of ADC bits x variation.
fn accuracy_section(spec: &str, g: &Graph) -> anyhow::Result<Section> {
    use pimkit_xbar::accuracy;
    let arch =
        pimkit_xbar::Arch::from_toml_str(pimkit_xbar::arch::RRAM_128_2BIT_TOML).map_err(user)?;
    pimkit_interp::check_memory(g).map_err(user)?;
    let (trials, n) = REPORT_ACCURACY;
    let opts = accuracy::AccuracyOptions {
        trials,
        seed: arch.defaults.seed,
        adc_range: Some(pimkit_analog::AdcRange::Calibrated),
        sweep: vec![
            ("adc_bits".into(), vec![4.0, 6.0, 8.0]),
            ("variation".into(), vec![0.0, 0.05, 0.1]),
        ],
        ..Default::default()
    };
    let inputs = accuracy::random_inputs(g, n, 0);
    let r = accuracy::run_accuracy(
        &model_label(spec),
        g,
        &arch,
        inputs,
        None,
        &opts,
        &|_, _| {},
    )
    .map_err(user)?;
    let mut s = accuracy::accuracy_section(&r);
    s.note(format!(
        "A short study ({trials} trials, {n} random inputs, calibrated ADC ranges) to keep the report quick;          `pimkit xbar accuracy MODEL --arch arch/rram-128-2bit.toml --calibrate-adc --sweep ...` runs any setting."
    ));
    Ok(s)
}

/// Run one engine; an engine that cannot handle the model yields a note (and a summary
/// row saying why), not a failure.
fn engine_section(engine: Engine, spec: &str, g: &Graph) -> (Section, pimkit_report::SummaryRow) {
    // The engines map a fixed dataflow graph: control flow must flatten first.
    let flat = match engine {
        Engine::Model | Engine::Nas => Ok(None),
        _ => pimkit_ir::require_static(g).map(Some).map_err(user),
    };
    let r = flat.and_then(|f| {
        let g = f.as_ref().unwrap_or(g);
        engine_result(engine, spec, g)
    });
    let name = format!("{engine:?}").to_lowercase();
    let (sec, headline, status) = match r {
        Ok((s, h)) => (s, h, "done".to_string()),
        Err(e) => {
            let mut s = Section::new(name.clone(), format!("{engine:?} on {spec}"));
            let first = format!("{e:#}");
            s.note(format!("not run on {spec}: {first}"));
            let short: String = first.chars().take(160).collect();
            (s, None, format!("not run: {short}"))
        }
    };
    let row = pimkit_report::SummaryRow {
        engine: name,
        model: model_label(spec),
        section: sec.id.clone(),
        figures: headline.map(|h| h.figures).unwrap_or_default(),
        status,
    };
    (sec, row)
}

fn engine_result(
    engine: Engine,
    spec: &str,
    g: &Graph,
) -> anyhow::Result<(Section, Option<pimkit_engine::Headline>)> {
    match engine {
        Engine::Model => Ok(model_section(spec, g)).map(|s| (s, None)),
        Engine::Loops => plain(loops_section(g)),
        Engine::Offload => offload_section(g),
        Engine::Xbar => xbar_section(g),
        Engine::Puma => puma_section(g),
        Engine::Vpu => vpu_section(g),
        Engine::Nas => plain(nas_section()),
        Engine::Accuracy => plain(accuracy_section(spec, g)),
    }
}

/// Graph summary, per-node MACs and bytes, and a reference-interpreter run.
pub fn model_section(spec: &str, g: &Graph) -> Section {
    let label = model_label(spec);
    let mut s = Section::new(format!("model-{label}"), format!("Model: {label}"));
    let info = crate::cmd::info::info(g);
    s.text(format!(
        "{} nodes, {} parameters ({} bytes), {} MACs.",
        info.nodes,
        crate::output::si(info.params as f64),
        crate::output::si(info.param_bytes as f64),
        crate::output::si(info.macs as f64)
    ));
    for t in crate::cmd::info::tables(&info) {
        s.table(t);
    }
    let mut nodes = Table::new(
        "per-node cost (MACs; bytes read and written once each)",
        &["node", "op", "output", "MACs", "read B", "write B"],
    );
    let mut by_op: std::collections::BTreeMap<String, u64> = Default::default();
    for n in &g.nodes {
        let c = node_cost(g, n);
        *by_op.entry(n.op.name().to_string()).or_default() += c.macs;
        let out = n
            .outputs
            .first()
            .map(|&o| g.ty(o).to_string())
            .unwrap_or_default();
        nodes.push(vec![
            n.name.clone(),
            n.op.name().into(),
            out,
            c.macs.to_string(),
            c.read_bytes.to_string(),
            c.write_bytes.to_string(),
        ]);
    }
    let (labels, vals): (Vec<String>, Vec<f64>) = by_op
        .iter()
        .filter(|(_, m)| **m > 0)
        .map(|(k, v)| (k.clone(), *v as f64))
        .unzip();
    s.svg(
        format!("{label}-macs-per-op.svg"),
        "MACs per operator type",
        plot::bar_chart("MACs per operator type", "MACs", &labels, &vals),
    );
    s.table(nodes);
    let mut json = serde_json::to_value(&info).unwrap_or_default();
    if g.is_shape_only() {
        s.note("Shape-only model (no weight data): the reference run is skipped.");
    } else if let Err(e) = pimkit_interp::check_memory(g) {
        s.note(format!("Reference run skipped: {e}"));
    } else {
        let inputs = pimkit_interp::random_inputs(g, 0);
        let t0 = std::time::Instant::now();
        match pimkit_interp::run(g, &inputs) {
            Ok(outs) => {
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                let mut t = Table::new(
                    "reference run (random inputs, seed 0)",
                    &["output", "shape", "min", "max", "mean"],
                );
                for (&id, o) in g.outputs.iter().zip(&outs) {
                    let (lo, hi, mean) = crate::cmd::exec::summary(o);
                    t.push(vec![
                        g.value(id).name.clone(),
                        format!("{:?}", o.shape),
                        format!("{lo:.5}"),
                        format!("{hi:.5}"),
                        format!("{mean:.5}"),
                    ]);
                }
                s.text(format!("Reference interpreter: {ms:.1} ms on this host."));
                s.table(t);
                json["reference_ms"] = serde_json::json!(ms);
            }
            Err(e) => {
                s.note(format!("Reference run failed: {e}"));
            }
        }
    }
    s.json = json;
    s
}

pub fn run(a: Args) -> anyhow::Result<()> {
    // A bad output path fails now, not after minutes of engines.
    crate::output::create_out_dir(&a.out, "-o")?;
    let jobs: Vec<(Engine, String)> = match &a.model {
        Some(m) => ALL_ENGINES.iter().map(|&e| (e, m.clone())).collect(),
        None => DEFAULT_JOBS
            .iter()
            .map(|&(e, m)| (e, m.to_string()))
            .collect(),
    };
    let mut specs: Vec<String> = vec![];
    for (_, m) in &jobs {
        let l = model_label(m);
        if !specs.contains(&l) {
            specs.push(l);
        }
    }
    let mut report = Report::new(match &a.model {
        Some(m) => format!("pimkit report: {m}"),
        None => format!("pimkit report: the built-in set ({})", specs.join(", ")),
    });
    let pb = crate::output::progress(jobs.len() as u64, "engines");
    let mut graphs: std::collections::HashMap<String, Graph> = Default::default();
    for (engine, spec) in &jobs {
        pb.set_message(format!("{engine:?}"));
        if !graphs.contains_key(spec) {
            let la = if a.model.is_some() {
                a.load.clone()
            } else {
                crate::model::LoadArgs::default()
            };
            graphs.insert(
                spec.clone(),
                crate::model::load_model_full(spec, &[], &la, &[])?,
            );
        }
        let (mut sec, mut row) = engine_section(*engine, spec, &graphs[spec]);
        // Section ids must be unique within the report.
        if report.sections.iter().any(|s| s.id == sec.id) {
            sec.id = format!("{}-{}", sec.id, model_label(spec));
            row.section = sec.id.clone();
        }
        if *engine != Engine::Model {
            report.summary.push(row);
        }
        report.sections.push(sec);
        pb.inc(1);
    }
    pb.finish_and_clear();
    report
        .write_dir(&a.out)
        .map_err(|e| user(format!("cannot write report to {}: {e}", a.out.display())))?;
    println!("wrote {}", a.out.join("index.html").display());
    Ok(())
}
