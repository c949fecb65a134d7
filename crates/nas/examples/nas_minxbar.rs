//! Minimal crossbars (no duplication) of the smallest and largest subnets and the base.
use pimkit_nas::*;
fn main() -> anyhow::Result<()> {
    let space = Space::load("mbv3-small")?;
    let mut arch = pimkit_xbar::Arch::default();
    arch.packing.restarts = 1;
    let mut o = pimkit_xbar::MapOptions::from_arch(&arch);
    o.budget = pimkit_xbar::Budget::Crossbars(100000);
    o.duplicate = false;
    o.baseline = false;
    for c in [space.smallest(), space.largest()] {
        let g = build_shape_only(&space, &c)?;
        let ex = pimkit_xbar::extract(&g)?;
        let r = pimkit_xbar::map_layers("x", &ex.layers, &ex.skipped, &arch, &o)?;
        println!("{c}: min used {} lb {}", r.crossbars_used, r.lower_bound);
    }
    let g = pimkit_zoo::build(
        "rnc_mobilenet_v3_small",
        &[("weights".into(), "none".into())],
    )?;
    let ex = pimkit_xbar::extract(&g)?;
    let r = pimkit_xbar::map_layers("x", &ex.layers, &ex.skipped, &arch, &o)?;
    println!("base: min used {} lb {}", r.crossbars_used, r.lower_bound);
    Ok(())
}
