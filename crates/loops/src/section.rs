//! The loop-nest section of `pimkit report`: nests per op, the per-nest table, and the
//! time per nest as an SVG bar chart when a profile is given.

use crate::analysis::analyze;
use crate::ir::Program;
use crate::profile::Profile;
use crate::records::report;
use pimkit_report::{Section, Table, plot};

fn kib(b: u64) -> String {
    format!("{:.1}", b as f64 / 1024.0)
}

/// Build the report section for a lowered (and optionally profiled) program.
pub fn report_section(p: &Program, prof: Option<&Profile>) -> Section {
    let mut s = Section::new(
        "loops",
        format!("Loop nests (Torch-PIM candidates): {}", p.name),
    );
    let stats: Vec<_> = p.nests.iter().map(|n| analyze(p, n)).collect();
    s.text(format!(
        "{} nests over {} buffers, lowered as Torch-MLIR lowers to linalg without elementwise \
         fusion (one nest per linalg op; parallel dims become scf.parallel, reductions an inner scf.for).",
        p.nests.len(),
        p.allocs.len()
    ));
    let mut per_op = Table::new(
        "Nests per op",
        &[
            "op",
            "nodes",
            "nests",
            "N_total",
            "read KiB",
            "write KiB",
            "t_cpu µs",
        ],
    );
    let mut order: Vec<String> = vec![];
    for n in &p.nests {
        if !order.contains(&n.op) {
            order.push(n.op.clone());
        }
    }
    for op in &order {
        let ids: Vec<usize> = p
            .nests
            .iter()
            .filter(|n| &n.op == op)
            .map(|n| n.id)
            .collect();
        let mut nodes: Vec<&str> = ids.iter().map(|&i| p.nests[i].node.as_str()).collect();
        nodes.dedup();
        let t: f64 = prof.map_or(0.0, |pr| ids.iter().map(|&i| pr.nests[i].t_cpu_ns).sum());
        per_op.push(vec![
            op.clone(),
            nodes.len().to_string(),
            ids.len().to_string(),
            ids.iter()
                .map(|&i| stats[i].n_total)
                .sum::<u64>()
                .to_string(),
            kib(ids.iter().map(|&i| stats[i].read_bytes).sum()),
            kib(ids.iter().map(|&i| stats[i].write_bytes).sum()),
            if prof.is_some() {
                format!("{:.1}", t / 1e3)
            } else {
                "-".into()
            },
        ]);
    }
    s.table(per_op);
    let mut nests = Table::new(
        "Nests",
        &[
            "id",
            "op",
            "node",
            "kind",
            "label",
            "extents",
            "N_iter",
            "N_total",
            "read KiB",
            "write KiB",
            "instr/iter",
            "t_cpu µs",
        ],
    );
    for (n, st) in p.nests.iter().zip(&stats) {
        let ext: Vec<String> = n
            .dims
            .iter()
            .map(|d| {
                format!(
                    "{}{}",
                    d.extent,
                    if d.kind == crate::DimKind::Reduction {
                        "r"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        nests.push(vec![
            n.id.to_string(),
            n.op.clone(),
            n.node.clone(),
            n.kind.name().into(),
            n.label.clone(),
            ext.join("x"),
            st.n_iter.to_string(),
            st.n_total.to_string(),
            kib(st.read_bytes),
            kib(st.write_bytes),
            format!("{:.0}", st.instr_per_iter),
            prof.map_or("-".into(), |pr| {
                format!("{:.1}", pr.nests[n.id].t_cpu_ns / 1e3)
            }),
        ]);
    }
    s.table(nests);
    if let Some(pr) = prof {
        let labels: Vec<String> = p
            .nests
            .iter()
            .map(|n| format!("{} {}", n.id, n.label))
            .collect();
        let values: Vec<f64> = pr.nests.iter().map(|t| t.t_cpu_ns / 1e3).collect();
        s.svg(
            "loops_time_per_nest.svg",
            format!(
                "Host time per nest (median of {} runs after {} warm-up, native C at -O3)",
                pr.runs, pr.warmup
            ),
            plot::bar_chart(
                &format!("{}: time per nest", p.name),
                "µs",
                &labels,
                &values,
            ),
        );
    } else {
        s.note("No timing run: times per nest are not shown (run `pimkit profile`).");
    }
    s.json = serde_json::to_value(report(p, prof)).unwrap_or(serde_json::Value::Null);
    s
}
