//! Shared test harness: native execution against the reference interpreter.
#![allow(dead_code)]

use pimkit_ir::{Graph, Tensor};
use pimkit_loops::NativeOptions;

/// Float tolerance of native vs interpreter results:
/// `|a - b| <= ATOL * max(1, max|ref|) + RTOL * |b|`. Loop nests sum in a different order
/// than the interpreter's blocked GEMM and libm's expf/tanhf/erff differ from Rust's in
/// the last ulps.
pub const ATOL: f64 = 1e-4;
pub const RTOL: f64 = 1e-3;

pub fn opts() -> NativeOptions {
    NativeOptions {
        cache_dir: std::env::temp_dir().join("pimkit-loops-test-cache"),
        ..Default::default()
    }
}

pub fn compare(name: &str, got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.shape != want.shape || got.dtype() != want.dtype() {
        return Err(format!(
            "{name}: got {}{:?}, want {}{:?}",
            got.dtype(),
            got.shape,
            want.dtype(),
            want.shape
        ));
    }
    let (a, b) = (got.to_f64_vec(), want.to_f64_vec());
    let scale = b.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let ok = (x.is_nan() && y.is_nan()) || (x - y).abs() <= ATOL * scale + RTOL * y.abs();
        if !ok {
            return Err(format!("{name}: element {i}: native {x}, interpreter {y}"));
        }
    }
    Ok(())
}

/// Lower, run natively and compare every output with the interpreter.
pub fn check_graph(g: &Graph, seed: u64) -> Result<usize, String> {
    check_lowered(g, seed, &pimkit_loops::LowerOptions::default())
}

/// Lower with `o`, run natively and compare every output with the interpreter; returns
/// the nest count.
#[allow(dead_code)]
pub fn check_lowered(
    g: &Graph,
    seed: u64,
    o: &pimkit_loops::LowerOptions,
) -> Result<usize, String> {
    let p = pimkit_loops::lower_with(g, o).map_err(|e| format!("{}: lower: {e}", g.name))?;
    let inputs = pimkit_interp::random_inputs(g, seed);
    let ordered: Vec<Tensor> = g
        .inputs
        .iter()
        .map(|&v| inputs[&g.value(v).name].clone())
        .collect();
    let got =
        pimkit_loops::run(&p, &ordered, &opts()).map_err(|e| format!("{}: native: {e}", g.name))?;
    let want = pimkit_interp::run(g, &inputs).map_err(|e| format!("{}: interp: {e}", g.name))?;
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        compare(&format!("{} output {i}", g.name), a, b)?;
    }
    Ok(p.nests.len())
}

pub fn zoo(name: &str, params: &[(&str, &str)]) -> Graph {
    let params: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pimkit_zoo::build(name, &params).unwrap_or_else(|e| panic!("zoo {name}: {e}"))
}
