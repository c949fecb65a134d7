//! Terminal tables and the `pimkit report` section: per-nest decision table, speedup vs
//! cores (SVG), granularity comparison (like torch-pim.txt Table 5) and the size sweep
//! (like Table 4).

use crate::analysis::Analysis;
use crate::host::HostCalib;
use pimkit_report::{Section, Table, plot};

fn b(x: bool) -> String {
    if x { "Y".into() } else { "-".into() }
}

pub fn nest_table(a: &Analysis) -> Table {
    let c0 = a.cores.first().map_or(0, |c| c.cores);
    let mut t = Table::new(
        format!("{}: per-nest decisions (C1/C2 at {c0} cores)", a.workload),
        &[
            "id",
            "op",
            "label",
            "t_cpu µs",
            "N_iter",
            "BW_read GB/s",
            "StoreBound",
            "C1",
            "C2",
            "C3",
            "C4",
            "offload",
            "oracle",
            "counters",
        ],
    );
    for n in &a.nests {
        t.push(vec![
            n.id.to_string(),
            n.op.clone(),
            n.label.clone(),
            format!("{:.1}", n.t_cpu_ns / 1e3),
            n.n_iter.to_string(),
            format!("{:.2}", n.bw_read_gbs),
            format!("{:.2}", n.store_bound),
            b(n.c1),
            b(n.c2),
            b(n.c3),
            b(n.c4),
            if n.offload {
                "PIM".into()
            } else {
                "host".into()
            },
            n.by_cores.first().map_or("-".into(), |c| {
                if c.oracle {
                    "PIM".into()
                } else {
                    "host".into()
                }
            }),
            n.counter_source.clone(),
        ]);
    }
    t
}

pub fn cores_table(a: &Analysis) -> Table {
    let mut t = Table::new(
        format!(
            "{}: hybrid time per PIM core count (equation 9; ms)",
            a.workload
        ),
        &[
            "cores",
            "offloaded",
            "T_host",
            "T_pim",
            "T_copy (bound)",
            "T_copy (exact)",
            "N_region",
            "speedup",
            "speedup exact",
            "captured",
            "oracle speedup",
            "agree",
        ],
    );
    for c in &a.cores {
        t.push(vec![
            c.cores.to_string(),
            format!("{}/{}", c.offloaded_nests, a.nests_total),
            format!("{:.3}", c.t_host / 1e6),
            format!("{:.3}", c.t_pim / 1e6),
            format!("{:.3}", c.t_copy / 1e6),
            format!("{:.3}", c.t_copy_exact / 1e6),
            c.n_region.to_string(),
            format!("{:.2}x", c.speedup),
            format!("{:.2}x", c.speedup_exact),
            format!("{:.1}%", 100.0 * c.captured_fraction),
            format!("{:.2}x", c.oracle_speedup),
            format!("{}/{}", c.agreement, a.nests_total),
        ]);
    }
    t
}

/// Like Table 5: each granularity's terms relative to the loop granularity's T_hybrid.
pub fn granularity_table(a: &Analysis) -> Table {
    granularity_table_for(a, None)
}

/// [`granularity_table`] with only loop granularity (the baseline of the Δ columns) and
/// `only`, when given.
pub fn granularity_table_for(a: &Analysis, only: Option<crate::Granularity>) -> Table {
    let mut t = Table::new(
        format!(
            "{}: granularities (Δ as % of loop-granularity T_hybrid)",
            a.workload
        ),
        &[
            "cores",
            "granularity",
            "offloaded",
            "N_region",
            "speedup",
            "ΔT_pim %",
            "ΔT_host %",
            "ΔT_copy %",
            "ΔT_switch %",
            "total %",
        ],
    );
    for c in &a.cores {
        let l = &c.granularity["loop"].eval;
        let base = l.t_hybrid.max(1e-9);
        for g in ["loop", "op", "bb"] {
            if only.is_some_and(|o| g != "loop" && o.name() != g) {
                continue;
            }
            let r = &c.granularity[g];
            let e = &r.eval;
            let dsw = (e.n_region as f64 - l.n_region as f64) * a.params.t_sw_ns;
            t.push(vec![
                c.cores.to_string(),
                g.into(),
                r.offloaded_nests.to_string(),
                e.n_region.to_string(),
                format!("{:.2}x", r.speedup),
                format!("{:+.1}", 100.0 * (e.t_pim - l.t_pim) / base),
                format!("{:+.1}", 100.0 * (e.t_host - l.t_host) / base),
                format!("{:+.1}", 100.0 * (e.t_copy - l.t_copy) / base),
                format!("{:+.1}", 100.0 * dsw / base),
                format!("{:+.1}", 100.0 * (e.t_hybrid - l.t_hybrid) / base),
            ]);
        }
    }
    t
}

