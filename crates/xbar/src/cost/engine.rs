//! The cost engine behind the common contract: map a model (as `xbar map` does), count
//! the activity of one inference, and price it with a component library.

use super::activity::{Activity, measure};
use super::output::CostOutput;
use super::{CostInputs, cost};
use crate::accuracy::InputSource;
use crate::engine::{XbarOptions, engine_error};
use crate::{Arch, XbarError};
use pimkit_cost::Components;
use pimkit_engine::{EngineError, Headline, Progress, Section};
use pimkit_ir::Graph;

/// The cost engine.
pub struct Cost;

/// What steers a cost run.
#[derive(Clone, Debug)]
pub struct CostOptions {
    /// The mapping's settings (budget, S_DW, duplication, ...), as `xbar map` takes them.
    pub map: XbarOptions,
    /// The component library (a preset or a file laid over one).
    pub components: Components,
    /// Reference-run inputs for value-dependent counts; `None`: table counts (every input bit 1).
    pub inputs: Option<InputSource>,
}

impl CostOptions {
    pub fn new(components: Components) -> CostOptions {
        CostOptions {
            map: XbarOptions::default(),
            components,
            inputs: None,
        }
    }
}

impl pimkit_engine::Engine for Cost {
    const NAME: &'static str = "cost";
    type Arch = Arch;
    type Options = CostOptions;
    type Output = CostOutput;

    fn run(
        g: &Graph,
        arch: &Arch,
        opts: &CostOptions,
        progress: &mut dyn Progress,
    ) -> Result<CostOutput, EngineError> {
        let inputs = match &opts.inputs {
            Some(src) => {
                pimkit_interp::check_memory(g).map_err(EngineError::input)?;
                Some(src.resolve(g)?)
            }
            None => None,
        };
        run_costed(g, arch, opts, inputs.as_deref(), progress).map_err(engine_error)
    }

    fn section(out: &CostOutput) -> Section {
        super::report::cost_section(out)
    }

    fn headline(out: &CostOutput) -> Headline {
        let t = &out.totals;
        Headline::default()
            .with("energy", format!("{:.3} µJ/inference", t.energy_uj))
            .with("area", format!("{:.2} mm²", t.area_mm2))
            .with("efficiency", format!("{:.2} TOPS/W", t.tops_per_w))
            .with(
                "throughput",
                format!("{:.0} inferences/s", t.throughput_ips),
            )
    }
}

/// [`Cost::run`] with the inputs resolved.
pub(crate) fn run_costed(
    g: &Graph,
    arch: &Arch,
    opts: &CostOptions,
    inputs: Option<&[pimkit_analog::network::Inputs]>,
    progress: &mut dyn Progress,
) -> crate::Result<CostOutput> {
    let activity = match inputs {
        Some(inputs) => Some(measure_inputs(g, arch, &opts.components, inputs, progress)?),
        None => None,
    };
    let samples = inputs.map_or(0, <[_]>::len);
    price(g, arch, opts, activity.as_deref(), samples, progress)
}

/// The bit activity of every crossbar layer on reference runs of `inputs` (what
/// value-dependent counts need; it depends on the input and DAC bits only, so one
/// measurement serves every point that shares them).
pub(crate) fn measure_inputs(
    g: &Graph,
    arch: &Arch,
    lib: &Components,
    inputs: &[pimkit_analog::network::Inputs],
    progress: &mut dyn Progress,
) -> crate::Result<Vec<Activity>> {
    let (nodes, _) = crate::extract_nodes(g)?;
    if nodes.is_empty() {
        return Err(XbarError::NoLayers);
    }
    let geom = super::geometry(arch, lib);
    let total = 3 + inputs.len();
    let mut step = |k: usize| progress.step(2 + k, total, "reference run");
    measure(g, &nodes, inputs, geom.input_bits, geom.dac_bits, &mut step)
}

/// Map and price `g` on `arch`, with the activity `measure_inputs` found on `samples`
/// inputs (value-dependent counts) or without (table counts).
pub(crate) fn price(
    g: &Graph,
    arch: &Arch,
    opts: &CostOptions,
    activity: Option<&[Activity]>,
    samples: usize,
    progress: &mut dyn Progress,
) -> crate::Result<CostOutput> {
    let mut o = opts.map.resolve(arch);
    o.baseline = false;
    let label = opts.map.label_for(g);
    let total = 3 + samples;
    progress.step(0, total, "extract");
    let (nodes, skipped) = crate::extract_nodes(g)?;
    if nodes.is_empty() {
        return Err(XbarError::NoLayers);
    }
    let layers: Vec<_> = nodes.iter().map(|n| n.layer.clone()).collect();
    progress.step(1, total, "map");
    let m = crate::compile(&layers, arch, &o)?;
    let r = crate::summarize(&label, &layers, &skipped, &m, arch, &o, o.samples, None);
    let lib = &opts.components;
    let geom = super::geometry(arch, lib);
    progress.step(2 + samples, total, "cost");
    let c = cost(
        g,
        arch,
        &o,
        lib,
        &CostInputs {
            layers: &nodes,
            mapping: &m,
            first_sample_cycles: r.first_sample_cycles,
            activity,
        },
    )?;
    let mut notes = c.notes;
    if !r.fits {
        notes.insert(
            0,
            format!(
                "the mapping does not fit its budget of {} crossbars: costed with the {} it needs",
                r.crossbars_budget, r.crossbars_used
            ),
        );
    }
    for s in &skipped {
        notes.push(format!(
            "node '{}' ({}) not on crossbars: {}",
            s.node, s.op, s.reason
        ));
    }
    let unverified: Vec<_> = lib
        .components
        .iter()
        .filter(|(_, c)| c.unverified)
        .map(|(n, _)| n.as_str())
        .chain(lib.programming.unverified.then_some("programming"))
        .collect();
    if !unverified.is_empty() {
        notes.push(format!(
            "values marked unverified in library '{}': {}",
            lib.name,
            unverified.join(", ")
        ));
    }
    progress.step(total, total, "done");
    let (chip, model) = (c.chip, c.model);
    Ok(CostOutput {
        model: label,
        components: lib.name.clone(),
        geometry: geom,
        pulse_ns: model.pulse_ns,
        pulse_bound: model.pulse_bound.to_string(),
        counts_from: if samples > 0 {
            format!(
                "reference runs on {}",
                opts.inputs
                    .as_ref()
                    .map(InputSource::describe)
                    .unwrap_or_default()
            )
        } else {
            "table (every input bit 1)".to_string()
        },
        fits: r.fits,
        totals: c.totals,
        energy_by_component: c.energy_by_component,
        area_by_component: c.area_by_component,
        chip,
        layers: c.layers,
        notes,
    })
}
