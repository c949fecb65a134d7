//! The in-order PIM cost per iteration (`pimcost`) and eq. (8)'s bandwidth choice.

use pimkit_offload::pimcost::{cycles_per_iter, vector_lanes};
use pimkit_offload::plan::Params;
use pimkit_offload::{HostCalib, PimArch, Thresholds};

fn lowered(name: &str) -> pimkit_loops::Program {
    let g = pimkit_zoo::build(name, &[("weights".into(), "none".into())]).unwrap();
    pimkit_loops::lower(&g).unwrap()
}

#[test]
fn elementwise_add_pays_every_latency() {
    let a = PimArch::default();
    let p = lowered("ew_add");
    let n = &p.nests[0];
    // Two L1 loads, one fp add, one store, loop control: nothing overlaps (window 1); the
    // unit-stride loop runs as 256-bit vectors of 8 fp32 lanes.
    assert_eq!(vector_lanes(&p, n, &a), a.simd_bits as f64 / 32.0);
    let want =
        (2.0 * a.lat_load + a.lat_fadd + a.lat_store + 2.0 * a.lat_int) / vector_lanes(&p, n, &a);
    assert!((cycles_per_iter(&p, n, &a) - want).abs() < 1e-9);
    // A scalar-only PIM core (simd_bits = 32) pays the chain per element.
    let scalar = PimArch {
        simd_bits: 32,
        ..a.clone()
    };
    assert_eq!(vector_lanes(&p, n, &scalar), 1.0);
    assert!((cycles_per_iter(&p, n, &scalar) - want * 8.0).abs() < 1e-9);
}

#[test]
fn reduction_accumulator_is_kept_in_a_register() {
    let a = PimArch::default();
    let p = lowered("gemv");
    let n = p.nests.iter().find(|n| n.label == "matmul").unwrap();
    let k = n
        .dims
        .iter()
        .filter(|d| d.kind == pimkit_loops::DimKind::Reduction)
        .map(|d| d.extent as f64)
        .product::<f64>();
    // An fp reduction along the innermost loop does not vectorize (no reassociation).
    assert_eq!(vector_lanes(&p, n, &a), 1.0);
    // w[i,k] and x[k] per iteration; acc[i] loaded and stored once per inner loop.
    let want = 2.0 * a.lat_load
        + a.lat_fmul
        + a.lat_fadd
        + (a.lat_load + a.lat_store) / k
        + 2.0 * a.lat_int;
    let got = cycles_per_iter(&p, n, &a);
    assert!((got - want).abs() < 1e-9, "{got} vs {want}");
}

#[test]
fn transcendentals_cost_a_dependent_fp_chain() {
    let a = PimArch::default();
    let p = lowered("softmax");
    let exp = p.nests.iter().find(|n| n.label == "exp").unwrap();
    let poly = (a.lat_fadd + a.lat_fmul) / 2.0;
    // expf is a scalar libm call without -ffast-math: no vector lanes.
    assert_eq!(vector_lanes(&p, exp, &a), 1.0);
    // One load, the expansion as a dependent fadd/fmul chain, one store, loop control.
    let want =
        a.lat_load + pimkit_loops::analysis::cost::EXP * poly + a.lat_store + 2.0 * a.lat_int;
    let got = cycles_per_iter(&p, exp, &a);
    assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    // sub's broadcast operand m[i] is invariant along the innermost loop: amortized.
    let sub = p.nests.iter().find(|n| n.label == "sub").unwrap();
    // sub vectorizes (m[i] is a broadcast).
    let lanes = vector_lanes(&p, sub, &a);
    assert_eq!(lanes, 8.0);
    let per_row = cycles_per_iter(&p, sub, &a) * lanes
        - (a.lat_load + a.lat_fadd + a.lat_store + 2.0 * a.lat_int);
    assert!(per_row > 0.0 && per_row < a.lat_load / 100.0, "{per_row}");
}

#[test]
fn equation_8_moves_data_at_the_memory_system_bandwidth() {
    let mut h = HostCalib::fixed_reference();
    let a = PimArch::default();
    let th = Thresholds::new(&h, None, None);
    let p = Params::new(&h, &a, th);
    assert_eq!(p.b_move_gbs, h.b_mem_gbs);
    assert!(h.b_mem_gbs > h.b_read_gbs, "memory system above one thread");
    // θ still scales with the one-thread B_cpu.
    assert!((th.theta_gbs - 0.12 * h.b_read_gbs).abs() < 1e-12);
    // Calibration files without the field fall back to B_cpu.
    h.b_mem_gbs = 0.0;
    assert_eq!(Params::new(&h, &a, th).b_move_gbs, h.b_read_gbs);
    let old = h.to_toml().replace("b_mem_gbs = 0.0\n", "");
    assert!(!old.contains("b_mem_gbs"));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("host.toml");
    std::fs::write(&f, old).unwrap();
    assert_eq!(HostCalib::load(&f).unwrap().b_move_gbs(), h.b_read_gbs);
}

#[test]
fn architecture_fields_out_of_range_are_named() {
    use pimkit_offload::PimArch;
    let base = include_str!("../../../arch/pim-general.toml");
    for (key, bad) in [
        ("f_ghz", "1e30"),
        ("ipc", "nan"),
        ("lat_load", "-1"),
        ("t_sw_ns", "inf"),
        ("l1d_bytes", "99999999999999"),
    ] {
        let text: String = base
            .lines()
            .map(|l| {
                if l.split('=').next().map(str::trim) == Some(key) {
                    format!("{key} = {bad}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert_ne!(text, base, "{key} is in the default file");
        let e = PimArch::from_toml(&text, std::path::Path::new("x.toml"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(key), "{key} = {bad}: {e}");
    }
}
