//! The cycle calibrations of docs/vpu.md, each to one published point:
//! - `host.scalar_step_cycles`: QLinearMatMul-OS at M = K = N = 256 on one VPU reaches
//!   quinn §5.5's 3.21 Ops/cycle;
//! - `host.mac_cycles`: the scalar host's MM 1024 (Table 3's problem) runs at §5.9's
//!   measured 0.33 Ops/cycle;
//! - `host.dw_mac_cycles`: the scalar host's Table 3 depthwise runs at §5.9's 0.09.
//!
//! `cargo run --release -p pimkit-vpu --example calibrate` prints the throughput for a
//! range of values of each (the default arch otherwise).
use pimkit_vpu::roofline::{mm_work, simd_problems};
use pimkit_vpu::run::{MmKernel, run_matmul};
use pimkit_vpu::{Arch, Dataflow, problem::Gen};
fn main() {
    let p = Gen::new(256).matmul(256, 256, 256, false, true);
    let ops = mm_work(&p).n_op() as f64;
    for step in 20..=60 {
        let mut a = Arch::default();
        a.host.scalar_step_cycles = step;
        let (_, st) = run_matmul(&a, &p, MmKernel::Mm(Dataflow::Os)).unwrap();
        println!(
            "scalar_step_cycles {step:3}: MM256-OS {:.3} Ops/cycle (paper 3.21)",
            ops / st.cycles as f64
        );
    }
    // The §5.9 problems (MM 1024 among them) are built once.
    let problems = simd_problems(false);
    let host = |name: &str, set: &dyn Fn(&mut Arch)| {
        let (_, prob) = problems.iter().find(|(n, _)| *n == name).unwrap();
        let mut a = Arch::default();
        set(&mut a);
        prob.run_host(name, "simd", &a).unwrap().throughput
    };
    for q in 20..=28 {
        let c = q as f64 * 0.25;
        let p = host("MM", &|a| a.host.mac_cycles = c);
        println!("mac_cycles {c:5.2}: host MM 1024 {p:.3} Ops/cycle (paper 0.33)");
    }
    for c in 20..=30 {
        let c = c as f64;
        let p = host("Depthwise", &|a| a.host.dw_mac_cycles = c);
        println!("dw_mac_cycles {c:4.1}: host depthwise {p:.3} Ops/cycle (paper 0.09)");
    }
}
