//! Layer-by-layer simulation of a zoo model or an .onnx file (`cargo run --release -p
//! pimkit-puma --example per_layer -- vgg16|MODEL.onnx [res [shared_mem_words]]`), one
//! row per layer, then the warnings.
use pimkit_puma::{Arch, CompileOptions, SimOptions, run_per_layer};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("vgg16");
    let params: Vec<(String, String)> = args
        .get(2)
        .map(|r| vec![("res".to_string(), r.clone())])
        .unwrap_or_default();
    let g = if name.ends_with(".onnx") {
        pimkit_onnx::load(std::path::Path::new(name)).expect("onnx")
    } else {
        pimkit_zoo::build(name, &params).expect("zoo model")
    };
    let mut arch = Arch::default();
    if let Some(w) = args.get(3).and_then(|s| s.parse().ok()) {
        arch.tile.shared_mem_words = w;
    }
    let t0 = std::time::Instant::now();
    let r = run_per_layer(
        &g,
        &arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for l in &r.layers {
        println!(
            "{:<16} in {:?} sim {:?} scale {:>7.2} cycles {:>11} energy {:>12.1} nJ tiles {:>4} mvmus {:>5} err {:.2e} rel {:.2e} wall {:.2}s",
            l.name,
            l.input_shape,
            l.simulated_shape,
            l.scale,
            l.cycles,
            l.energy_nj,
            l.tiles,
            l.mvmus,
            l.max_abs_error.unwrap_or(f64::NAN),
            l.relative_error.unwrap_or(f64::NAN),
            l.wall_s
        );
    }
    println!(
        "total: {} cycles ({:.3} ms), {:.1} uJ, max err {:?}, scaled {}, wall {:.1} s",
        r.cycles,
        r.latency_ns / 1e6,
        r.energy_nj / 1e3,
        r.max_abs_error,
        r.scaled,
        t0.elapsed().as_secs_f64()
    );
    let mut parts = std::collections::BTreeMap::new();
    for l in &r.layers {
        for (k, v) in &l.energy_breakdown_nj {
            *parts.entry(k.clone()).or_insert(0.0) += v;
        }
    }
    let parts: Vec<String> = parts
        .iter()
        .map(|(k, v)| format!("{k} {:.3} mJ", v / 1e6))
        .collect();
    println!("energy by component (sum of layers): {}", parts.join(", "));
    for w in &r.warnings {
        println!("warning: {w}");
    }
}
