//! Profiling aid: simulate a zoo model repeatedly (`cargo run --release -p pimkit-puma
//! --example sim_loop -- puma_mlp_l4 50`), e.g. under `perf record -e cpu-clock`.

use pimkit_puma::{Arch, CompileOptions, SimOptions, compile, simulate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("puma_mlp_l4");
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let g = pimkit_zoo::build(name, &[]).expect("zoo model");
    let p = compile(&g, &Arch::default(), &CompileOptions::default()).expect("compiles");
    let inputs = pimkit_interp::random_inputs(&g, 0);
    // On-CPU time of this thread (ns), robust against other processes on a shared machine.
    let cpu = || -> f64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
            .unwrap_or(0.0)
    };
    let c0 = cpu();
    let mut best = f64::INFINITY;
    let mut cycles = 0;
    for _ in 0..reps {
        let t0 = std::time::Instant::now();
        let o = simulate(&p, &inputs, &SimOptions::default()).expect("simulates");
        best = best.min(t0.elapsed().as_secs_f64());
        cycles = o.stats.cycles;
    }
    let per = (cpu() - c0) / reps as f64 / 1e9;
    println!(
        "{name}: mean on-CPU time {:.3} ms -> {:.2} M cycles/s",
        per * 1e3,
        cycles as f64 / per / 1e6
    );
    println!(
        "{name}: {cycles} cycles, best {:.3} ms -> {:.2} M cycles/s",
        best * 1e3,
        cycles as f64 / best / 1e6
    );
}
