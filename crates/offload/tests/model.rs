//! Unit tests of each condition and equation on hand-made nests and workloads.

use pimkit_offload::counters::{CounterSource, Counters};
use pimkit_offload::movement::{movement_bound, movement_exact, n_region, segments};
use pimkit_offload::pim::{PimFacts, t_pim};
use pimkit_offload::plan::{Params, evaluate, oracle};
use pimkit_offload::rule::{RegionFacts, RuleParams, decide};
use pimkit_offload::workload::{AllocData, NestData, Workload};
use pimkit_offload::{HostCalib, PimArch, Thresholds};
use proptest::prelude::*;

fn k() -> RuleParams {
    RuleParams {
        t_ctx_ns: 2000.0,
        i_min: 1.0,
        f_pim_ghz: 1.0,
        theta_gbs: 2.0,
        sigma: 0.4,
    }
}

fn facts(t: f64, n_total: u64, n_iter: u64, rd: f64, sb: f64) -> RegionFacts {
    RegionFacts {
        t_cpu_ns: t,
        n_total,
        n_iter,
        read_bytes: rd,
        store_bound: sb,
    }
}

#[test]
fn c1_threshold_is_t_ctx_plus_min_pim_time() {
    // T_ctx + N_total·I_min/(N_core·f_pim) = 2000 + 64000/32 = 4000 ns.
    let d = decide(&facts(4000.0, 64_000, 1000, 1e9, 0.0), 32, &k());
    assert_eq!(d.c1_threshold_ns, 4000.0);
    assert!(d.c1, "T_cpu equal to the threshold passes (≥)");
    assert!(!decide(&facts(3999.0, 64_000, 1000, 1e9, 0.0), 32, &k()).c1);
    // More cores lower the threshold: 2000 + 64000/128 = 2500.
    assert!(decide(&facts(3000.0, 64_000, 1000, 1e9, 0.0), 128, &k()).c1);
    assert!(!decide(&facts(3000.0, 64_000, 1000, 1e9, 0.0), 32, &k()).c1);
}

#[test]
fn c2_needs_one_parallel_iteration_per_core() {
    assert!(decide(&facts(1e9, 1 << 20, 64, 0.0, 0.0), 64, &k()).c2);
    assert!(!decide(&facts(1e9, 1 << 20, 63, 0.0, 0.0), 64, &k()).c2);
}

#[test]
fn c3_is_read_bandwidth_over_theta() {
    // 3e6 bytes in 1e6 ns = 3 GB/s > 2.
    let d = decide(&facts(1e6, 1000, 1000, 3e6, 0.0), 32, &k());
    assert!((d.bw_read_gbs - 3.0).abs() < 1e-12);
    assert!(d.c3);
    // Strictly greater: exactly θ fails.
    assert!(!decide(&facts(1e6, 1000, 1000, 2e6, 0.0), 32, &k()).c3);
}

#[test]
fn c4_is_store_bound_over_sigma_and_rule_combines() {
    let d = decide(&facts(1e6, 1000, 1000, 0.0, 0.41), 32, &k());
    assert!(d.c4 && !d.c3 && d.offload, "C4 alone admits a nest");
    assert!(!decide(&facts(1e6, 1000, 1000, 0.0, 0.4), 32, &k()).c4);
    // Memory-bound but too small (stage 1 fails): host, rejected at stage 1.
    let d = decide(&facts(1000.0, 1000, 1000, 1e6, 0.9), 32, &k());
    assert!(d.c3 && d.c4 && !d.c1 && !d.offload);
    assert_eq!(d.rejected_at, 1);
    // Big but compute-bound: rejected at stage 2.
    let d = decide(&facts(1e9, 1 << 30, 1 << 20, 1e6, 0.0), 32, &k());
    assert!(d.c1 && d.c2 && !d.offload);
    assert_eq!(d.rejected_at, 2);
}

fn arch() -> PimArch {
    PimArch::default()
}