/// Like Table 4: offloaded nests per operator as the size parameter varies.
pub fn sweep_table(param: &str, runs: &[(String, Analysis)]) -> Table {
    let mut t = Table::new(
        format!("Offloaded nests per operator as {param} varies (first core count)"),
        &["workload", "op", "nests", "offloaded per size"],
    );
    let Some((_, first)) = runs.first() else {
        return t;
    };
    let mut ops: Vec<String> = vec![];
    for n in &first.nests {
        if !ops.contains(&n.op) {
            ops.push(n.op.clone());
        }
    }
    for op in ops {
        let cells: Vec<String> = runs
            .iter()
            .map(|(v, a)| {
                let k = a.nests.iter().filter(|n| n.op == op && n.offload).count();
                format!("{v}→{k}")
            })
            .collect();
        let total = first.nests.iter().filter(|n| n.op == op).count();
        t.push(vec![
            first.workload.clone(),
            op,
            total.to_string(),
            cells.join(", "),
        ]);
    }
    t
}

/// A warning when equation (8)'s bandwidth is no better than one thread's read bandwidth:
/// then it was measured on a machine (e.g. a small VM) that cannot reach the memory
/// system, and T_copy is overstated (paper §5.1 uses the memory system's bandwidth).
pub fn movement_bandwidth_warning(a: &Analysis) -> Option<String> {
    (a.params.b_move_gbs <= 1.5 * a.host.b_read_gbs).then(|| {
        format!(
            "note: B_rd = B_wb = {:.1} GB/s is hardly above one thread's read bandwidth ({:.1} GB/s), \
             so it is a lower bound for the memory system and T_copy is overstated; set \
             `b_mem_gbs` in the host file to the platform's memory bandwidth (docs/offload.md) \
             or use --host-fixed",
            a.params.b_move_gbs, a.host.b_read_gbs
        )
    })
}

/// `--host-fixed` pairs the reference host's θ (0.12 x its 16.9 GB/s read bandwidth) with
/// nest times measured on this machine. When this machine's own calibration (`measured`)
/// reads more than 1.5x faster or slower than the reference, the nests' bandwidths and θ
/// are on different scales (a faster host lifts compute-bound nests above the reference
/// θ): a sentence saying so, else None.
pub fn reference_host_mismatch(measured: &HostCalib) -> Option<String> {
    let r = HostCalib::fixed_reference();
    let ratio = measured.b_read_gbs / r.b_read_gbs;
    (measured.source == "measured" && !(1.0 / 1.5..=1.5).contains(&ratio)).then(|| {
        format!(
            "the reference host sets θ from its {:.1} GB/s read bandwidth, but this machine \
             reads {:.1} GB/s ({:.1}x) and the nest times are measured here, so bandwidths \
             and θ come from different machines ({})",
            r.b_read_gbs,
            measured.b_read_gbs,
            ratio,
            if ratio > 1.0 {
                "compute-bound nests may pass C3"
            } else {
                "memory-bound nests may fail C3"
            }
        )
    })
}

/// Plain-text rendering for the terminal.
pub fn terminal(a: &Analysis) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "{}: {} nests, all-CPU {:.3} ms; θ = {:.2} GB/s, σ = {:.2}, T_ctx = {:.2} µs, B_rd = B_wb = {:.1} GB/s, counters: {} (host: {})\n",
        a.workload,
        a.nests_total,
        a.t_cpu_total_ns / 1e6,
        a.thresholds.theta_gbs,
        a.thresholds.sigma,
        a.params.rule.t_ctx_ns / 1e3,
        a.params.b_move_gbs,
        a.counter_source,
        a.host.source
    ));
    if let Some(w) = movement_bandwidth_warning(a) {
        s.push_str(&w);
        s.push('\n');
    }
    for t in [nest_table(a), cores_table(a), granularity_table(a)] {
        s.push_str(&t.to_terminal());
        s.push('\n');
    }
    if let Some(p) = &a.profiling {
        s.push_str(&format!(
            "profiling cost: {:.2}x one CPU-only execution ({} executions, {:.1} ms; compile {:.0} ms and set-up {:.0} ms not counted)\n",
            p.multiple, p.executions, p.profiling_ms, p.compile_ms, p.setup_ms
        ));
    }
    s
}

