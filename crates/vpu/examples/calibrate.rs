//! The one cycle calibration of docs/vpu.md: `host.scalar_step_cycles` is the value that
//! makes QLinearMatMul-OS at M = K = N = 256 on one VPU reach quinn §5.5's 3.21
//! Ops/cycle. `cargo run --release -p pimkit-vpu --example calibrate` prints the
//! throughput for a range of values (the default arch otherwise).
use pimkit_vpu::roofline::mm_work;
use pimkit_vpu::run::{MmKernel, run_matmul};
use pimkit_vpu::{Arch, Dataflow, problem::Gen};
fn main() {
    let p = Gen::new(256).matmul(256, 256, 256, false, true);
    let ops = mm_work(&p).n_op() as f64;
    for step in (20..=60).step_by(1) {
        let mut a = Arch::default();
        a.host.scalar_step_cycles = step;
        let (_, st) = run_matmul(&a, &p, MmKernel::Mm(Dataflow::Os)).unwrap();
        println!(
            "scalar_step_cycles {step:3}: MM256-OS {:.3} Ops/cycle (paper 3.21)",
            ops / st.cycles as f64
        );
    }
}
