//! Where the NAS evaluation loop spends its time, phase by phase, over random candidates
//! evaluated one at a time: `cargo run --release -p pimkit-nas --example nas_profile -- [N]`.
use pimkit_ir::Op;
use pimkit_nas::*;
use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let space = Space::load("mbv3-small")?;
    let cfg = SearchConfig::rnc_default(space.clone());
    let net = SuperNet::new(&space, 1)?;
    let card = space.cardinalities();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
    let mut t = BTreeMap::<&str, f64>::new();
    let mut ops = BTreeMap::<String, f64>::new();
    for _ in 0..n {
        let mut genome: Vec<u8> = card.iter().map(|&c| rng.random_range(0..c) as u8).collect();
        space.canonicalize(&mut genome);
        let c = space.decode(&genome)?;
        let s = Instant::now();
        let g = build_shape_only(&space, &c)?;
        *t.entry("1 build shape-only").or_default() += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let ex = pimkit_xbar::extract(&g)?;
        *t.entry("2 extract").or_default() += s.elapsed().as_secs_f64();
        let mut o = pimkit_xbar::MapOptions::from_arch(&cfg.arch);
        o.budget = pimkit_xbar::Budget::Crossbars(210);
        o.baseline = false;
        let s = Instant::now();
        let pieces = pimkit_xbar::partition_all(&ex.layers, &cfg.arch, o.mode, o.depthwise, o.sdw);
        std::hint::black_box(&pieces);
        *t.entry("3a partition_all").or_default() += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let _ = pimkit_xbar::isaac_crossbars(&ex.layers, &cfg.arch, o.mode);
        *t.entry("3b isaac_crossbars").or_default() += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let m = pimkit_xbar::compile(&ex.layers, &cfg.arch, &o)?;
        *t.entry("3 compile (partition+dup+pack)").or_default() += s.elapsed().as_secs_f64();
        *t.entry("3c packings tried").or_default() += m.duplication.packings_tried as f64 / 1e3;
        let s = Instant::now();
        let _ = pimkit_xbar::summarize("x", &ex.layers, &ex.skipped, &m, &cfg.arch, &o, 8, None);
        *t.entry("4 summarize (simulate)").or_default() += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let gw = pimkit_nas::build::build_weighted(&space, &c, &net, 32, 4, false)?;
        *t.entry("5 build weighted").or_default() += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let inputs = pimkit_interp::random_inputs(&gw, 1);
        let mut last = Instant::now();
        pimkit_interp::run_observed(&gw, &inputs, &mut |id, _| {
            let node = gw.node(id);
            let key = match &node.op {
                Op::Conv(a) if a.group > 1 => format!("Conv dw k{}", a.kernel[0]),
                Op::Conv(a) => format!("Conv k{}", a.kernel[0]),
                o => format!("{:?}", o).chars().take(24).collect(),
            };
            let dt = last.elapsed().as_secs_f64();
            if let Op::Conv(a) = &node.op {
                let w = gw.ty(node.inputs[1].unwrap()).shape.clone();
                let o = gw.ty(node.outputs[0]).numel() as f64;
                let _ = a;
                *ops.entry(format!("MMAC {key}")).or_default() +=
                    o * (w[1] * w[2] * w[3]) as f64 * 1e-9;
            }
            *ops.entry(key).or_default() += dt;
            let part: String = node.name.split('.').take(2).collect::<Vec<_>>().join(".");
            let part = if part.starts_with("stages") {
                part
            } else {
                node.name.split('.').next().unwrap_or("").to_string()
            };
            *ops.entry(format!("part {part}")).or_default() += dt;
            last = Instant::now();
        })?;
        *t.entry("6 interpreter run").or_default() += s.elapsed().as_secs_f64();
        let s = Instant::now();
        let _ = pimkit_nas::proxy::naswot_graph(&gw, 4, 1)?;
        *t.entry("7 naswot_graph (run + kernel)").or_default() += s.elapsed().as_secs_f64();
    }
    println!("{n} random candidates, ms per candidate:");
    for (k, v) in &t {
        println!("  {k:32} {:8.3}", v * 1e3 / n as f64);
    }
    println!("interpreter by op (ms per candidate):");
    let mut v: Vec<_> = ops.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (k, s) in v {
        println!("  {k:32} {:8.3}", s * 1e3 / n as f64);
    }
    Ok(())
}