/// The report section for one or more analysed workloads, plus optional sweeps.
pub fn report_section(
    analyses: &[Analysis],
    sweeps: &[(String, Vec<(String, Analysis)>)],
) -> Section {
    let mut s = Section::new("offload", "PIM offloading (Torch-PIM rule)");
    s.text(
        "Each loop nest is placed by the two-stage rule of Torch-PIM (C1 ∧ C2) ∧ (C3 ∨ C4); \
         hybrid time T_hybrid(N) = T_host + T_pim(N) + T_copy + N_region·T_sw with T_copy the \
         upper bound of equation (8); 'exact' tracks residency across segments and executions.",
    );
    if let Some(w) = analyses.iter().find_map(movement_bandwidth_warning) {
        s.note(w);
    }
    if analyses.iter().any(|a| a.counter_source.contains("model")) {
        s.note(
            "Counters come from the footprint/cache model (no hardware PMU): off-core read bytes \
             are modelled from the nests' affine accesses against the host caches, StoreBound \
             from the store traffic at the calibrated store bandwidth over the measured time. \
             T_pim comes from the analytic PIM model in arch/pim-general.toml, not a simulator.",
        );
    }
    for a in analyses {
        s.table(nest_table(a));
        s.table(cores_table(a));
        s.table(granularity_table(a));
        let mut series = vec![];
        for (name, f) in [
            ("loop (rule)", None),
            ("operator", Some("op")),
            ("basic block", Some("bb")),
        ] {
            series.push(plot::Series {
                name: name.into(),
                points: a
                    .cores
                    .iter()
                    .map(|c| {
                        (
                            c.cores as f64,
                            f.map_or(c.speedup, |g| c.granularity[g].speedup),
                        )
                    })
                    .collect(),
                line: true,
            });
        }
        series.push(plot::Series {
            name: "oracle".into(),
            points: a
                .cores
                .iter()
                .map(|c| (c.cores as f64, c.oracle_speedup))
                .collect(),
            line: true,
        });
        series.push(plot::Series {
            name: "loop, exact movement".into(),
            points: a
                .cores
                .iter()
                .map(|c| (c.cores as f64, c.speedup_exact))
                .collect(),
            line: true,
        });
        let file = format!("offload_speedup_{}.svg", sanitize(&a.workload));
        s.svg(
            file,
            format!("{}: speedup over CPU-only vs PIM cores", a.workload),
            plot::line_chart(
                &format!("{}: speedup vs PIM cores", a.workload),
                "PIM cores",
                "speedup",
                &series,
                true,
                false,
            ),
        );
    }
    for (param, runs) in sweeps {
        s.table(sweep_table(param, runs));
    }
    s.json = serde_json::json!({
        "workloads": analyses,
        "sweeps": sweeps.iter().map(|(p, r)| serde_json::json!({"param": p, "runs": r})).collect::<Vec<_>>(),
    });
    s
}

fn sanitize(n: &str) -> String {
    n.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_mismatch_needs_a_measured_host_beyond_one_and_a_half_times() {
        let mut m = HostCalib::fixed_reference();
        assert!(
            reference_host_mismatch(&m).is_none(),
            "the reference itself"
        );
        m.source = "measured".into();
        for (read, note) in [(25.0, false), (26.0, true), (11.4, false), (11.2, true)] {
            m.b_read_gbs = read;
            assert_eq!(reference_host_mismatch(&m).is_some(), note, "{read} GB/s");
        }
        m.b_read_gbs = 40.0;
        assert!(
            reference_host_mismatch(&m)
                .unwrap()
                .contains("compute-bound nests may pass C3")
        );
        m.b_read_gbs = 5.0;
        assert!(
            reference_host_mismatch(&m)
                .unwrap()
                .contains("memory-bound nests may fail C3")
        );
    }
}
