//! The libraries against their published figures (docs/cost.md "Validation"), and the
//! scaling laws' properties.

use crate::{Geometry, Kind, Level, Model, bits_law, load, preset};

fn model(name: &str) -> Model {
    let lib = preset(name).unwrap().unwrap();
    Model::new(&lib, &Geometry::of_design(&lib))
}

fn within(got: f64, want: f64, tol: f64, what: &str) {
    let err = (got - want).abs() / want;
    assert!(
        err <= tol,
        "{what}: pimkit {got:.5}, published {want:.5} ({:.2}% off, allowed {:.0}%)",
        100.0 * err,
        100.0 * tol
    );
}

/// ISAAC Table I sums and Table IV's ISAAC-CE efficiency, within 2 % (they are table sums).
#[test]
fn isaac_table_sums_and_peak_efficiency() {
    let m = model("isaac");
    let (ima_mw, ima_mm2) = m.level_figures(Level::Pe);
    within(12.0 * ima_mw, 289.0, 0.02, "12 IMAs, mW");
    within(12.0 * ima_mm2, 0.157, 0.02, "12 IMAs, mm²");
    let (tile_mw, tile_mm2) = m.level_figures(Level::Tile);
    within(tile_mw, 330.0, 0.02, "tile, mW");
    within(tile_mm2, 0.372, 0.02, "tile, mm²");
    let chip = m.chip();
    within(chip.power_w, 65.8, 0.02, "chip, W");
    within(chip.area_mm2, 85.4, 0.02, "chip, mm²");
    let adc = m.components.iter().find(|c| c.kind == Kind::Adc).unwrap();
    let adc_mw = adc.energy_pj * adc.peak_ops_per_ns * 12.0;
    within(adc_mw / tile_mw, 0.58, 0.02, "ADC share of tile power");
    within(
        adc.area_mm2 * 12.0 / tile_mm2,
        0.31,
        0.02,
        "ADC share of tile area",
    );
    within(
        chip.tops_per_mm2 * 1e3,
        478.95,
        0.02,
        "ISAAC-CE GOPS/(s mm²)",
    );
    within(chip.tops_per_w * 1e3, 627.5, 0.02, "ISAAC-CE GOPS/W");
}

#[test]
fn every_preset_loads_and_cites_every_value() {
    for (name, _, _) in crate::PRESETS {
        let lib = preset(name).unwrap().unwrap();
        assert!(
            lib.components.values().all(|c| !c.source.is_empty()),
            "{name}"
        );
        let chip = Model::new(&lib, &Geometry::of_design(&lib)).chip();
        assert!(
            chip.power_w > 0.0 && chip.area_mm2 > 0.0 && chip.peak_tops > 0.0,
            "{name}"
        );
    }
}

#[test]
fn adc_cost_follows_walden_and_passes_through_the_anchor() {
    let lib = preset("isaac").unwrap().unwrap();
    let at = |bits: u32| {
        let mut g = Geometry::of_design(&lib);
        g.adc_bits = bits;
        let m = Model::new(&lib, &g);
        let a = m.components.iter().find(|c| c.kind == Kind::Adc).unwrap();
        (a.energy_pj, a.area_mm2)
    };
    let (e8, a8) = at(8);
    within(
        e8,
        2.0 / 1.28,
        1e-9,
        "8-bit ADC pJ per conversion (16 mW / 8 / 1.28 GS/s)",
    );
    within(a8, 0.0096, 1e-9, "8-bit ADC area");
    let mut last = 0.0;
    for b in 1..=12 {
        let (e, _) = at(b);
        assert!(e > last, "monotone in bits");
        within(e, e8 * bits_law(b, 8), 1e-9, "2^bits");
        last = e;
    }
}

#[test]
fn a_file_overlays_its_base_preset_and_bad_values_name_file_field_and_range() {
    let dir = std::env::temp_dir().join(format!("pimkit-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("mine.toml");
    std::fs::write(&f, "base = \"isaac\"\n[components.adc]\npower_mw = 8.0\n").unwrap();
    let lib = load(f.to_str().unwrap()).unwrap();
    assert_eq!(lib.components["adc"].power_mw, 8.0);
    assert_eq!(lib.components["dac"].power_mw, 4.0);
    std::fs::write(&f, "[components.adc]\npower_mw = -1.0\n").unwrap();
    let e = load(f.to_str().unwrap()).unwrap_err().to_string();
    assert!(
        e.contains("mine.toml") && e.contains("components.adc.power_mw = -1"),
        "{e}"
    );
    assert!(e.contains("use a number in"), "{e}");
    std::fs::write(&f, "base = \"nope\"\n").unwrap();
    let e = load(f.to_str().unwrap()).unwrap_err().to_string();
    assert!(
        e.contains("base = nope") && e.contains("isaac, puma, neurosim"),
        "{e}"
    );
    std::fs::write(&f, "[components.adc]\npower = 1\n").unwrap();
    let e = load(f.to_str().unwrap()).unwrap_err().to_string();
    assert!(
        e.contains("components.adc") && e.contains("unknown field"),
        "{e}"
    );
    let e = load("no-such-preset").unwrap_err().to_string();
    assert!(e.contains("no such file and no such preset"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// PUMA's peak figures (ASPLOS 2019: 577 GOPS/s/mm², 837 GOPS/s/W, a 90 mm² node storing
/// 69 MB) from the simulator's paper-era constants. Weights and area efficiency agree; the
/// power efficiency does not (docs/cost.md "PUMA": the paper's table is not public and its
/// 52.3 TOPS peak is not the 16 bit-serial 100 ns steps its simulator times).
#[test]
fn puma_node_against_the_paper() {
    let m = model("puma");
    let chip = m.chip();
    assert_eq!(chip.weight_bytes, 72_351_744.0, "69 MiB of 16-bit weights");
    within(chip.tops_per_mm2 * 1e3, 577.0, 0.10, "PUMA GOPS/(s mm²)");
    // Not within 10 %: pimkit 659 GOPS/W. Held at pimkit's value so that a change shows.
    within(
        chip.tops_per_w * 1e3,
        659.2,
        0.01,
        "pimkit's PUMA GOPS/W (paper: 837)",
    );
    within(
        chip.peak_tops,
        45.22,
        0.01,
        "peak TOPS: 2208 MVMUs x 32768 ops / 1.6 µs",
    );
}
