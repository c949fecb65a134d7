//! Roofline characterization: sweeps produce consistent points, roofs follow eq. (2),
//! the report section and the CSV/SVG files are written.

use pimkit_vpu::Arch;
use pimkit_vpu::roofline::{Scale, Sweep, run_sweep, table3};

#[test]
fn quick_sweeps_are_consistent() {
    let a = Arch::default();
    let mut all = vec![];
    for s in Sweep::ALL {
        let pts = run_sweep(&a, s, Scale { quick: true }).unwrap();
        assert!(!pts.is_empty(), "{s:?}");
        for p in &pts {
            assert!(
                p.ops > 0 && p.cycles > 0 && p.throughput > 0.0 && p.intensity > 0.0,
                "{p:?}"
            );
            // Nothing beats its compute roof.
            assert!(p.throughput <= p.roof * 1.0001, "{p:?}");
            if p.dataflow != "host" {
                assert!(
                    p.roof > 4.0 * p.vpus as f64 * p.lanes as f64 / 8.0 * 0.9,
                    "{p:?}"
                );
            }
        }
        all.extend(pts);
    }
    // Same operator and shape: identical N_op across dataflows (quinn §3.3).
    let mm: Vec<_> = all
        .iter()
        .filter(|p| p.sweep == "matmul" && p.label == "MM64")
        .collect();
    assert!(mm.len() >= 3 && mm.iter().all(|p| p.ops == mm[0].ops));
    // OS does not spill: never more off-chip traffic than IS/WS at MM64.
    let os = mm.iter().find(|p| p.dataflow == "OS").unwrap();
    assert!(mm.iter().all(|p| os.offchip_bytes <= p.offchip_bytes));
    // More VPUs never lower the SIMD roof; Table 3 has the five kernels.
    let t = table3(&all);
    assert_eq!(t.rows.len(), 5);
    let dir = tempfile::tempdir().unwrap();
    let files = pimkit_vpu::report::write_roofline_dir(&all, dir.path()).unwrap();
    assert!(files.iter().any(|f| f.ends_with("table3.csv")));
    assert_eq!(
        pimkit_vpu::roofline::table4(&all).rows.len(),
        9,
        "3 lane counts x 3 capacities"
    );
    let svg = std::fs::read_to_string(dir.path().join("matmul.svg")).unwrap();
    assert!(svg.starts_with("<svg") || svg.contains("<svg"));
    let sec = pimkit_vpu::report::report_section(&a, &all, &[]);
    assert_eq!(sec.id, "vpu");
    assert!(sec.json["points"].as_array().unwrap().len() == all.len());
}

#[test]
fn unknown_sweep_names_the_valid_ones() {
    let e = Sweep::parse("conv3d").unwrap_err().to_string();
    assert!(e.contains("matmul") && e.contains("depthwise"), "{e}");
}

#[test]
fn build_section_with_a_small_quantized_model() {
    let g = pimkit_zoo::build_spec("qlinear_matmul?m=8&k=16&n=24").unwrap();
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let sec =
        pimkit_vpu::report::build_section(&Arch::default().with(2, 1.2), Some((&g, &inputs)), true)
            .unwrap();
    // Table 5 equivalent: pimkit's method at 1, 2 (the arch) and 4 VPUs, the paper's at 1 and 4.
    let nets = sec.json["networks"].as_array().unwrap();
    let runs: Vec<(String, u64)> = nets
        .iter()
        .map(|r| {
            (
                r["method"].as_str().unwrap().to_string(),
                r["vpus"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            ("pimkit", 1),
            ("pimkit", 2),
            ("pimkit", 4),
            ("paper", 1),
            ("paper", 4)
        ]
        .map(|(m, v)| (m.to_string(), v))
    );
    assert!(sec.blocks.len() > 10);
}

#[test]
fn a_failing_sweep_point_is_named() {
    // 16-element registers hold no 5x5 filter: the error says which point of the sweep.
    let mut a = Arch::default();
    a.vpu.vrf_bytes = 2048;
    let err = run_sweep(&a, Sweep::Conv2d, Scale { quick: true }).unwrap_err();
    let e = err.to_string();
    assert!(
        e.contains("conv2d sweep, point c3/k5") && e.contains("VRF is too small"),
        "{e}"
    );
    // The kernel's own error stays matchable for library callers.
    assert!(
        matches!(&err, pimkit_vpu::VpuError::AtPoint { source, .. }
            if matches!(**source, pimkit_vpu::VpuError::VrfTooSmall { .. })),
        "{err:?}"
    );
}
