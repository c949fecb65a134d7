//! `pimkit xbar accuracy`: what the crossbars' non-idealities do to a model's outputs.
//! The layers and their rows per array come from this engine's partition (the same
//! boxes `map` packs); the functional model is pimkit-analog's, shared with PUMA.

mod cost;
mod engine;
mod inputs;
mod report;
mod settings;

pub use cost::{PointCost, mark_front, price_points, quality};
pub use engine::{Accuracy, AccuracyRun, InputSource};
pub use inputs::{load_inputs_dir, load_labels, random_inputs};
pub use report::{
    accuracy_section, front_svg, heat_map, layer_table, points_csv, summary_table, sweep_curves,
    write_outputs,
};
pub use settings::{AccuracySettings, parse_saf};

use crate::arch::{Arch, DepthwiseMapping, Mode};
use crate::error::{Result, XbarError};
use crate::layer::{Skipped, extract_nodes};
use crate::partition::PartitionCfg;
use pimkit_analog::layer::LayerMap;
use pimkit_analog::network::{Inputs, Network};
use pimkit_analog::study::{PointResult, Study, grid};
use pimkit_analog::{AdcRange, Config, MatMap, VariationModel};
use pimkit_ir::{Graph, Op};
use serde::{Deserialize, Serialize};

/// What to evaluate (defaults: the architecture file's settings, one run).
#[derive(Clone, Debug, Default)]
pub struct AccuracyOptions {
    pub trials: usize,
    pub seed: u64,
    /// Parameters set before the sweep (name, value), e.g. ("adc_bits", 6).
    pub set: Vec<(String, f64)>,
    pub adc_range: Option<AdcRange>,
    pub variation_model: Option<VariationModel>,
    /// Sweep axes (name, values); their product is evaluated.
    pub sweep: Vec<(String, Vec<f64>)>,
    /// Price every point with this component library (energy, area, latency beside
    /// the accuracy); `None`: accuracy only.
    pub components: Option<pimkit_cost::Components>,
}

/// A mapped layer as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerInfo {
    pub name: String,
    pub op: String,
    /// Weight rows and columns of one matrix (one group of a grouped convolution).
    pub rows: usize,
    pub cols: usize,
    pub groups: usize,
    /// Arrays of one copy (all matrices and groups).
    pub arrays: usize,
}

/// The study's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccuracyResult {
    pub model: String,
    pub arch: String,
    /// The settings before the sweep.
    pub config: Config,
    pub inputs: usize,
    pub trials: usize,
    pub seed: u64,
    /// Top-1 accuracy of the ideal model against the labels, when given.
    pub ideal_accuracy: Option<f64>,
    pub layers: Vec<LayerInfo>,
    /// Weighted nodes the functional model does not cover (they run ideal).
    pub unmodelled: Vec<Skipped>,
    pub axes: Vec<(String, Vec<f64>)>,
    pub points: Vec<PointResult>,
    /// The component library the points are priced with, when they are.
    #[serde(default)]
    pub components: Option<String>,
    /// Per point (same order): what it costs per inference; empty when not priced.
    #[serde(default)]
    pub costs: Vec<PointCost>,
    pub notes: Vec<String>,
}

/// The mapped layers: per node its matrices cut into arrays of the partition's weight
/// rows and columns; nodes the model does not cover are returned apart.
pub fn plan(g: &Graph, arch: &Arch) -> Result<(Vec<LayerMap>, Vec<LayerInfo>, Vec<Skipped>)> {
    let (layers, mut skipped) = extract_nodes(g)?;
    let cfg = PartitionCfg::new(arch, Mode::Pimkit, DepthwiseMapping::Compact, 1);
    let (wr, wc) = (cfg.weight_rows(), cfg.weight_cols());
    let mut maps = Vec::new();
    let mut infos = Vec::new();
    for nl in layers {
        let node = g.node(nl.node);
        if !pimkit_analog::layer::supported(&node.op) || matches!(node.op, Op::ConvTranspose(_)) {
            skipped.push(Skipped {
                node: node.name.clone(),
                op: node.op.name().into(),
                reason: "not covered by the functional model (runs ideal)".into(),
            });
            continue;
        }
        let mats: Vec<MatMap> = nl
            .layer
            .mats
            .iter()
            .map(|&(r, _)| MatMap::uniform(r, wr, wc))
            .collect();
        let arrays: usize = nl
            .layer
            .mats
            .iter()
            .map(|&(r, c)| r.div_ceil(wr) * c.div_ceil(wc))
            .sum::<usize>()
            * nl.layer.groups;
        let (rows, cols) = nl.layer.mats[0];
        infos.push(LayerInfo {
            name: nl.layer.name.clone(),
            op: nl.layer.op.clone(),
            rows,
            cols,
            groups: nl.layer.groups,
            arrays,
        });
        maps.push(LayerMap {
            node: nl.node,
            weight_left: nl.weight_left,
            mats,
        });
    }
    Ok((maps, infos, skipped))
}

/// The base configuration: the architecture's, with the options' overrides.
pub fn base_config(arch: &Arch, opts: &AccuracyOptions) -> Result<(Config, Vec<String>)> {
    let (mut cfg, fallback) = arch.analog_config()?;
    let mut notes = Vec::new();
    if fallback {
        notes.push(format!(
            "the architecture '{}' has no [analog]/[device] sections: their settings are arch/rram-128.toml's",
            arch.name
        ));
    }
    if let Some(r) = opts.adc_range {
        cfg.analog.adc_range = r;
    }
    if let Some(m) = opts.variation_model {
        cfg.device.variation_model = m;
    }
    for (k, v) in &opts.set {
        cfg.set(k, *v)?;
    }
    Ok((cfg, notes))
}

