//! Prints the figures quoted in docs/xbar.md. Run:
//! `cargo test -p pimkit-xbar --release --test figures -- --ignored --nocapture`

use pimkit_xbar::*;

fn graph(name: &str) -> pimkit_ir::Graph {
    pimkit_zoo::build(name, &[("weights".into(), "none".into())]).unwrap()
}

#[test]
#[ignore]
fn figures() {
    let arch = Arch::default();
    let models = [
        "rnc_resnet18",
        "rnc_squeezenet1_1",
        "rnc_mobilenet_v3_small",
        "mobilenet_v3_small",
    ];
    println!(
        "| model | mode | ISAAC-like xbars | util | packed xbars | lower bound | util | saving |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for name in models {
        let g = graph(name);
        for mode in [Mode::Pimkit, Mode::RncCompat] {
            let o = MapOptions {
                mode,
                duplicate: false,
                ..MapOptions::from_arch(&arch)
            };
            let r = map_graph(&g, &arch, &o).unwrap();
            let b = r.baseline.as_ref().unwrap();
            println!(
                "| {name} | {mode:?} | {} | {:.1}% | {} | {} | {:.1}% | {:.1}% |",
                b.crossbars,
                100.0 * b.utilization,
                r.crossbars_used,
                r.lower_bound,
                100.0 * r.utilization,
                100.0 * (1.0 - r.crossbars_used as f64 / b.crossbars as f64)
            );
        }
    }
    println!(
        "\n| model | mode | budget | xbars used / budget | util (used) | period | speedup (8 samples) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for name in models {
        let g = graph(name);
        for mode in [Mode::Pimkit, Mode::RncCompat] {
            for b in [0.8, 1.0, 1.2, 1.8] {
                let o = MapOptions {
                    mode,
                    budget: Budget::Relative(b),
                    ..MapOptions::from_arch(&arch)
                };
                let r = map_graph(&g, &arch, &o).unwrap();
                println!(
                    "| {name} | {mode:?} | {b}x | {}{} / {} | {:.1}% | {} | {} |",
                    r.crossbars_used,
                    if r.fits { "" } else { " (does not fit)" },
                    r.crossbars_budget,
                    100.0 * r.utilization,
                    r.duplication.period_cycles,
                    if r.fits {
                        format!("{:.2}x", r.speedup.unwrap())
                    } else {
                        "-".into()
                    }
                );
            }
        }
    }
    println!(
        "\nS_DW (rnc_mobilenet_v3_small, pimkit, packing only at 1x, speed relative to S_DW=1):"
    );
    let ex = extract(&graph("rnc_mobilenet_v3_small")).unwrap();
    for dup in [false, true] {
        let base = MapOptions {
            duplicate: dup,
            ..MapOptions::from_arch(&arch)
        };
        let spec = sweep::SweepSpec {
            budgets: vec![1.0],
            sdws: vec![1, 5, 10, 20],
            samples: vec![1, 8, 128, 512, 1024],
        };
        let s = sweep::sweep("rnc_mbv3", &ex.layers, &arch, &base, &spec).unwrap();
        println!("duplication {dup}:\n| S_DW | boxes xbars | 1 | 8 | 128 | 512 | 1024 |");
        for sdw in [1, 5, 10, 20] {
            let mut line = format!(
                "| {sdw} | {} |",
                s.rows.iter().find(|r| r.sdw == sdw).unwrap().crossbars_used
            );
            for k in [1, 8, 128, 512, 1024] {
                let r0 = s
                    .rows
                    .iter()
                    .find(|r| r.sdw == 1 && r.samples == k)
                    .unwrap();
                let r = s
                    .rows
                    .iter()
                    .find(|r| r.sdw == sdw && r.samples == k)
                    .unwrap();
                line += &format!(
                    " {:.2} |",
                    r0.latency_cycles as f64 / r.latency_cycles as f64
                );
            }
            println!("{line}");
        }
    }
}
