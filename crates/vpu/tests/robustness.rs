//! Robustness of the target description and the cycle accounting: every bad field is
//! rejected with an error that names it, tiny bandwidths cannot overflow the cycle
//! counters, and VPU counts other than the paper's 1, 2, 4 are exact.

use pimkit_vpu::arch::KernelStyle;
use pimkit_vpu::problem::{Gen, ref_conv, ref_matmul};
use pimkit_vpu::run::{ConvKind, MmKernel, run_conv, run_matmul};
use pimkit_vpu::{Arch, Dataflow, Machine, Stats, VpuError};

/// The kernels split their work over any number of VPUs: 3, 5 and 7 are bit-exact too.
#[test]
fn any_vpu_count_is_exact() {
    let mut g = Gen::new(11);
    let mm = g.matmul(9, 37, 700, true, true);
    let vm = g.matmul(1, 90, 1500, true, true);
    let c2 = g.conv(3, 30, 20, 5, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1);
    let c1 = g.conv(12, 1, 900, 13, (1, 3), (1, 1), [0, 4, 0, 0], (1, 2), 1);
    let dw = g.conv(40, 17, 17, 40, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), 40);
    for vpus in [3, 5, 7, 64] {
        for style in [KernelStyle::Pimkit, KernelStyle::Paper] {
            let mut a = Arch::default().with(vpus, 0.8);
            a.kernels = style;
            for df in Dataflow::ALL {
                let (got, _) = run_matmul(&a, &mm, MmKernel::Mm(df)).unwrap();
                assert_eq!(got, ref_matmul(&mm), "MM {df:?} vpus={vpus} {style:?}");
                for (kind, p) in [
                    (ConvKind::Conv2d, &c2),
                    (ConvKind::Conv1d, &c1),
                    (ConvKind::Depthwise, &dw),
                ] {
                    let (got, st) = run_conv(&a, p, kind, df).unwrap();
                    assert_eq!(got, ref_conv(p), "{kind:?} {df:?} vpus={vpus} {style:?}");
                    assert_eq!(
                        st.cycles,
                        st.compute_cycles + st.dma_stall_cycles + st.host_cycles
                    );
                }
            }
            let (got, _) = run_matmul(&a, &vm, MmKernel::Vm).unwrap();
            assert_eq!(got, ref_matmul(&vm), "VM vpus={vpus} {style:?}");
        }
    }
}

/// The same network runs bit-exact on 3 VPUs (the CLI accepts 1..=64).
#[test]
fn network_on_three_vpus_is_exact() {
    use pimkit_vpu::network::{NetOptions, run_network};
    let g = pimkit_zoo::build_spec("qlinear_conv?c=4&k=8&h=8&w=8").unwrap();
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let want = pimkit_interp::with_exact_products(|| pimkit_interp::run(&g, &inputs)).unwrap();
    let r = run_network(
        &g,
        &inputs,
        &Arch::default().with(3, 1.2),
        &NetOptions::default(),
    )
    .unwrap();
    assert_eq!(r.outputs, want);
    assert!(r.kernel_cycles > 0);
}

// ------------------------------------------------------------------ arch validation

/// A TOML document setting one (dotted) field.
fn toml_with(field: &str, value: &str) -> String {
    match field.rsplit_once('.') {
        Some((section, key)) => format!("[{section}]\n{key} = {value}\n"),
        None => format!("{field} = {value}\n"),
    }
}

