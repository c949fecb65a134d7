//! Wall time of one whole-network run and its full result as JSON (the outputs as
//! `to_i32_vec`, exact for the quantized models' integer outputs), to compare two builds: `cargo run --release -p pimkit-vpu --example netrun --
//! q_resnet18 [family|os|is|ws] [--threads N]`. Prints the JSON on stdout, the time on
//! stderr.
use pimkit_vpu::Arch;
use pimkit_vpu::network::{DataflowChoice, NetOptions, run_network};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model = args.first().map_or("q_mobilenet_v2", String::as_str);
    let dataflow = args
        .get(1)
        .and_then(|s| DataflowChoice::parse(s))
        .unwrap_or(DataflowChoice::Auto);
    if let Some(i) = args.iter().position(|a| a == "--threads") {
        let n: usize = args[i + 1].parse().expect("--threads N");
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .expect("thread pool");
    }
    let g = pimkit_zoo::build_spec(model).expect("zoo model");
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let t = std::time::Instant::now();
    let opts = NetOptions {
        dataflow,
        ..Default::default()
    };
    let r = run_network(&g, &inputs, &Arch::default(), &opts).expect("run");
    let dt = t.elapsed();
    let outs: Vec<Vec<i32>> = r.outputs.iter().map(|o| o.to_i32_vec()).collect();
    let json = serde_json::json!({ "result": r, "outputs": outs });
    println!("{}", serde_json::to_string_pretty(&json).expect("json"));
    eprintln!("{model}: {:.3} s wall", dt.as_secs_f64());
}