#[test]
fn t_pim_terms_follow_the_model() {
    let a = arch();
    let f = PimFacts {
        n_iter: 1 << 20,
        n_total: 1 << 20,
        trip: 1,
        instr_per_iter: 6.0,
        cycles_per_iter: 6.0,
        pim_lines: 1.0 * (1 << 16) as f64,
    };
    let t = t_pim(&f, 32, &a);
    // compute = ceil(2^20/32)·6 cycles at 1 GHz.
    assert_eq!(t.compute_ns, (1u64 << 15) as f64 * 6.0);
    assert_eq!(t.stall_ns, (1u64 << 11) as f64 * a.dram_latency_ns);
    assert_eq!(t.sync_ns, a.sync_base_ns + 32.0 * a.sync_per_core_ns);
    assert_eq!(
        t.total_ns,
        (t.compute_ns + t.stall_ns).max(t.bank_ns) + t.sync_ns
    );
    // A large nest gets faster with cores.
    assert!(t_pim(&f, 128, &a).total_ns < t_pim(&f, 64, &a).total_ns);
    assert!(t_pim(&f, 64, &a).total_ns < t.total_ns);
}

#[test]
fn small_regions_get_slower_at_128_cores() {
    let a = arch();
    let f = PimFacts {
        n_iter: 4096,
        n_total: 4096,
        trip: 1,
        instr_per_iter: 8.0,
        cycles_per_iter: 8.0,
        pim_lines: 512.0,
    };
    assert!(t_pim(&f, 128, &a).total_ns > t_pim(&f, 64, &a).total_ns);
}

fn nest(id: usize, t: f64, reads: Vec<(usize, u64)>, writes: Vec<(usize, u64)>) -> NestData {
    NestData {
        id,
        op: format!("op{id}"),
        node: format!("node{id}"),
        source: format!("node{id}"),
        label: "x".into(),
        kind: "elementwise".into(),
        n_iter: 1 << 20,
        n_total: 1 << 20,
        trip: 1,
        instr_per_iter: 6.0,
        cycles_per_iter: 6.0,
        reads,
        writes,
        pim_lines: (1 << 16) as f64,
        t_cpu_ns: t,
        counters: Counters {
            offcore_read_bytes: 0.0,
            offcore_write_bytes: 0.0,
            store_bound: 0.0,
            source: CounterSource::Fixed,
        },
    }
}

fn allocs(n: usize, input: &[usize], output: &[usize]) -> Vec<AllocData> {
    (0..n)
        .map(|i| AllocData {
            id: i,
            name: format!("a{i}"),
            bytes: 1000,
            input: input.contains(&i),
            output: output.contains(&i),
        })
        .collect()
}

#[test]
fn segments_and_transitions() {
    let p = [false, true, true, false, true, false, false, true];
    assert_eq!(segments(&p), vec![(1, 3), (4, 5), (7, 8)]);
    assert_eq!(n_region(&segments(&p)), 6);
    assert_eq!(segments(&[false, false]), vec![]);
}

#[test]
fn movement_bound_counts_each_allocation_once_per_segment() {
    // n0: a0 -> a1; n1: a1 -> a1 (in place); n2: a1, a2 -> a3.
    let w = Workload {
        name: "t".into(),
        nests: vec![
            nest(0, 1.0, vec![(0, 1000)], vec![(1, 1000)]),
            nest(1, 1.0, vec![(1, 1000)], vec![(1, 1000)]),
            nest(2, 1.0, vec![(1, 1000), (2, 1000)], vec![(3, 1000)]),
        ],
        allocs: allocs(4, &[0], &[3]),
    };
    // One segment: fetch a0, a2; a1 produced inside (flushed once), a3 flushed.
    let m = movement_bound(&w, &[(0, 3)]);
    assert_eq!(m.fetch_bytes, 2000.0);
    assert_eq!(m.flush_bytes, 2000.0);
    // Only the in-place nest: a1 read then written in place is one transfer.
    let m = movement_bound(&w, &[(1, 2)]);
    assert_eq!(m.fetch_bytes + m.flush_bytes, 1000.0);
    // Split into three segments, everything is charged again at each boundary.
    let m = movement_bound(&w, &[(0, 1), (1, 2), (2, 3)]);
    assert_eq!(m.fetch_bytes + m.flush_bytes, 2000.0 + 1000.0 + 3000.0);
}

