//! The native half of the `pimkit` Python package (`pimkit._native`). Every engine function
//! mirrors one CLI command: the same options (as keyword arguments), the same checks and
//! the same JSON (returned as text; the Python layer makes it a dict). Engine work runs
//! with the GIL released. The Python half (python/pimkit) adds the user-facing signatures,
//! docstrings, DataFrames and the executors. Tests: crates/python/tests (pytest).

mod accuracy;
mod common;
mod errors;
mod frontend;
mod llm;
mod loops;
mod model;
mod nas;
mod progress;
mod puma;
mod tensor;
mod vpu;
mod xbar;

use pyo3::prelude::*;

/// The zoo's entries as JSON: name, family, description and parameters.
#[pyfunction]
fn zoo_list() -> PyResult<String> {
    let v: Vec<serde_json::Value> = pimkit_zoo::entries()
        .into_iter()
        .map(|e| {
            serde_json::json!({
                "name": e.name,
                "family": e.family,
                "description": e.description,
                "params": e.params.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&v).map_err(|e| errors::InternalError::new_err(e.to_string()))
}

/// Worker threads of the reference interpreter (0: leave as is); returns the count in use.
#[pyfunction]
#[pyo3(signature = (n=0))]
fn threads(n: usize) -> PyResult<usize> {
    if n > 0 {
        pimkit_interp::set_threads(n).map_err(errors::input_err)?;
    }
    Ok(pimkit_interp::threads())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("InputError", py.get_type::<errors::InputError>())?;
    m.add("InternalError", py.get_type::<errors::InternalError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "PUMA_DEFAULT_MAX_CYCLES",
        pimkit_puma::sim::DEFAULT_MAX_CYCLES,
    )?;
    m.add("PUMA_DEFAULT_TOLERANCE", pimkit_puma::DEFAULT_TOLERANCE)?;
    m.add_class::<model::Model>()?;
    m.add_class::<nas::Search>()?;
    m.add_function(wrap_pyfunction!(model::load, m)?)?;
    m.add_function(wrap_pyfunction!(zoo_list, m)?)?;
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    m.add_function(wrap_pyfunction!(loops::lower, m)?)?;
    m.add_function(wrap_pyfunction!(loops::profile, m)?)?;
    m.add_function(wrap_pyfunction!(loops::offload, m)?)?;
    m.add_function(wrap_pyfunction!(xbar::xbar_map, m)?)?;
    m.add_function(wrap_pyfunction!(xbar::xbar_cost, m)?)?;
    m.add_function(wrap_pyfunction!(llm::llm_analyze, m)?)?;
    m.add_function(wrap_pyfunction!(llm::llm_generate, m)?)?;
    m.add_function(wrap_pyfunction!(xbar::xbar_cost_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(xbar::xbar_cost_sweep_merge, m)?)?;
    m.add_function(wrap_pyfunction!(xbar::xbar_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(xbar::xbar_sweep_files, m)?)?;
    m.add_function(wrap_pyfunction!(accuracy::xbar_accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(frontend::quantize, m)?)?;
    m.add_function(wrap_pyfunction!(frontend::report, m)?)?;
    m.add_function(wrap_pyfunction!(puma::puma_compile, m)?)?;
    m.add_function(wrap_pyfunction!(puma::puma_sim, m)?)?;
    m.add_function(wrap_pyfunction!(puma::puma_run, m)?)?;
    m.add_function(wrap_pyfunction!(vpu::vpu_run, m)?)?;
    m.add_function(wrap_pyfunction!(vpu::vpu_roofline, m)?)?;
    m.add_function(wrap_pyfunction!(vpu::vpu_table3, m)?)?;
    m.add_function(wrap_pyfunction!(nas::nas_search, m)?)?;
    Ok(())
}
