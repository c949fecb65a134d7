use pimkit_vpu::problem::Gen;
use pimkit_vpu::run::{MmKernel, run_matmul};
use pimkit_vpu::{Arch, Dataflow};
fn main() {
    let p = Gen::new(12).matmul(1, 512, 256, false, false);
    for v in [1, 2, 4] {
        let a = Arch::default().with(v, 1.2);
        let (_, s) = run_matmul(&a, &p, MmKernel::Vm).unwrap();
        println!("VM v{v} {s:?}");
        let (_, s) = run_matmul(&a, &p, MmKernel::Mm(Dataflow::Os)).unwrap();
        println!("OS v{v} {s:?}");
    }
    let p = Gen::new(12).matmul(256, 256, 256, false, false);
    for df in Dataflow::ALL {
        let a = Arch::default();
        let (_, s) = run_matmul(&a, &p, MmKernel::Mm(df)).unwrap();
        let nop = 2.0 * 256f64.powi(3) + 2.0 * 65536.0 + 4.0 * 65536.0;
        println!("MM256 {df:?} ops/cyc {:.2} I {:.1} {s:?}", nop / s.cycles as f64, nop / s.offchip_bytes as f64);
    }
}