#[test]
fn exact_movement_keeps_weights_resident_and_never_exceeds_the_bound() {
    // a0 input, a1 weight (const), n0 (PIM): a0,a1 -> a2; n1 (host): a2 -> a3 (output).
    let w = Workload {
        name: "t".into(),
        nests: vec![
            nest(0, 1.0, vec![(0, 1000), (1, 1000)], vec![(2, 1000)]),
            nest(1, 1.0, vec![(2, 1000)], vec![(3, 1000)]),
        ],
        allocs: allocs(4, &[0], &[3]),
    };
    let place = [true, false];
    let bound = movement_bound(&w, &segments(&place));
    assert_eq!(bound.fetch_bytes, 2000.0);
    assert_eq!(bound.flush_bytes, 1000.0);
    // Steady state: the weight stays on PIM; the input comes again, a2 goes back.
    let ex = movement_exact(&w, &place);
    assert_eq!(ex.fetch_bytes, 1000.0);
    assert_eq!(ex.flush_bytes, 1000.0);
}

fn params() -> Params {
    let h = HostCalib::fixed_reference();
    Params::new(&h, &arch(), Thresholds::new(&h, None, None))
}

#[test]
fn hybrid_time_is_equation_9() {
    let w = Workload {
        name: "t".into(),
        nests: vec![
            nest(0, 5e6, vec![(0, 1000)], vec![(1, 1000)]),
            nest(1, 7e6, vec![(1, 1000)], vec![(2, 1000)]),
        ],
        allocs: allocs(3, &[0], &[2]),
    };
    let p = params();
    let a = arch();
    let e = evaluate(&w, &[false, true], 32, &a, &p, true);
    let tp = t_pim(&pimkit_offload::plan::pim_facts(&w.nests[1]), 32, &a).total_ns;
    assert_eq!(e.t_host, 5e6);
    assert_eq!(e.t_pim, tp);
    assert_eq!(e.n_region, 2);
    assert!((e.t_copy - 2000.0 / p.b_move_gbs).abs() < 1e-9);
    assert!((e.t_hybrid - (5e6 + tp + e.t_copy + 2.0 * 2000.0)).abs() < 1e-6);
}

fn arb_workload() -> impl Strategy<Value = Workload> {
    prop::collection::vec(
        (
            1e2f64..1e8,
            1u32..24,
            prop::collection::vec(0usize..6, 1..3),
            0usize..6,
            0.0f64..1e5,
        ),
        1..10,
    )
    .prop_map(|v| {
        let nests = v
            .into_iter()
            .enumerate()
            .map(|(i, (t, lg, rd, wr, lines))| {
                let mut n = nest(
                    i,
                    t,
                    rd.into_iter().map(|a| (a, 1000 * (a as u64 + 1))).collect(),
                    vec![(wr, 1000 * (wr as u64 + 1))],
                );
                n.n_iter = 1 << lg;
                n.n_total = 1 << (lg + 2);
                n.pim_lines = lines;
                n
            })
            .collect();
        Workload {
            name: "p".into(),
            nests,
            allocs: allocs(6, &[0], &[5]),
        }
    })
}

proptest! {
    #[test]
    fn oracle_is_never_worse_than_the_rule(w in arb_workload(), rules in prop::collection::vec(any::<bool>(), 10), cores in prop::sample::select(vec![32u32, 64, 128])) {
        let p = params();
        let a = arch();
        let place: Vec<bool> = rules.into_iter().take(w.nests.len()).collect();
        let rule = evaluate(&w, &place, cores, &a, &p, true);
        let orc = evaluate(&w, &oracle(&w, cores, &a, &p), cores, &a, &p, true);
        prop_assert!(orc.t_hybrid <= rule.t_hybrid * (1.0 + 1e-12) + 1e-9,
            "oracle {} > placement {}", orc.t_hybrid, rule.t_hybrid);
        // And never worse than all-CPU.
        let cpu: f64 = w.nests.iter().map(|n| n.t_cpu_ns).sum();
        prop_assert!(orc.t_hybrid <= cpu * (1.0 + 1e-12));
    }

    #[test]
    fn exact_movement_never_exceeds_the_bound_for_single_segments(w in arb_workload()) {
        // With all nests on PIM in one segment, residency can only remove transfers.
        let place = vec![true; w.nests.len()];
        let b = movement_bound(&w, &segments(&place));
        let e = movement_exact(&w, &place);
        prop_assert!(e.fetch_bytes <= b.fetch_bytes + 1e-9);
    }
}