fn assert_rejected(field: &str, value: &str) {
    let text = toml_with(field, value);
    let e = match Arch::from_toml(&text) {
        Ok(a) => panic!("{field} = {value} was accepted: {a:?}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    assert!(
        matches!(&e, VpuError::ArchFile(a) if a.field.as_deref() == Some(field)),
        "{field} = {value}: the error must name the field: {msg}"
    );
    assert!(
        msg.contains("use "),
        "{field} = {value}: no allowed range in {msg}"
    );
}

fn assert_accepted(field: &str, value: &str) {
    if let Err(e) = Arch::from_toml(&toml_with(field, value)) {
        panic!("{field} = {value} was rejected: {e}");
    }
}

/// Every real-valued field: NaN, infinities, negatives and huge values are rejected with
/// an error naming the field; zero only where it is meaningful (a power, a share, a free
/// zero-point subtraction), never for a cycle cost or a rate.
#[test]
fn every_real_field_is_range_checked() {
    let zero_is_bad = [
        "clock_mhz",
        "vpu.cycles.mac",
        "vpu.cycles.mul",
        "vpu.cycles.add",
        "vpu.cycles.shift",
        "vpu.cycles.minmax",
        "vpu.cycles.mv",
        "vpu.cycles.slide",
        "vpu.cycles.mv_x_s",
        "dma.bytes_per_cycle",
        "memory.bandwidth",
        "host.mac_cycles",
        "host.dw_mac_cycles",
        "host.requant_cycles",
        "host.eltwise_cycles",
        "host.copy_cycles",
    ];
    let zero_is_ok = [
        "host.zp_cycles",
        "power.vpu_dynamic_w",
        "power.host_dynamic_w",
        "power.lane_share",
        "power.cache_share",
    ];
    for f in zero_is_bad.iter().chain(&zero_is_ok) {
        for v in ["-1.0", "-1", "nan", "inf", "-inf", "1e30", "1e19", "-0.001"] {
            assert_rejected(f, v);
        }
    }
    for f in zero_is_bad {
        assert_rejected(f, "0.0");
        assert_rejected(f, "0");
    }
    for f in zero_is_ok {
        assert_accepted(f, "0.0");
    }
    // Shares are fractions.
    assert_rejected("power.lane_share", "1.5");
    assert_accepted("power.cache_share", "1.0");
    // The bounds themselves are allowed.
    assert_accepted("vpu.cycles.mac", "1e6");
    assert_accepted("memory.bandwidth", "0.001");
    assert_accepted("host.mac_cycles", "0.25");
}

/// Every integer field: zero where it makes no sense, and values so large that they
/// would overflow the cycle arithmetic, allocate absurd memory or make no hardware sense.
#[test]
fn every_integer_field_is_range_checked() {
    let huge = "99999999999999";
    for (f, bad) in [
        ("vpus", &["0", "65", huge][..]),
        ("vpu.vrf_bytes", &["0", "100", "8589934592", huge]),
        ("vpu.vregs", &["0", "31", "1024", huge]),
        ("vpu.lanes", &["0", "1025", huge]),
        ("vpu.sew", &["0", "7", "8", "16", "64"]),
        ("vpu.startup_cycles", &["1000001", huge]),
        ("vpu.queue_depth", &["0", huge]),
        ("vpu.requant.mul", &["1001", "4294967295"]),
        ("vpu.requant.add", &["4294967295"]),
        ("vpu.requant.shift", &["4294967295"]),
        ("vpu.requant.minmax", &["4294967295"]),
        ("dma.program_cycles", &[huge]),
        ("dma.setup_cycles", &[huge]),
        ("cache.size_bytes", &["0", "1000", "1099511627776", huge]),
        ("cache.ways", &["0", "1099511627776", huge]),
        ("cache.line_bytes", &["0", "48", "1099511627776", huge]),
        ("memory.latency_cycles", &[huge]),
        ("host.issue_cycles", &["0", huge]),
        ("host.loop_cycles", &[huge]),
        ("host.scalar_step_cycles", &[huge]),
    ] {
        for v in bad {
            assert_rejected(f, v);
        }
    }
    // Zero is a meaningful what-if for fixed overheads and latencies.
    for f in [
        "vpu.startup_cycles",
        "dma.program_cycles",
        "dma.setup_cycles",
        "memory.latency_cycles",
        "host.loop_cycles",
        "host.scalar_step_cycles",
        "vpu.requant.mul",
    ] {
        assert_accepted(f, "0");
    }
    assert_accepted("vpus", "64");
    assert_accepted("vpus", "3");
    assert_accepted("vpu.lanes", "1024");
    // An all-zero requantization sequence is rejected as a whole.
    let e =
        Arch::from_toml("[vpu.requant]\nmul = 0\nadd = 0\nshift = 0\nminmax = 0\n").unwrap_err();
    assert!(e.to_string().contains("vpu.requant"), "{e}");
}

/// The error text carries the bad value and the allowed range.
#[test]
fn errors_show_value_and_range() {
    let e = Arch::from_toml("[host]\nmac_cycles = -1\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("host.mac_cycles") && e.contains("-1") && e.contains("(0, 1000000]"),
        "{e}"
    );
    let e = Arch::from_toml("[vpu]\nlanes = 99999999999999\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("vpu.lanes") && e.contains("99999999999999") && e.contains("1..=1024"),
        "{e}"
    );
    let e = Arch::from_toml("[power]\nvpu_dynamic_w = nan\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("power.vpu_dynamic_w") && e.contains("NaN"),
        "{e}"
    );
}

// ------------------------------------------------------------------ cycle accounting

#[test]
fn tiny_bandwidth_is_rejected() {
    use pimkit_vpu::arch::check_bandwidth;
    for b in [1e-20, 1e-15, 1e-4, 0.0, -1.2, f64::NAN, f64::INFINITY, 1e7] {
        let e = Arch::default().with(1, b).validate().unwrap_err();
        assert!(
            matches!(
                e,
                VpuError::BadArch {
                    field: "memory.bandwidth",
                    ..
                }
            ),
            "{b}: {e}"
        );
        let msg = check_bandwidth(b).unwrap_err();
        assert!(msg.contains("0.001") && msg.contains("B/cycle"), "{msg}");
        assert!(Machine::new(&Arch::default().with(1, b)).is_err());
    }
    for b in [1e-3, 0.5, 1.2, 1e6] {
        check_bandwidth(b).unwrap();
        Arch::default().with(1, b).validate().unwrap();
    }
}

/// At the extremes the range allows, cycle counts still only grow: nothing wraps or
/// saturates into a smaller (silently wrong) number.
#[test]
fn extreme_valid_settings_do_not_wrap() {
    use pimkit_vpu::scalar::{scalar_conv, scalar_matmul};
    let p = Gen::new(5).conv(4, 8, 8, 8, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1);
    let (_, base) = run_conv(&Arch::default(), &p, ConvKind::Conv2d, Dataflow::Os).unwrap();
    let (_, slow) = run_conv(
        &Arch::default().with(1, pimkit_vpu::arch::MIN_BANDWIDTH),
        &p,
        ConvKind::Conv2d,
        Dataflow::Os,
    )
    .unwrap();
    assert!(
        slow.dma_stall_cycles > 100 * base.dma_stall_cycles.max(1) && slow.cycles > base.cycles,
        "{slow:?} vs {base:?}"
    );
    // Every cost at its maximum, one lane, the lowest bandwidth.
    let mut worst = Arch::default().with(4, pimkit_vpu::arch::MIN_BANDWIDTH);
    let max = pimkit_vpu::arch::MAX_COST;
    worst.vpu.lanes = 1;
    worst.vpu.cycles.mac = max;
    worst.vpu.cycles.add = max;
    worst.vpu.startup_cycles = max as u64;
    worst.memory.latency_cycles = max as u64;
    worst.dma.program_cycles = max as u64;
    worst.host.mac_cycles = max;
    worst.host.requant_cycles = max;
    worst.validate().unwrap();
    let (got, st) = run_conv(&worst, &p, ConvKind::Conv2d, Dataflow::Os).unwrap();
    assert_eq!(got, ref_conv(&p));
    assert!(st.compute_cycles > 1000 * base.compute_cycles, "{st:?}");
    assert_eq!(
        st.cycles,
        st.compute_cycles + st.dma_stall_cycles + st.host_cycles
    );
    // The scalar host: a costlier MAC is never faster (was: NaN / 1e30 -> 56x faster).
    let mm = Gen::new(6).matmul(16, 64, 64, false, true);
    let (_, h0) = scalar_matmul(&Arch::default(), &mm).unwrap();
    let (_, h1) = scalar_matmul(&worst, &mm).unwrap();
    assert!(
        h1.cycles > 1000 * h0.cycles,
        "{} vs {}",
        h1.cycles,
        h0.cycles
    );
    let (_, c0) = scalar_conv(&Arch::default(), &p, ConvKind::Conv2d).unwrap();
    let (_, c1) = scalar_conv(&worst, &p, ConvKind::Conv2d).unwrap();
    assert!(c1.cycles > 1000 * c0.cycles);
}

/// If a cycle count would pass 2^64 it is an error, not a wrapped or saturated number.
#[test]
fn cycle_overflow_is_an_error() {
    let mut m = Machine::new(&Arch::default()).unwrap();
    let s0 = m.counters();
    m.host(u64::MAX - 10);
    assert!(!m.overflowed());
    m.host(100);
    m.finish();
    assert!(m.overflowed());
    let e = m.checked_stats_since(&s0).unwrap_err();
    assert!(matches!(e, VpuError::CycleOverflow), "{e}");
    assert!(e.to_string().contains("64 bits"), "{e}");
    // A saturated f64 -> u64 cast counts as an overflow too.
    let mut m = Machine::new(&Arch::default()).unwrap();
    let s0 = m.counters();
    m.host(1e30 as u64);
    assert!(m.checked_stats_since(&s0).is_err());
    // Stats::add saturates instead of wrapping.
    let mut a = Stats {
        cycles: u64::MAX - 1,
        ..Default::default()
    };
    a.add(&Stats {
        cycles: 5,
        ..Default::default()
    });
    assert_eq!(a.cycles, u64::MAX);
}

// ------------------------------------------------------------------ output paths

#[test]
fn output_path_errors_name_the_path() {
    use pimkit_vpu::report::{create_out_dir, write_file, write_roofline_dir};
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let e = create_out_dir(&file).unwrap_err().to_string();
    assert!(
        e.contains("cannot create output directory") && e.contains("afile"),
        "{e}"
    );
    let e = write_roofline_dir(&[], &file).unwrap_err().to_string();
    assert!(e.contains("afile"), "{e}");
    let sub = file.join("sub");
    let e = create_out_dir(&sub).unwrap_err().to_string();
    assert!(e.contains("afile/sub") || e.contains("afile\\sub"), "{e}");
    let e = write_file(&tmp.path().join("nodir/x.csv"), "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot write") && e.contains("x.csv"), "{e}");
    // A directory that does not exist yet is created.
    create_out_dir(&tmp.path().join("a/b")).unwrap();
    assert!(tmp.path().join("a/b").is_dir());
}

/// `auto`'s trial bound: a trial whose clock has passed a finished trial's time stops at
/// its next DMA; one not yet past it (or equal to it: a tie may still win) runs on.
#[test]
fn trial_bound_stops_only_a_slower_trial() {
    use pimkit_vpu::machine::{Elem, TrialBound, Xfer};
    let mut m = Machine::new(&Arch::default()).unwrap();
    let x = m.put(Elem::U8, &[1, 2, 3, 4]);
    let xfer = Xfer::row(0, 0, 0, m.vlen, x, Elem::U8, 4);
    let b = TrialBound::new(m.now());
    b.finished(100);
    m.set_trial_bound(Some(b.clone()));
    m.host(100);
    m.finish();
    assert!(m.dma_in(&xfer).is_ok(), "equal to the best: still running");
    m.finish();
    assert!(m.finish_time() > 100);
    let e = m.dma_in(&xfer).unwrap_err();
    assert!(matches!(e, VpuError::TrialLost), "{e}");
    // Without the bound the same machine runs on.
    m.set_trial_bound(None);
    assert!(m.dma_in(&xfer).is_ok());
}
