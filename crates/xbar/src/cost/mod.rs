//! Hardware cost of a crossbar mapping: energy, area, latency, throughput, power and
//! efficiency of a model on a component library (pimkit-cost), from the mapping `xbar map`
//! computes (pieces, depthwise split, duplication, packing). Counts are table-driven (every
//! input bit 1) or measured on reference runs (`--inputs`/`--random`). docs/cost.md.

pub mod activity;
pub mod count;
mod digital;
pub mod engine;
mod output;
mod report;
pub mod sweep;

use crate::arch::{Arch, Mode};
use crate::error::{Result, XbarError};
use crate::layer::NodeLayer;
use crate::map::{MapOptions, Mapping};
use crate::partition::PartitionCfg;
use activity::Activity;
use pimkit_cost::{Components, Counts, Geometry, Model};
use pimkit_ir::Graph;
use serde::Serialize;
use std::collections::BTreeMap;

pub use engine::{Cost, CostOptions};
pub use output::CostOutput;
pub use report::{area_svg, cost_section, cost_tables, energy_svg};

/// The evaluated geometry of an xbar architecture (its `[crossbar]`, `[timing]` and the
/// `[analog]` ADC resolution; a file without `[analog]` takes the library's ADC bits).
pub fn geometry(arch: &Arch, lib: &Components) -> Geometry {
    let c = &arch.crossbar;
    Geometry {
        rows: c.rows,
        cols: c.cols,
        cell_bits: c.cell_bits,
        weight_bits: c.weight_bits,
        input_bits: arch.timing.input_bits,
        dac_bits: arch.timing.dac_bits,
        adc_bits: match &arch.analog {
            Some(a) if a.adc_bits > 0 => a.adc_bits,
            _ => lib.design.adc_bits,
        },
        differential: c.differential,
    }
}

/// One layer's cost per inference.
#[derive(Clone, Debug, Serialize)]
pub struct LayerCost {
    pub name: String,
    pub op: String,
    pub macs: u64,
    /// Crossbar arrays holding the layer (copies included).
    pub arrays: usize,
    pub copies: u64,
    /// Input vectors per inference (reads of every piece, summed over pieces).
    pub reads: u64,
    /// Time of the layer per inference with its copies, µs (array reads only).
    pub time_us: f64,
    pub energy_uj: f64,
    /// Dynamic energy by component, µJ.
    pub energy_by_component: BTreeMap<String, f64>,
    /// Operations per inference by kind.
    pub counts: BTreeMap<String, f64>,
}

/// Totals per inference and what the chip provides.
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    pub energy_uj: f64,
    pub dynamic_uj: f64,
    pub static_uj: f64,
    /// First inference through the pipeline, µs.
    pub latency_us: f64,
    /// Steady-state inferences per second with the mapping's duplication.
    pub throughput_ips: f64,
    /// What bounds the throughput: the slowest layer or crossbar, and whether the array read
    /// or the ADC sets the pulse.
    pub bottleneck: String,
    pub power_w: f64,
    /// Area of the tiles the mapping uses (and chip-level parts), mm².
    pub area_mm2: f64,
    /// Area of the chips provided, mm².
    pub chip_area_mm2: f64,
    pub chips: usize,
    pub tiles: usize,
    pub pes: usize,
    pub arrays: usize,
    pub macs: u64,
    pub ops: u64,
    pub tops: f64,
    pub tops_per_w: f64,
    pub tops_per_mm2: f64,
    /// Peak of the chips provided (every array busy), TOPS.
    pub peak_tops: f64,
    /// Achieved over peak.
    pub utilization: f64,
    /// Writing every weight cell once (all arrays in parallel), µJ and ms.
    pub programming_uj: f64,
    pub programming_ms: f64,
}

/// What [`cost`] computes.
pub struct Costed {
    pub totals: Totals,
    pub layers: Vec<LayerCost>,
    /// Dynamic energy per inference by component, µJ.
    pub energy_by_component: BTreeMap<String, f64>,
    /// Area of the tiles used by component, mm².
    pub area_by_component: BTreeMap<String, f64>,
    pub model: Model,
    /// One chip of the library at the evaluated geometry, every array busy.
    pub chip: pimkit_cost::ChipFigures,
    pub notes: Vec<String>,
}

impl Totals {
    /// Energy of `n` inferences in the pipeline's steady state (each takes one period of
    /// the chip's static power), µJ.
    pub fn energy_for(&self, n: u64) -> f64 {
        n as f64 * (self.dynamic_uj + self.static_uj)
    }
}

/// Everything but the mapping itself: what `cost` computes from a mapping.
pub struct CostInputs<'a> {
    pub layers: &'a [NodeLayer],
    pub mapping: &'a Mapping,
    pub first_sample_cycles: u64,
    pub activity: Option<&'a [Activity]>,
}

