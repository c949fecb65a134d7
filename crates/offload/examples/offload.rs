//! `cargo run --release -p pimkit-offload --example offload -- NAME [k=v ...] [runs=N] [fixed] [times]`:
//! the offload analysis of a zoo entry (terminal tables). `fixed` uses the reference host
//! values instead of the cached calibration; `times` prints the measured per-nest times
//! as a JSON array (to refresh tests/data/times.json).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args
        .first()
        .ok_or("usage: offload NAME [k=v ...] [runs=N] [fixed] [times]")?;
    if name == "calibrate" {
        println!("{}", pimkit_offload::host::calibrate()?.to_toml());
        return Ok(());
    }
    let mut o = pimkit_offload::Options {
        counters: pimkit_offload::CounterMode::Model,
        ..Default::default()
    };
    let (mut params, mut fixed, mut times) = (vec![], false, false);
    for a in &args[1..] {
        match a.split_once('=') {
            Some(("runs", v)) => o.runs = v.parse()?,
            Some((k, v)) => params.push((k.to_string(), v.to_string())),
            None if a == "fixed" => fixed = true,
            None if a == "times" => times = true,
            None => return Err(format!("unknown argument '{a}'").into()),
        }
    }
    let host = if fixed {
        pimkit_offload::HostCalib::fixed_reference()
    } else {
        pimkit_offload::host::load_or_calibrate(&pimkit_offload::host::default_cache_path(), false)?
    };
    let g = pimkit_zoo::build(name, &params)?;
    let t = std::time::Instant::now();
    let a = pimkit_offload::run_graph(&g, &host, &o)?;
    if times {
        let v: Vec<f64> = a.nests.iter().map(|n| n.t_cpu_ns.round()).collect();
        println!("\"{name}\": {}", serde_json::to_string(&v)?);
    } else {
        print!("{}", pimkit_offload::report::terminal(&a));
        println!("wall {:.2} s", t.elapsed().as_secs_f64());
    }
    Ok(())
}
