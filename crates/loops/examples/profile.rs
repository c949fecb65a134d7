//! `cargo run --release -p pimkit-loops --example profile -- NAME [k=v ...] [runs=N]`:
//! lower a zoo entry, compile its C, run the timing run and print the figures the docs
//! quote (lowering, compile and timing-run wall times, per-nest medians).
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args
        .first()
        .ok_or("usage: profile NAME [k=v ...] [runs=N]")?;
    let mut runs = 1;
    let mut params = vec![];
    for a in &args[1..] {
        if let Some((k, v)) = a.split_once('=') {
            if k == "runs" {
                runs = v.parse()?;
            } else {
                params.push((k.to_string(), v.to_string()));
            }
        }
    }
    let t = Instant::now();
    let g = pimkit_zoo::build(name, &params)?;
    let t_build = t.elapsed();
    let t = Instant::now();
    let p = pimkit_loops::lower(&g)?;
    let t_lower = t.elapsed();
    let opts = pimkit_loops::ProfileOptions {
        runs,
        ..Default::default()
    };
    let t = Instant::now();
    let prof = pimkit_loops::profile_with(&p, &opts)?;
    let t_prof = t.elapsed();
    for (n, r) in p.nests.iter().zip(&prof.nests) {
        println!(
            "{:>4} {:<12} {:<28} {:<12} {:>12.1} us",
            n.id,
            n.op,
            n.node,
            n.label,
            r.t_cpu_ns / 1e3
        );
    }
    println!(
        "{name}: {} nests; build {:.2} s, lower {:.3} s, profile {:.2} s (compile {:.2} s{}, {} timed run(s) + {} warm-up), program time {:.2} ms",
        p.nests.len(),
        t_build.as_secs_f64(),
        t_lower.as_secs_f64(),
        t_prof.as_secs_f64(),
        prof.compile_ms / 1e3,
        if prof.cached { ", cached" } else { "" },
        prof.runs,
        prof.warmup,
        prof.total_ns / 1e6
    );
    Ok(())
}
