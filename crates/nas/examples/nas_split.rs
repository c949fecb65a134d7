//! Time a 50 x 10 search with the proxy and with a (mapping-only) table evaluator.
use pimkit_nas::*;
fn main() -> anyhow::Result<()> {
    let space = Space::load("mbv3-small")?;
    let dir = tempfile::tempdir()?;
    let p = dir.path().join("t.csv");
    std::fs::write(&p, "config,accuracy\nbase,0.9\n")?;
    for acc in [AccuracySpec::Table(p.clone()), AccuracySpec::Proxy] {
        let cfg = SearchConfig {
            accuracy: acc.clone(),
            nsga: NsgaConfig {
                gens: 10,
                ..NsgaConfig::default()
            },
            ..SearchConfig::rnc_default(space.clone())
        };
        let t = std::time::Instant::now();
        let r = search(&cfg, &mut |_| {})?;
        println!(
            "{acc:?}: {} unique in {:?}",
            r.unique_evaluations,
            t.elapsed()
        );
    }
    Ok(())
}
