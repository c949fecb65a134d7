//! Small demo search printing the summary: `cargo run -p pimkit-nas --example nas_demo -- POP GENS`.
use pimkit_nas::*;

fn main() -> anyhow::Result<()> {
    let a: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    let (pop, gens) = (
        a.first().copied().unwrap_or(20),
        a.get(1).copied().unwrap_or(10),
    );
    let space = Space::load("mbv3-small")?;
    let mut rs = Vec::new();
    for b in [0.8, 1.0, 1.2] {
        let t = std::time::Instant::now();
        let cfg = SearchConfig {
            budget: pimkit_xbar::Budget::Relative(b),
            nsga: NsgaConfig {
                pop,
                gens,
                ..NsgaConfig::default()
            },
            ..SearchConfig::rnc_default(space.clone())
        };
        let r = search(&cfg, &mut |_| {})?;
        println!(
            "{b}x: {} evals ({} unique, {} feasible) in {:?}",
            r.evaluations,
            r.unique_evaluations,
            r.feasible_evaluations,
            t.elapsed()
        );
        rs.push(r);
    }
    println!("{}", pimkit_nas::front_table(&rs).to_terminal());
    println!("{}", output_summary(&rs));
    for c in [space.smallest(), space.largest()] {
        let cfg = SearchConfig {
            budget: pimkit_xbar::Budget::Relative(1.0),
            ..SearchConfig::rnc_default(space.clone())
        };
        let r = evaluate_config(&cfg, &c)?;
        println!(
            "{}: used {} fits {} speedup {:.2} lat {} acc {:?}",
            r.config, r.crossbars_used, r.fits, r.speedup, r.latency_cycles, r.accuracy
        );
    }
    Ok(())
}

fn output_summary(rs: &[SearchResult]) -> String {
    pimkit_nas::summary_table(rs).to_terminal()
}
