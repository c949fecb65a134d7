//! Run roofline sweeps and write CSV/SVG:
//! `cargo run --release -p pimkit-vpu --example sweeps -- [quick] [paper] [sweep...]`
//! (`paper`: kernels in the paper's strict Table 2 formulation, `kernels = "paper"`).
use pimkit_vpu::Arch;
use pimkit_vpu::roofline::{Scale, Sweep, run_sweep, table3};
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "quick");
    let mut arch = Arch::default();
    if args.iter().any(|a| a == "paper") {
        arch.kernels = pimkit_vpu::arch::KernelStyle::Paper;
    }
    let sweeps: Vec<Sweep> = args
        .iter()
        .filter(|a| *a != "quick" && *a != "paper")
        .map(|a| Sweep::parse(a).unwrap())
        .collect();
    let sweeps = if sweeps.is_empty() {
        Sweep::ALL.to_vec()
    } else {
        sweeps
    };
    let mut all = vec![];
    for s in sweeps {
        let t = std::time::Instant::now();
        let pts = run_sweep(&arch, s, Scale { quick }).unwrap();
        eprintln!("{} {:?}", s.name(), t.elapsed());
        for p in &pts {
            println!(
                "{:9} {:14} {:10} {:6} v{} bw{} L{} c{}: P {:.2} I {:.1} roof {:.2} pJ/op {:.0}",
                p.sweep,
                p.kernel,
                p.label,
                p.dataflow,
                p.vpus,
                p.bandwidth,
                p.lanes,
                p.cache_kib,
                p.throughput,
                p.intensity,
                p.roof,
                p.energy_pj_per_op
            );
        }
        all.extend(pts);
    }
    println!("{}", table3(&all).to_terminal());
    pimkit_vpu::report::write_roofline_dir(&all, std::path::Path::new("/tmp/vpu_roofline"))
        .unwrap();
}