/// Per-inference cost of a mapping on `lib`.
pub fn cost(
    g: &Graph,
    arch: &Arch,
    opts: &MapOptions,
    lib: &Components,
    inp: &CostInputs<'_>,
) -> Result<Costed> {
    let geom = geometry(arch, lib);
    let model = Model::new(lib, &geom);
    let m = inp.mapping;
    let cfg = PartitionCfg::new(arch, opts.mode, opts.depthwise, opts.sdw);
    let pulses = geom.pulses();
    let vec_ns = model.pulse_ns * pulses as f64;
    let mut notes = Vec::new();
    if opts.mode == Mode::RncCompat {
        notes.push(
            "rnc-compat mapping: one cell per weight regardless of cell bits (its boxes are not widened); costs follow those boxes"
                .to_string(),
        );
    }

    // Where each layer sits: tiles of its crossbars, for network hops.
    let arrays_per_tile = (model.arrays_per_pe * model.pes_per_tile).max(1);
    let used = m.packing.crossbars.max(1);
    let tiles_used = used.div_ceil(arrays_per_tile);
    let side = (tiles_used as f64).sqrt().ceil().max(1.0) as usize;
    let mut xbars: Vec<Vec<u32>> = vec![Vec::new(); inp.layers.len()];
    let mut load = vec![0u64; used];
    for p in &m.packing.placements {
        let li = p.item.layer as usize;
        xbars[li].push(p.xbar);
        let piece = m.pieces[li][p.item.piece as usize];
        load[p.xbar as usize] += piece.cycles.div_ceil(m.copies[li].max(1));
    }
    let centroid = |xs: &[u32]| -> (f64, f64) {
        let n = xs.len().max(1) as f64;
        xs.iter().fold((0.0, 0.0), |(x, y), &a| {
            let t = a as usize / arrays_per_tile;
            (x + (t % side) as f64 / n, y + (t / side) as f64 / n)
        })
    };
    let mut layers = Vec::with_capacity(inp.layers.len());
    let mut total = Counts::default();
    let full = Activity::full(pulses);
    for (i, nl) in inp.layers.iter().enumerate() {
        let l = &nl.layer;
        let hops = match xbars.get(i + 1) {
            Some(next) => {
                let (a, b) = (centroid(&xbars[i]), centroid(next));
                (a.0 - b.0).abs() + (a.1 - b.1).abs()
            }
            None => 0.0,
        };
        let act = inp.activity.map_or(&full, |a| &a[i]);
        let inputs = data_input_elems(g, nl);
        let c = count::layer_counts(
            l,
            &m.pieces[i],
            &cfg,
            &geom,
            act,
            lib.zero_skip,
            inputs,
            hops,
            priced_share(g, nl, lib.positions),
        );
        total.merge(&c);
        let (by, _) = c.energy(&model);
        let mut xs = xbars[i].clone();
        xs.sort_unstable();
        xs.dedup();
        let cycles = m.pieces[i]
            .iter()
            .map(|p| p.cycles.div_ceil(m.copies[i].max(1)))
            .max()
            .unwrap_or(0);
        layers.push(LayerCost {
            name: l.name.clone(),
            op: l.op.clone(),
            macs: l.macs(),
            arrays: xs.len(),
            copies: m.copies[i],
            reads: m.pieces[i].iter().map(|p| p.cycles).sum(),
            time_us: cycles as f64 * vec_ns / 1e3,
            energy_uj: by.values().sum::<f64>() / 1e6,
            energy_by_component: by.into_iter().map(|(k, v)| (k, v / 1e6)).collect(),
            counts: c
                .0
                .iter()
                .map(|(k, v)| (k.name().to_string(), *v))
                .collect(),
        });
    }
    // Digital work outside the crossbars and the chip's input and output.
    let node_set: std::collections::HashSet<_> = inp.layers.iter().map(|l| l.node).collect();
    let dig = digital::counts(g, &node_set, geom.act_bytes());
    total.merge(&dig);
    let (energy_pj, uncosted) = total.energy(&model);
    for k in uncosted {
        notes.push(format!(
            "library '{}' has no component of kind '{}': its {:.3e} operations per inference are not costed",
            lib.name,
            k.name(),
            total.get(k)
        ));
    }

    // Sizing: arrays → PEs → tiles → chips.
    let pes = used.div_ceil(model.arrays_per_pe);
    let tiles = pes.div_ceil(model.pes_per_tile);
    let chips = tiles.div_ceil(model.tiles_per_chip);
    let mut area = BTreeMap::new();
    let mut static_mw = 0.0;
    for s in &model.components {
        // Whole tiles: a tile is the unit a chip is built of, used PEs or not.
        let n = model.instances(s.level, tiles as f64, chips as f64);
        *area.entry(s.name.clone()).or_insert(0.0) += s.area_mm2 * n;
        static_mw += s.static_mw * n;
    }
    let chip = model.chip();
    let area_mm2: f64 = area.values().sum();

    // Time: the slowest crossbar (its pieces run one after another) or layer sets the period.
    let period = load.iter().copied().max().unwrap_or(0).max(1);
    let slowest = layers
        .iter()
        .max_by(|a, b| a.time_us.total_cmp(&b.time_us))
        .map(|l| l.name.clone())
        .unwrap_or_default();
    let period_s = period as f64 * vec_ns * 1e-9;
    let throughput = 1.0 / period_s;
    let dynamic_pj: f64 = energy_pj.values().sum();
    let static_pj = static_mw * period_s * 1e9; // mW x ns = pJ
    let energy = dynamic_pj + static_pj;
    let macs: u64 = inp.layers.iter().map(|l| l.layer.macs()).sum();
    let ops = 2 * macs;
    let tops = ops as f64 * throughput / 1e12;
    let power_w = energy * 1e-12 * throughput;
    let cells: u64 = m
        .pieces
        .iter()
        .zip(&m.copies)
        .map(|(ps, &x)| ps.iter().map(|p| p.area()).sum::<u64>() * x)
        .sum();
    let totals = Totals {
        energy_uj: energy / 1e6,
        dynamic_uj: dynamic_pj / 1e6,
        static_uj: static_pj / 1e6,
        latency_us: inp.first_sample_cycles as f64 * vec_ns / 1e3,
        throughput_ips: throughput,
        bottleneck: format!(
            "layer '{slowest}' ({} per pulse: {:.1} ns)",
            model.pulse_bound, model.pulse_ns
        ),
        power_w,
        area_mm2,
        chip_area_mm2: chip.area_mm2 * chips as f64,
        chips,
        tiles,
        pes,
        arrays: used,
        macs,
        ops,
        tops,
        tops_per_w: ops as f64 / energy,
        tops_per_mm2: tops / area_mm2,
        peak_tops: chip.peak_tops * chips as f64,
        utilization: tops / (chip.peak_tops * chips as f64),
        programming_uj: cells as f64 * model.programming_pj_per_cell / 1e6,
        programming_ms: arch.crossbar.rows as f64 * model.programming_ns_per_row / 1e6,
    };
    if chips > 1 {
        notes.push(format!(
            "the mapping needs {used} arrays, more than one chip of '{}' holds ({}): costed as {chips} chips",
            lib.name, chip.arrays
        ));
    }
    notes.extend(
        model
            .scaling
            .iter()
            .map(|s| format!("scaled to the evaluated geometry: {s}")),
    );
    Ok(Costed {
        totals,
        layers,
        energy_by_component: energy_pj.into_iter().map(|(k, v)| (k, v / 1e6)).collect(),
        area_by_component: area,
        model,
        chip,
        notes,
    })
}