/// Evaluate `g` on `inputs` (labels: one class per output row); `progress` is called after
/// each programmed trial with (done, total).
pub fn run_accuracy(
    label: &str,
    g: &Graph,
    arch: &Arch,
    inputs: Vec<Inputs>,
    labels: Option<Vec<usize>>,
    opts: &AccuracyOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<AccuracyResult> {
    if opts.trials == 0 || opts.trials > 100_000 {
        return Err(XbarError::Option {
            option: "trials",
            msg: "must be between 1 and 100000".into(),
        });
    }
    let (cfg, mut notes) = base_config(arch, opts)?;
    let points = grid(&cfg, &opts.sweep)?;
    let (maps, layers, unmodelled) = plan(g, arch)?;
    if maps.is_empty() {
        return Err(XbarError::NoLayers);
    }
    let n_inputs = inputs.len();
    // Priced before the study takes the inputs (the counts come from the same inputs).
    let (mut costs, cost_notes) = match &opts.components {
        Some(lib) => {
            let cfgs: Vec<Config> = points.iter().map(|p| p.1.clone()).collect();
            price_points(g, arch, lib, &inputs, &cfgs)?
        }
        None => (vec![], vec![]),
    };
    notes.extend(cost_notes);
    let net = Network::new(g, maps, cfg.geom.clone())?;
    let mut study = Study::new(net, inputs, labels)?;
    // Counted and reported under one lock: with an atomic counter two trials finishing
    // together could report 2/2 before 1/2 (the caller's last report was then 1 of 2).
    let done = std::sync::Mutex::new(0usize);
    let jobs = jobs_count(&points, opts.trials);
    let results = study.run(&points, opts.trials, opts.seed, &|| {
        let mut d = done.lock().unwrap_or_else(|e| e.into_inner());
        *d += 1;
        progress(*d, jobs);
    })?;
    notes.extend(config_notes(
        &points.iter().map(|p| p.1.clone()).collect::<Vec<_>>(),
    ));
    if !costs.is_empty() {
        mark_front(&results, &mut costs);
    }
    for l in &study.calib.lowered {
        if l.op == "GRU"
            && let Some(Op::Gru(a)) = g.nodes.iter().find(|n| n.name == l.name).map(|n| &n.op)
            && !a.linear_before_reset
        {
            notes.push(format!(
                "GRU '{}' has linear_before_reset = 0: the crossbar error of its candidate gate's \
                         recurrent product is evaluated on h instead of r * h (docs/accuracy.md)",
                l.name
            ));
        }
    }
    if !unmodelled.is_empty() {
        notes.push(format!(
            "{} weighted node(s) are not covered by the functional model and run ideal: {}",
            unmodelled.len(),
            unmodelled
                .iter()
                .map(|s| s.node.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(w) = results
        .iter()
        .map(|p| p.ir_drop_max)
        .reduce(f64::max)
        .filter(|&w| w > 0.1)
    {
        notes.push(format!(
            "the first-order IR drop reaches {:.0} % of a cell's current: beyond a few percent a full \
             network solve (CrossSim) is needed for accurate numbers",
            100.0 * w
        ));
    }
    Ok(AccuracyResult {
        model: label.to_string(),
        arch: arch.name.clone(),
        config: cfg,
        inputs: n_inputs,
        trials: opts.trials,
        seed: opts.seed,
        ideal_accuracy: study.ideal_accuracy(),
        layers,
        unmodelled,
        axes: opts.sweep.clone(),
        points: results,
        components: opts.components.as_ref().map(|c| c.name.clone()),
        costs,
        notes,
    })
}

/// Programmed trials the study will run (for progress): one per trial of every distinct
/// device setting, one for a device with nothing random.
pub fn jobs_count(points: &[(Vec<(String, f64)>, Config)], trials: usize) -> usize {
    let mut seen: Vec<String> = Vec::new();
    let mut n = 0;
    for (_, c) in points {
        let k = serde_json::to_string(&(&c.device, c.analog.spare_cols, c.analog.redundancy))
            .unwrap_or_default();
        if !seen.contains(&k) {
            n += if c.device.is_random() { trials } else { 1 };
            seen.push(k);
        }
    }
    n
}

/// Remarks about settings that decide the outcome on their own.
fn config_notes(cfgs: &[Config]) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(c) = cfgs
        .iter()
        .find(|c| c.analog.adc_bits > 0 && c.analog.adc_range == AdcRange::FullScale)
    {
        let fs = pimkit_analog::adc::coded_full_scale(c, false, 0);
        if let Some(adc) = pimkit_analog::Adc::for_layer(c, None, false, 0)
            && adc.step > 1.0
        {
            notes.push(format!(
                    "a full-scale {}-bit ADC steps {:.1} levels over the arrays' range of {fs} \
                     ({} rows x {} DAC levels x {} cell levels): partial sums are resolved only to that step; \
                     calibrate the range (--calibrate-adc), add ADC bits or use fewer bits per cell",
                    c.analog.adc_bits,
                    adc.step,
                    c.geom.rows,
                    pimkit_analog::adc::plane_bound(&c.geom, false),
                    pimkit_analog::adc::level_bound(&c.geom)
                ));
        }
    }
    if cfgs.iter().all(|c| !c.device.is_random()) {
        notes.push("nothing in the device is random: one trial stands for all".into());
    }
    notes
}
