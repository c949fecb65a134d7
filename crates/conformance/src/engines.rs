//! One real-model case through one engine, as the CLI runs it (same libraries, same
//! default options), so a cell of docs/real-models.md is what a user would see.
//!
//! * exec: pimkit-interp vs the golden outputs (symbolic dims given, as `--dim` does).
//! * bind: the same with no dims given: pimkit must bind them from the inputs.
//! * lower: pimkit-loops lowering, compiled natively and run on the case's inputs, vs the
//!   golden outputs (the loop nests must compute the model, not only exist).
//! * offload: the Torch-PIM analysis of the lowered program (modelled counters, the fixed
//!   reference host, one timed run).
//! * xbar: layer extraction and crossbar mapping with the default architecture.
//! * puma: per-layer compile + simulation (`pimkit puma run --per-layer`); its summary
//!   (layers, how many were windowed or split, host nodes, cycles, largest error) is
//!   the cell's detail ([`run_cell_detail`]).
//! * vpu: the network run (`pimkit vpu run`), outputs vs the golden ones.

use crate::case::CaseError;
use crate::real_models::{Loaded, RealCase, compare_outputs, load_case, load_case_with};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

fn eng(krate: &'static str) -> impl Fn(String) -> CaseError {
    move |m| CaseError::Engine(krate, m)
}

/// The graph the static engines see (as the CLI gives them): control flow flattened, and
/// where it depends on inputs, those inputs bound to the case's values (`--bind`).
fn engine_view(dir: &Path, case: &RealCase, l: Loaded) -> Result<Loaded, CaseError> {
    let names =
        pimkit_ir::control_inputs(&l.graph).map_err(|e| CaseError::Import(e.to_string()))?;
    let mut l = if names.is_empty() {
        l
    } else {
        let bind = names
            .iter()
            .filter_map(|n| l.feeds.get(n).map(|t| (n.clone(), t.clone())))
            .collect();
        load_case_with(dir, case, true, bind)?
    };
    l.graph = pimkit_ir::require_static(&l.graph).map_err(|e| CaseError::Import(e.to_string()))?;
    Ok(l)
}

fn run_engine(
    engine: &str,
    dir: &Path,
    case: &RealCase,
) -> Result<Option<serde_json::Value>, CaseError> {
    let l = load_case(dir, case, engine != "bind")?;
    let l = if matches!(engine, "exec" | "bind") {
        l
    } else {
        engine_view(dir, case, l)?
    };
    let g = &l.graph;
    match engine {
        "exec" | "bind" => {
            let gots =
                pimkit_interp::run(g, &l.feeds).map_err(|e| CaseError::Run(e.to_string()))?;
            compare_outputs(case, g, &gots, &l.wants).map(|_| None)
        }
        "lower" => {
            let e = eng("lower (pimkit-loops)");
            let p = pimkit_loops::lower(g).map_err(|x| e(x.to_string()))?;
            let gots = pimkit_loops::run(&p, &l.inputs, &pimkit_loops::NativeOptions::default())
                .map_err(|x| e(format!("native run: {x}")))?;
            compare_outputs(case, g, &gots, &l.wants).map(|_| None)
        }
        "offload" => {
            let e = eng("offload (pimkit-offload)");
            let o = pimkit_offload::Options {
                counters: pimkit_offload::CounterMode::Model,
                runs: 1,
                ..Default::default()
            };
            let host = pimkit_offload::HostCalib::fixed_reference();
            pimkit_offload::run_graph(g, &host, &o).map_err(|x| e(x.to_string()))?;
            Ok(None)
        }
        "xbar" => {
            let e = eng("xbar (pimkit-xbar)");
            let arch = pimkit_xbar::Arch::default();
            let opts = pimkit_xbar::MapOptions::from_arch(&arch);
            let ex = pimkit_xbar::extract(g).map_err(|x| e(x.to_string()))?;
            if ex.layers.is_empty() {
                return Err(e(pimkit_xbar::XbarError::NoLayers.to_string()));
            }
            pimkit_xbar::map_layers("case", &ex.layers, &ex.skipped, &arch, &opts)
                .map_err(|x| e(x.to_string()))?;
            Ok(None)
        }
        "puma" => {
            let e = eng("puma (pimkit-puma)");
            let r = pimkit_puma::run_per_layer_with(
                g,
                &pimkit_puma::Arch::default(),
                &pimkit_puma::CompileOptions::default(),
                &pimkit_puma::SimOptions::default(),
                Some(l.feeds.clone()),
                &mut |_, _, _| {},
            )
            .map_err(|x| e(x.to_string()))?;
            Ok(Some(puma_detail(&r)))
        }
        "vpu" => {
            let e = eng("vpu (pimkit-vpu)");
            let r = pimkit_vpu::network::run_network_with(
                g,
                &l.feeds,
                &pimkit_vpu::Arch::default(),
                &pimkit_vpu::network::NetOptions::default(),
                &mut |_, _, _| {},
            )
            .map_err(|x| e(x.to_string()))?;
            compare_outputs(case, g, &r.outputs, &l.wants).map(|_| None)
        }
        other => Err(CaseError::Data(format!("unknown engine '{other}'"))),
    }
}

/// The per-layer run in a few numbers: layers, those simulated on a window and scaled,
/// those split into parts, nodes on the host, summed cycles and energy, largest error.
fn puma_detail(r: &pimkit_puma::PerLayerResult) -> serde_json::Value {
    let split =
        |l: &&pimkit_puma::LayerResult| l.notes.iter().any(|n| n.contains("one after the other"));
    serde_json::json!({
        "layers": r.layers.len(),
        "scaled_layers": r.layers.iter().filter(|l| l.scale != 1.0).count(),
        "split_layers": r.layers.iter().filter(split).count(),
        "host_nodes": r.layers.iter().map(|l| l.host_nodes.len()).sum::<usize>(),
        "cycles": r.cycles,
        "energy_nj": r.energy_nj,
        "max_abs_error": r.max_abs_error,
    })
}

/// Run one engine on one case; a panic becomes [`CaseError::Panic`].
pub fn run_cell(engine: &str, dir: &Path, case: &RealCase) -> Result<(), CaseError> {
    run_cell_detail(engine, dir, case).map(|_| ())
}

/// [`run_cell`], with the engine's summary where it has one (puma: [`puma_detail`]).
pub fn run_cell_detail(
    engine: &str,
    dir: &Path,
    case: &RealCase,
) -> Result<Option<serde_json::Value>, CaseError> {
    crate::case::pin_vector_variant();
    match catch_unwind(AssertUnwindSafe(|| run_engine(engine, dir, case))) {
        Ok(r) => r,
        Err(p) => Err(CaseError::Panic(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic payload".into()),
        )),
    }
}
