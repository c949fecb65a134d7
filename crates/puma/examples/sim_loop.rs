//! Profiling and exactness aid: simulate a zoo model repeatedly.
//!
//! `cargo run --release -p pimkit-puma --example sim_loop -- puma_mlp_l4 50` prints the
//! mean on-CPU and best wall time per inference (run it under `perf record -e cpu-clock`
//! to profile). Options after the repetition count:
//! * `--param k=v` (repeatable): zoo parameters, e.g. `--param res=32`;
//! * `--bit-serial`: the original's bit-serial MVM arithmetic;
//! * `--non-blocking`: non-blocking MVMs (`core.mvm_blocking = false`);
//! * `--shmem N`: shared-memory words per tile (VGG16 needs `1048576`);
//! * `--json`: print one JSON line with the complete statistics, the outputs as f32 bit
//!   patterns and a hash of the final registers of the core with the longest program
//!   (`dumped_core`), to compare simulator
//!   versions for bit-identical results (`diff` the lines of two builds).

use pimkit_puma::{Arch, CompileOptions, NumMode, SimOptions, compile, simulate};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("puma_mlp_l4");
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let mut params = Vec::new();
    let mut arch = Arch::default();
    let mut opts = SimOptions::default();
    let mut json = false;
    let mut it = args.iter().skip(3);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--param" => {
                let kv = it.next().expect("--param k=v");
                let (k, v) = kv.split_once('=').expect("--param k=v");
                params.push((k.to_string(), v.to_string()));
            }
            "--bit-serial" => opts.mode = NumMode::BitSerial,
            "--non-blocking" => arch.core.mvm_blocking = false,
            "--shmem" => {
                arch.tile.shared_mem_words = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--shmem WORDS")
            }
            "--json" => json = true,
            other => panic!("unknown option {other}"),
        }
    }
    let g = pimkit_zoo::build(name, &params).expect("zoo model");
    let p = compile(&g, &arch, &CompileOptions::default()).expect("compiles");
    let inputs = pimkit_interp::random_inputs(&g, 0);
    // The core with the longest program (the first on a tie): an active core, whose
    // final registers say something (core (0, 0) is often an idle `hlt`).
    let busiest = p
        .tiles
        .iter()
        .enumerate()
        .flat_map(|(t, tp)| {
            tp.cores
                .iter()
                .enumerate()
                .map(move |(c, code)| (t, c, code.len()))
        })
        .fold((0, 0, 0), |best, x| if x.2 > best.2 { x } else { best });
    if json {
        opts.dump_core = Some((busiest.0, busiest.1));
    }
    // On-CPU time of this thread (ns), robust against other processes on a shared machine.
    let cpu = || -> f64 {
        std::fs::read_to_string("/proc/thread-self/schedstat")
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse().ok()))
            .unwrap_or(0.0)
    };
    let c0 = cpu();
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..reps.max(1) {
        let t0 = std::time::Instant::now();
        let o = simulate(&p, &inputs, &opts).expect("simulates");
        best = best.min(t0.elapsed().as_secs_f64());
        last = Some(o);
    }
    let o = last.expect("one run");
    let cycles = o.stats.cycles;
    if json {
        // FNV-1a over the register words and the halt cycle.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        if let Some((regs, t)) = &o.core_dump {
            for w in regs.iter().map(|&r| r as i64).chain([*t as i64]) {
                h = (h ^ w as u64).wrapping_mul(0x100_0000_01b3);
            }
        }
        let outputs: Vec<Vec<u32>> = o
            .outputs
            .iter()
            .map(|t| t.to_f32_vec().iter().map(|x| x.to_bits()).collect())
            .collect();
        let v = serde_json::json!({
            "model": name, "params": params, "mode": format!("{:?}", opts.mode),
            "mvm_blocking": arch.core.mvm_blocking, "stats": o.stats,
            "outputs_f32_bits": outputs, "dumped_core": [busiest.0, busiest.1], "core_regs_fnv": h,
        });
        println!("{v}");
        return;
    }
    let per = (cpu() - c0) / reps.max(1) as f64 / 1e9;
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
