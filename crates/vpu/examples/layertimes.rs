//! Wall time per node of one whole-network run (`auto`, default threads), to see where a
//! run's time goes: `cargo run --release -p pimkit-vpu --example layertimes -- q_resnet18 [os|is|ws]`.
//! Prints, on stderr, each node over 50 ms and whether its dataflow came from its own
//! trials or from an earlier layer of the same workload (`dataflow_from`).
use pimkit_vpu::Arch;
use pimkit_vpu::network::{NetOptions, run_network_with};

fn main() {
    let model = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "q_resnet18".into());
    let g = pimkit_zoo::build_spec(&model).expect("zoo model");
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let t0 = std::time::Instant::now();
    let mut last = t0.elapsed();
    let mut times: Vec<(String, f64)> = vec![];
    let mut prev = String::from("(reference run)");
    // An optional second argument fixes the dataflow (os, is, ws; default auto).
    let mut opts = NetOptions::default();
    if let Some(d) = std::env::args().nth(2) {
        opts.dataflow = pimkit_vpu::network::DataflowChoice::parse(&d).expect("auto, os, is or ws");
    }
    let r = run_network_with(&g, &inputs, &Arch::default(), &opts, &mut |_, _, name| {
        let e = t0.elapsed();
        times.push((prev.clone(), (e - last).as_secs_f64()));
        last = e;
        prev = name.to_string();
    })
    .expect("run");
    times.push((prev, (t0.elapsed() - last).as_secs_f64()));
    let (mut tried, mut reused) = (0.0, 0.0);
    for (name, t) in &times {
        let layer = r.layers.iter().find(|l| &l.name == name);
        let from = layer.and_then(|l| l.dataflow_from.as_deref());
        match (layer.and_then(|l| l.dataflow), from) {
            (Some(_), Some(_)) => reused += t,
            (Some(_), None) => tried += t,
            _ => {}
        }
        if *t > 0.05 {
            let how = match from {
                Some(f) => format!("dataflow from {f}"),
                None => "own trials".into(),
            };
            eprintln!("{name:34} {t:7.3} s  {how}");
        }
    }
    eprintln!(
        "{model}: {:.3} s; layers with their own trials {tried:.3} s, reusing a choice {reused:.3} s",
        t0.elapsed().as_secs_f64()
    );
}
