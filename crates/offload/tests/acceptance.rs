//! The acceptance findings (torch-pim.txt §5.2), checked deterministically: per-nest
//! host times are fixed (tests/data/times.json, recorded with
//! `cargo run -p pimkit-offload --example offload -- NAME fixed times runs=3`, softmax with
//! runs=9, on the
//! project's 2-core AMD EPYC KVM guest), the host calibration is the reference one and
//! counters come from the model backend. The live run is `full_size_live` (ignored).
//! `silu` (n = 2048, runs=9) was recorded on 2026-12-01 on a later guest of the same kind
//! whose calibration reads 37 GB/s; its decisions do not depend on the times' scale (both
//! nests read from the LLC, so C3 and C4 fail on the footprint model alone). `silu_n4096`
//! is silu at n = 4096, recorded with the others.

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
    analysis_with(name, name, &[])
}

/// Zoo entry `name` without weights (shapes only), with extra parameters.
fn graph(name: &str, params: &[(&str, &str)]) -> pimkit_ir::Graph {
    let mut p: Vec<(String, String)> = vec![("weights".into(), "none".into())];
    p.extend(params.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    pimkit_zoo::build(name, &p).unwrap()
}

/// The analysis of zoo entry `name` with extra parameters, timed by fixture entry `key`.
fn analysis_with(name: &str, key: &str, params: &[(&str, &str)]) -> Analysis {
    let g = graph(name, params);
    let p = pimkit_loops::lower(&g).unwrap();
    let t = times(key);
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
        // Eq. (8) moves data at the host memory system's bandwidth (torch-pim.txt §5.1), so
        // T_copy is ~2% of all-CPU time and PIM wins from 32 cores (ew_add 4.62x / 8.38x /
        // 14.12x; it was 0.93x at 32 cores while eq. 8 used the one-thread B_cpu).
        assert!(
            a.cores[0].speedup > 1.0,
            "{name}: faster than the host at 32 cores: {}",
            a.cores[0].speedup
        );
        for n in &a.nests {
            assert_eq!(n.counter_source, "model");
        }
    }
}

/// torch-pim.txt §5.2 (b): no transcendental nest is offloaded; they pass C1 and C2 but
/// read below θ and issue no non-temporal stores. silu runs at its default n = 2048 (the
/// zoo's parameter doc gives the inference from Table 4), gelu and tanh at 4096.
#[test]
fn transcendental_kernels_offload_nothing() {
    for name in ["silu", "gelu", "tanh"] {
        let a = analysis(name);
        for n in &a.nests {
            assert!(
                !n.offload && n.c1 && n.c2 && !n.c3 && !n.c4,
                "{name}: nest {} {}: {n:?}",
                n.id,
                n.label
            );
        }
        assert!(a.cores.iter().all(|c| (c.speedup - 1.0).abs() < 1e-9));
    }
}

/// The deviation at n = 4096 (docs/offload.md): unfused, as Torch-MLIR lowers it, silu's
/// x * s multiply streams 2 x 64 MiB and passes C3 like ew_add's nest at that size, so
/// silu offloads 1 of 2 nests; the sigmoid stays on the host and keeps most of the time.
/// This is why the paper's silu sizes must lie below 4096.
#[test]
fn silu_at_4096_offloads_its_streaming_multiply_only() {
    let a = analysis_with("silu", "silu_n4096", &[("n", "4096")]);
    let sig = &a.nests[0];
    assert!(
        sig.c1 && sig.c2 && !sig.c3 && !sig.c4 && !sig.offload,
        "{sig:?}"
    );
    let mul = &a.nests[1];
    assert_eq!(mul.op, "Mul");
    assert!(mul.c3 && mul.offload, "{mul:?}");
    assert!(a.cores.iter().all(|c| c.captured_fraction < 0.2));
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
    // At the default n = 2048 (Fig. 3's size: its 1-of-8 count lies strictly between
    // Table 4's 1024 -> 0 and 4096 -> 2). pimkit: 3 of 8 (max.idx.init and sum.init via C4,
    // max via C3; paper 1); the [n, n] input is LLC-resident for sub, sum and div. At
    // n = 4096 pimkit offloads 7 of 8 against the paper's 2 (docs/offload.md).
    let a = analysis("softmax");
    assert_eq!(a.nests.len(), 8);
    let k = offloaded(&a);
    assert!(
        k > 0 && 2 * k < a.nests.len(),
        "a minority offloaded: {k} of 8"
    );
    let exp = a.nests.iter().find(|n| n.label == "exp").unwrap();
    assert!(!exp.offload && exp.rejected_at == 2);
    assert!(
        a.cores.iter().all(|c| c.captured_fraction < 0.5),
        "the host keeps most of the time"
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
        // gptj_decode 1.77x / 2.93x / 4.36x, llama_decode 1.65x / 2.31x / 2.88x (paper: up
        // to 5.1x and 3.6x). Before eq. (8) used the memory system's bandwidth and the PIM
        // core ran the host's vector code, llama_decode was 0.65x / 0.85x / 1.01x.
        assert!(
            a.cores.iter().all(|c| c.speedup > 1.0),
            "{name}: > 1 at every core count: {:?}",
            a.cores.iter().map(|c| c.speedup).collect::<Vec<_>>()
        );
        assert!(
            a.cores.last().unwrap().speedup_exact >= a.cores.last().unwrap().speedup,
            "{name}: exact movement never costs more than the bound"
        );
    }
}

