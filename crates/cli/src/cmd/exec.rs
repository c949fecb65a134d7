use crate::error::user;
use crate::model::{LoadArgs, bind_inputs, load_model_full, read_inputs};
use pimkit_ir::Graph;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Path to an .onnx file or zoo:NAME[?k=v&...]
    pub model: String,
    /// Input tensor as NAME=FILE.npy (repeatable); a lone input may be given as FILE.npy
    #[arg(long = "input", short = 'i')]
    pub inputs: Vec<String>,
    /// Fill every input not given with deterministic random data from this seed
    #[arg(long)]
    pub random: Option<u64>,
    /// Write each output as DIR/<output name>.npy
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Print the output summary as JSON
    #[arg(long)]
    pub json: bool,
    /// Run the model N times and report the median run time (loading and I/O excluded)
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub runs: usize,
    /// Also print where the time goes (on stderr): per op type and the slowest nodes,
    /// each node's fastest run
    #[arg(long)]
    pub profile: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let given = read_inputs(&a.inputs)?;
    let g = load_model_full(&a.model, &[], &a.load, &given)?;
    let inputs = bind_inputs(&g, given, a.random)?;
    if a.runs == 0 {
        return Err(user("--runs 0: give at least 1"));
    }
    let mut times = Vec::with_capacity(a.runs);
    let mut outs = Vec::new();
    // Fastest time of every node over the runs (the least disturbed by other load).
    let mut node_s = vec![f64::INFINITY; g.nodes.len()];
    let mut cpu_times = Vec::with_capacity(a.runs);
    // Per-node progress on a terminal (a single node may run for minutes on huge inputs).
    let pb = crate::output::progress(g.nodes.len() as u64, "nodes");
    let shown = !pb.is_hidden();
    // One session for every run: constant weights are packed for the GEMM once.
    let session = pimkit_interp::Session::new(&g);
    for _ in 0..a.runs {
        pb.set_position(0);
        let c0 = cpu_time_s();
        let t0 = std::time::Instant::now();
        let run = if a.profile {
            let mut last = std::time::Instant::now();
            session.run_observed(&inputs, &mut |id, _| {
                let now = std::time::Instant::now();
                let s = &mut node_s[id.0 as usize];
                *s = s.min((now - last).as_secs_f64());
                last = now;
            })
        } else if shown {
            session.run_observed(&inputs, &mut |id, _| {
                pb.set_position(id.0 as u64 + 1);
                if let Some(next) = g.nodes.get(id.0 as usize + 1) {
                    pb.set_message(next.name.clone());
                }
            })
        } else {
            session.run(&inputs)
        };
        outs = run.map_err(|e| {
            pb.finish_and_clear();
            user(e)
        })?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        cpu_times.push((cpu_time_s() - c0) * 1e3);
    }
    pb.finish_and_clear();
    let ms = median(&times);
    if a.profile {
        print_profile(&g, &node_s);
    }
    if let Some(dir) = &a.out {
        crate::output::create_out_dir(dir, "--out")?;
    }
    let mut rows = Vec::new();
    let mut table = pimkit_report::Table::new(
        "outputs",
        &["name", "dtype", "shape", "min", "max", "mean", "file"],
    );
    let names: Vec<String> = g.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
    let files = match &a.out {
        Some(dir) => crate::output::write_outputs(dir, &names, &outs)?,
        None => vec![],
    };
    for (k, (name, t)) in names.iter().zip(&outs).enumerate() {
        let file = files
            .get(k)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let (lo, hi, mean) = pimkit_driver::info::summary(t);
        table.push(vec![
            name.clone(),
            t.dtype().to_string(),
            format!("{:?}", t.shape),
            format!("{lo:.6}"),
            format!("{hi:.6}"),
            format!("{mean:.6}"),
            file.clone(),
        ]);
        rows.push(serde_json::json!({"name": name, "dtype": t.dtype().to_string(), "shape": t.shape, "min": lo, "max": hi, "mean": mean, "file": file}));
    }
    if a.json {
        return crate::output::print_json(&serde_json::json!({
            "outputs": rows,
            "time_ms": ms,
            "times_ms": times,
            "cpu_times_ms": cpu_times,
            "threads": pimkit_interp::threads(),
        }));
    }
    print!("{}", table.to_terminal());
    let threads = pimkit_interp::threads();
    let cpu = median(&cpu_times);
    if a.runs == 1 {
        println!("reference interpreter: {ms:.2} ms (CPU time {cpu:.2} ms, {threads} threads)");
    } else {
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "reference interpreter: median {ms:.2} ms of {} runs (min {min:.2} ms; median CPU \
             time {cpu:.2} ms; {threads} threads)",
            a.runs
        );
    }
    Ok(())
}

/// Time per op type and the ten slowest nodes (each node's fastest run), on stderr so
/// that --json stays parseable.
fn print_profile(g: &Graph, node_s: &[f64]) {
    let total: f64 = node_s.iter().sum::<f64>().max(1e-12);
    let mut per_op: HashMap<&str, (usize, f64)> = HashMap::new();
    for (node, &s) in g.nodes.iter().zip(node_s) {
        let e = per_op.entry(node.op.name()).or_default();
        e.0 += 1;
        e.1 += s;
    }
    let mut rows: Vec<_> = per_op.into_iter().collect();
    rows.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
    let mut t = pimkit_report::Table::new("time per op type", &["op", "nodes", "ms", "%"]);
    for (op, (n, s)) in rows {
        t.push(vec![
            op.to_string(),
            n.to_string(),
            format!("{:.3}", s * 1e3),
            format!("{:.1}", 100.0 * s / total),
        ]);
    }
    eprint!("{}", t.to_terminal());
    let mut idx: Vec<usize> = (0..g.nodes.len()).collect();
    idx.sort_by(|&a, &b| node_s[b].total_cmp(&node_s[a]));
    let mut t = pimkit_report::Table::new("slowest nodes", &["node", "op", "ms", "%"]);
    for &i in idx.iter().take(10) {
        t.push(vec![
            g.nodes[i].name.clone(),
            g.nodes[i].op.name().to_string(),
            format!("{:.3}", node_s[i] * 1e3),
            format!("{:.1}", 100.0 * node_s[i] / total),
        ]);
    }
    eprint!("{}", t.to_terminal());
}

/// CPU time of the whole process in seconds (all threads), or 0 where unavailable. On a
/// loaded machine it leaves out the time other processes hold the cores.
fn cpu_time_s() -> f64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec, which ts is.
        if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    0.0
}

/// Median of a non-empty list (mean of the two middle values for an even count).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let h = s.len() / 2;
    if s.len() % 2 == 1 {
        s[h]
    } else {
        (s[h - 1] + s[h]) / 2.0
    }
}
