//! Whole MobileNetV2 (224x224) on the simulated system:
//! `cargo run --release -p pimkit-vpu --example mnv2 [vpus] [cold] [paper]`.
use pimkit_vpu::Arch;
use pimkit_vpu::network::{NetOptions, run_network};
fn main() {
    let vpus: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let g = pimkit_zoo::build_spec("q_mobilenet_v2").unwrap();
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let t = std::time::Instant::now();
    let cold = std::env::args().any(|a| a == "cold");
    let r = run_network(
        &g,
        &inputs,
        &Arch::default().with(vpus, 1.2),
        &NetOptions {
            cold_layers: cold,
            method: if std::env::args().any(|a| a == "paper") {
                pimkit_vpu::network::Method::Paper
            } else {
                pimkit_vpu::network::Method::Pimkit
            },
            ..Default::default()
        },
    )
    .unwrap();
    let dt = t.elapsed();
    for l in &r.layers {
        println!(
            "{:28} {:10} {:?} {:>12} {:>10} {:>10}",
            l.name, l.op, l.kernel, l.cycles, l.offchip_bytes, l.ops
        );
    }
    println!(
        "method {:?}: total cycles {:.1} M, offchip {:.1} MiB, ops {:.1} M, host {:.1} M, kernel {:.1} M, excluded {:.1} M, energy {:.2} J, wall {:.2?}",
        r.method,
        r.cycles as f64 / 1e6,
        r.offchip_bytes as f64 / 1048576.0,
        r.ops as f64 / 1e6,
        r.host_cycles as f64 / 1e6,
        r.kernel_cycles as f64 / 1e6,
        r.excluded_cycles as f64 / 1e6,
        r.energy_j,
        dt
    );
}