/// Operator granularity is slower than loop granularity on attention (Table 5: +67.8 %).
/// The benchmark is one `F.scaled_dot_product_attention` call (its 14 nests, torch-pim.md
/// §2.2), so at operator granularity all 14 are judged as one region: the host matmuls
/// dilute its bandwidth below θ and its StoreBound below σ, and the memory-bound nests the
/// loop rule offloads (the scale, softmax's sub/div/reductions) stay on the host. pimkit:
/// +3.4 % / +4.0 % / +4.3 % (the paper's gap comes from T_pim, +77.9 %: its op-level
/// region went to PIM; docs/offload.md).
#[test]
fn operator_granularity_is_slower_than_loop_on_attention() {
    let a = analysis("attention");
    let sources: std::collections::HashSet<_> = a.nests.iter().map(|n| &n.source).collect();
    assert_eq!(sources.len(), 1, "one operator: {sources:?}");
    for c in &a.cores {
        let (op, lp) = (&c.granularity["op"], &c.granularity["loop"]);
        assert!(
            op.eval.t_hybrid > lp.eval.t_hybrid * 1.02,
            "{} cores: op {} vs loop {}",
            c.cores,
            op.eval.t_hybrid,
            lp.eval.t_hybrid
        );
        assert!(op.speedup < lp.speedup);
    }
    let exp = a.nests.iter().find(|n| n.label == "exp").unwrap();
    assert!(!exp.offload);
}

/// Operators split into several nodes by the export regroup at operator granularity;
/// silu's two nests are one `F.silu` call.
#[test]
fn operator_granularity_groups_the_nodes_of_one_call() {
    let a = analysis("silu");
    assert!(a.nests.iter().all(|n| n.source == "silu"));
    let ops: Vec<_> = a.nests.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["Sigmoid", "Mul"]);
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

/// The size sweep (Table 4, `--sweep n=...`): ew_add and relu select nothing while their
/// operands fit in the host LLC and their nest from n = 4096 on (paper: 512/1024→0,
/// ≥4096→1). Host times at the smaller sizes are the fixture's scaled by the element
/// count; the verdict at n = 512 does not depend on them, since a cache-resident stream
/// has no off-core reads (C3) and no cold stores (C4).
#[test]
fn size_sweep_table_follows_table_4_for_streaming_kernels() {
    for (name, op) in [("ew_add", "Add"), ("relu", "Relu")] {
        let mut runs = vec![];
        for n in [512u64, 4096] {
            let g = graph(name, &[("n", &n.to_string())]);
            let p = pimkit_loops::lower(&g).unwrap();
            let scale = (n * n) as f64 / (4096.0 * 4096.0);
            let t: Vec<f64> = times(name).iter().map(|x| x * scale).collect();
            let a = analyze_with_times(&p, &t, &HostCalib::fixed_reference(), &Options::default());
            runs.push((n.to_string(), a));
        }
        let t = pimkit_offload::report::sweep_table("n", &runs);
        assert_eq!(t.rows.len(), 1, "{name}: one operator");
        assert_eq!(t.rows[0][0], name);
        assert_eq!(t.rows[0][1], op);
        assert_eq!(t.rows[0][3], "512→0, 4096→1", "{name}");
    }
}

/// A memory-system bandwidth no better than one thread's (a small VM's measurement, or an
/// old host file) is flagged, and it makes the streaming kernel's copy cost larger.
#[test]
fn one_thread_movement_bandwidth_is_flagged() {
    let g = pimkit_zoo::build("ew_add", &[]).unwrap();
    let p = pimkit_loops::lower(&g).unwrap();
    let t = times("ew_add");
    let fixed = HostCalib::fixed_reference();
    let a = analyze_with_times(&p, &t, &fixed, &Options::default());
    assert!(pimkit_offload::report::movement_bandwidth_warning(&a).is_none());
    let old = HostCalib {
        b_mem_gbs: 0.0,
        ..fixed
    };
    let b = analyze_with_times(&p, &t, &old, &Options::default());
    let w = pimkit_offload::report::movement_bandwidth_warning(&b).expect("flagged");
    assert!(w.contains("b_mem_gbs"), "{w}");
    assert!(pimkit_offload::report::terminal(&b).contains("b_mem_gbs"));
    assert!(b.cores[0].t_copy > 10.0 * a.cores[0].t_copy);
}

/// With elementwise fusion (MLIR's linalg-fuse-elementwise-ops, `--fuse`; not Torch-PIM's
/// pipeline) silu is one transcendental nest and, like gelu and tanh, offloads nothing:
/// the paper's silu finding is what its fused form gives. The fused nest's host time is
/// taken as the sum of the two unfused fixture times (fusion only removes the
/// intermediate's store and reload; a live run measured 111 ms against their 84 ms).
/// At n = 4096, where the unfused multiply is offloaded.
#[test]
fn fused_silu_offloads_nothing() {
    let g = graph("silu", &[("n", "4096")]);
    let o = pimkit_loops::LowerOptions {
        fuse_elementwise: true,
    };
    let p = pimkit_loops::lower_with(&g, &o).unwrap();
    assert_eq!(p.nests.len(), 1);
    let t: f64 = times("silu_n4096").iter().sum();
    let a = analyze_with_times(&p, &[t], &HostCalib::fixed_reference(), &Options::default());
    let n = &a.nests[0];
    assert!(n.c1 && n.c2 && !n.c3 && !n.c4 && !n.offload, "{n:?}");
    assert!(a.cores.iter().all(|c| (c.speedup - 1.0).abs() < 1e-9));
}