/// Elements of a layer's data operand (the first input that is not a stored weight).
fn data_input_elems(g: &Graph, nl: &NodeLayer) -> f64 {
    let n = g.node(nl.node);
    n.inputs
        .iter()
        .flatten()
        .find(|&&v| !matches!(g.value(v).def, pimkit_ir::ValueDef::Const(_)))
        .map_or(0.0, |&v| g.ty(v).numel() as f64)
}

/// The share of a layer's input vectors a library counts reads for: 1, or for a
/// convolution under `positions = "valid"` the positions whose window lies inside the
/// unpadded input, prod_d ((X_d - dil_d (K_d - 1) - 1) / s_d + 1) over the output's
/// prod_d Y_d (NeuroSim's numInVector).
fn priced_share(g: &Graph, nl: &NodeLayer, positions: pimkit_cost::Positions) -> f64 {
    use pimkit_ir::Op;
    if positions == pimkit_cost::Positions::All {
        return 1.0;
    }
    let n = g.node(nl.node);
    let (a, w_at) = match &n.op {
        Op::Conv(a) | Op::ConvInteger(a) => (a, 1),
        Op::QLinearConv(a) => (a, 3),
        _ => return 1.0,
    };
    let (Some(x), Some(w), Some(y)) = (
        n.inputs.first().copied().flatten(),
        n.inputs.get(w_at).copied().flatten(),
        n.outputs.first(),
    ) else {
        return 1.0;
    };
    let (xs, ws, ys) = (&g.ty(x).shape, &g.ty(w).shape, &g.ty(*y).shape);
    if xs.len() != ys.len() || ws.len() != xs.len() || xs.len() < 3 {
        return 1.0;
    }
    let mut share = 1.0;
    for d in 0..xs.len() - 2 {
        let s = a.strides.get(d).copied().unwrap_or(1).max(1);
        let dil = a.dilations.get(d).copied().unwrap_or(1).max(1);
        let span = dil * (ws[d + 2].max(1) - 1) + 1;
        let valid = if xs[d + 2] >= span {
            (xs[d + 2] - span) / s + 1
        } else {
            0
        };
        share *= valid as f64 / ys[d + 2].max(1) as f64;
    }
    share.min(1.0)
}

/// A component library by preset name or file, as an xbar error.
pub fn load_components(spec: &str) -> Result<Components> {
    pimkit_cost::load(spec).map_err(XbarError::ArchFile)
}
