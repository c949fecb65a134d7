//! Time the per-candidate work: `cargo run -p pimkit-nas --example nas_timing --release`.
use pimkit_nas::*;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let space = Space::load("mbv3-small")?;
    let cfg = SearchConfig::rnc_default(space.clone());
    for c in [
        space.smallest(),
        "k5e4-k3e6-k5e4_k5e4-k3e6-k7e3_k5e4-k3e6-k7e4_k3e4-k5e6-k7e4".parse()?,
        space.largest(),
    ] {
        let t = Instant::now();
        let g = build_shape_only(&space, &c)?;
        let t1 = t.elapsed();
        let ex = pimkit_xbar::extract(&g)?;
        let t2 = t.elapsed();
        let mut o = pimkit_xbar::MapOptions::from_arch(&cfg.arch);
        o.budget = pimkit_xbar::Budget::Crossbars(210);
        o.baseline = false;
        let r = pimkit_xbar::map_layers("x", &ex.layers, &ex.skipped, &cfg.arch, &o)?;
        let t3 = t.elapsed();
        let net = SuperNet::new(&space, 1)?;
        let t4 = t.elapsed();
        let res: usize = std::env::var("RES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(32);
        let batch: usize = std::env::var("BATCH")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(8);
        let gw = pimkit_nas::build::build_weighted(&space, &c, &net, res, batch, false)?;
        let t4b = t.elapsed();
        let p = pimkit_nas::proxy::naswot_graph(&gw, batch, 1)?;
        let t5 = t.elapsed();
        println!("  weights build {:?} run {:?}", t4b - t4, t5 - t4b);
        println!(
            "{c}: layers {} isaac {} fits {} used {} lat {} | build {:?} extract {:?} map {:?} supernet {:?} proxy {:?} = {p:.2}",
            ex.layers.len(),
            pimkit_xbar::isaac_crossbars(&ex.layers, &cfg.arch, o.mode),
            r.fits,
            r.crossbars_used,
            r.latency_cycles,
            t1,
            t2 - t1,
            t3 - t2,
            t4 - t3,
            t5 - t4
        );
    }
    Ok(())
}
