//! The acceptance findings (torch-pim.txt §5.2), checked deterministically: per-nest
//! host times are fixed (tests/data/times.json, recorded with
//! `cargo run -p pimkit-offload --example offload -- NAME fixed times runs=3` on the
//! project's 2-core AMD EPYC KVM guest), the host calibration is the reference one and
//! counters come from the model backend. The live run is `full_size_live` (ignored).

use pimkit_offload::{Analysis, HostCalib, Options, analyze_with_times};

fn times(name: &str) -> Vec<f64> {
    let v: serde_json::Value = serde_json::from_str(include_str!("data/times.json")).unwrap();
    v[name]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn analysis(name: &str) -> Analysis {
    let g = pimkit_zoo::build(name, &[("weights".into(), "none".into())]).unwrap();
    let p = pimkit_loops::lower(&g).unwrap();
    let t = times(name);
    assert_eq!(
        t.len(),
        p.nests.len(),
        "{name}: fixture has one time per nest"
    );
    analyze_with_times(&p, &t, &HostCalib::fixed_reference(), &Options::default())
}

fn offloaded(a: &Analysis) -> usize {
    a.nests.iter().filter(|n| n.offload).count()
}

fn grows(a: &Analysis) -> bool {
    a.cores.windows(2).all(|w| w[1].speedup > w[0].speedup)
}

#[test]
fn streaming_kernels_offload_everything_and_scale_with_cores() {
    for name in ["ew_add", "copying", "scale", "zeroing", "relu"] {
        let a = analysis(name);
        assert_eq!(offloaded(&a), a.nests.len(), "{name}: every nest offloaded");
        assert!(
            grows(&a),
            "{name}: speedup grows with cores: {:?}",
            a.cores.iter().map(|c| c.speedup).collect::<Vec<_>>()
        );
        // Deviation (docs/offload.md): on this host the C streams near memory bandwidth, so
        // T_copy (eq. 8 at that bandwidth) is close to T_cpu; >1 is reached at 128 cores.
        assert!(
            a.cores.last().unwrap().speedup > 1.0,
            "{name}: faster than the host at 128 cores"
        );
        for n in &a.nests {
            assert_eq!(n.counter_source, "model");
        }
    }
}

#[test]
fn transcendental_kernels_offload_nothing() {
    for name in ["silu", "gelu", "tanh"] {
        let a = analysis(name);
        // The transcendental nest itself stays on the host (fails C3 and C4). Deviation:
        // pimkit's silu lowers to two nests (sigmoid, then a streaming x * s), and the
        // streaming multiply is offloaded like any other streaming nest.
        for n in &a.nests {
            if n.op != "Mul" {
                assert!(
                    !n.offload && n.c1 && n.c2 && !n.c3 && !n.c4,
                    "{name}: nest {} {}",
                    n.id,
                    n.label
                );
            }
        }
        assert!(
            a.cores.iter().all(|c| c.speedup < 1.1),
            "{name}: no real gain"
        );
    }
}

#[test]
fn matmul_is_rejected_at_stage_two_and_gemv_passes_c3() {
    let a = analysis("matmul");
    let mm = a.nests.iter().find(|n| n.label == "matmul").unwrap();
    assert!(mm.c1 && mm.c2 && !mm.c3 && !mm.c4 && !mm.offload);
    assert_eq!(mm.rejected_at, 2);
    let a = analysis("gemv");
    let mv = a.nests.iter().find(|n| n.label == "matmul").unwrap();
    assert!(
        mv.c1 && mv.c2 && mv.c3 && mv.offload,
        "gemv offloaded via C3"
    );
}

#[test]
fn mac_fill_enters_through_c4() {
    let a = analysis("mac");
    let fill = a.nests.iter().find(|n| n.label.ends_with("init")).unwrap();
    assert!(
        fill.offload && fill.c4 && !fill.c3,
        "the fill nest enters through C4 alone"
    );
}

#[test]
fn softmax_offloads_a_minority_of_its_eight_nests() {
    let a = analysis("softmax");
    assert_eq!(a.nests.len(), 8);
    // The exponential nest dominates and stays on the host; the host keeps most of the
    // time. Deviation: pimkit's softmax and mac init fills are the same [n] fill, so the
    // three init fills enter through C4 here just as mac's does (docs/offload.md).
    let exp = a.nests.iter().find(|n| n.label == "exp").unwrap();
    assert!(!exp.offload && exp.rejected_at == 2);
    assert!(
        a.cores.iter().all(|c| c.captured_fraction < 0.5),
        "minority of the time offloaded"
    );
}

#[test]
fn decode_layers_offload_weight_streaming_gemvs_and_scale() {
    for name in ["gptj_decode", "llama_decode"] {
        let a = analysis(name);
        // Every projection nest reading a big weight is offloaded.
        let gemvs: Vec<_> = a
            .nests
            .iter()
            .filter(|n| n.op == "MatMul" && n.label == "matmul" && n.offcore_read_bytes > 32e6)
            .collect();
        assert!(gemvs.len() >= 4, "{name}: weight-streaming GEMVs found");
        assert!(
            gemvs.iter().all(|n| n.offload && n.c3),
            "{name}: GEMVs offloaded via C3"
        );
        assert!(grows(&a), "{name}: speedup grows from 32 to 128 cores");
        // Deviation: with the eq. (8) bound, > 1 only at 128 cores on this fast host; with
        // exact movement (weights stay resident) from 64 cores (docs/offload.md).
        assert!(
            a.cores.last().unwrap().speedup > 1.0,
            "{name}: > 1 at 128 cores"
        );
        assert!(
            a.cores.last().unwrap().speedup_exact > 1.5,
            "{name}: exact movement"
        );
    }
}

/// Operator granularity moves compute-bound nests (softmax's exp) to PIM with the rest of
/// their operator: T_pim grows. Known deviation: the PIM model charges exp ~10 instructions
/// (no FP emulation), so on attention op granularity ends up slightly *faster* than loop
/// here; the paper reports it slower (docs/offload.md).
#[test]
fn operator_granularity_offloads_compute_bound_nests_on_attention() {
    let a = analysis("attention");
    for c in &a.cores {
        let (op, lp) = (&c.granularity["op"].eval, &c.granularity["loop"].eval);
        assert!(op.t_pim > lp.t_pim, "{} cores", c.cores);
        assert!(op.t_host < lp.t_host, "{} cores", c.cores);
    }
    let exp = a.nests.iter().find(|n| n.label == "exp").unwrap();
    assert!(!exp.offload);
}

#[test]
fn oracle_is_never_worse_and_reports_agreement() {
    for name in ["softmax", "layernorm", "attention", "llama_decode"] {
        let a = analysis(name);
        for c in &a.cores {
            assert!(c.oracle_speedup >= c.speedup - 1e-9, "{name}");
            assert!(c.agreement <= a.nests.len());
        }
    }
}

/// Live: lower, time and count the paper's default sizes on this machine.
/// `cargo test -p pimkit-offload --release --test acceptance -- --ignored`
#[test]
#[ignore]
fn full_size_live() {
    let host = HostCalib::fixed_reference();
    for name in ["ew_add", "gemv", "mac", "llama_decode"] {
        let g = pimkit_zoo::build(name, &[]).unwrap();
        let a = pimkit_offload::run_graph(&g, &host, &Options::default()).unwrap();
        assert!(a.nests.iter().any(|n| n.offload), "{name}");
        let p = a.profiling.unwrap();
        assert!(p.multiple < 3.0, "{name}: profiling cost {}x", p.multiple);
    }
}

/// Print the tables for `PIMKIT_SHOW=name` (debugging aid; ignored).
#[test]
#[ignore]
fn show_fixture() {
    if let Ok(n) = std::env::var("PIMKIT_SHOW") {
        println!("{}", pimkit_offload::report::terminal(&analysis(&n)));
    }
}
