//! The report's model section: graph summary, per-node MACs and bytes, and a run of the
//! reference interpreter on random inputs.

use crate::info::{info, si, summary, tables};
use crate::model::model_label;
use pimkit_ir::{Graph, node_cost};
use pimkit_report::{Section, Table, plot};
use std::collections::BTreeMap;

/// The section for `g`, loaded from `spec`.
pub fn model_section(spec: &str, g: &Graph) -> Section {
    let label = model_label(spec);
    let mut s = Section::new(format!("model-{label}"), format!("Model: {label}"));
    let facts = info(g);
    s.text(format!(
        "{} nodes, {} parameters ({} bytes), {} MACs.",
        facts.nodes,
        si(facts.params as f64),
        si(facts.param_bytes as f64),
        si(facts.macs as f64)
    ));
    for t in tables(&facts) {
        s.table(t);
    }
    let (nodes, by_op) = per_node_costs(g);
    let (labels, vals): (Vec<String>, Vec<f64>) = by_op
        .iter()
        .filter(|(_, m)| **m > 0)
        .map(|(k, v)| (k.clone(), *v as f64))
        .unzip();
    s.svg(
        format!("{label}-macs-per-op.svg"),
        "MACs per operator type",
        plot::bar_chart("MACs per operator type", "MACs", &labels, &vals),
    );
    s.table(nodes);
    let mut json = serde_json::to_value(&facts).unwrap_or_default();
    if let Some(ms) = reference_run(g, &mut s) {
        json["reference_ms"] = serde_json::json!(ms);
    }
    s.json = json;
    s
}

/// The per-node table and the MACs per op type.
fn per_node_costs(g: &Graph) -> (Table, BTreeMap<String, u64>) {
    let mut nodes = Table::new(
        "per-node cost (MACs; bytes read and written once each)",
        &["node", "op", "output", "MACs", "read B", "write B"],
    );
    let mut by_op: BTreeMap<String, u64> = BTreeMap::new();
    for n in &g.nodes {
        let c = node_cost(g, n);
        *by_op.entry(n.op.name().to_string()).or_default() += c.macs;
        let out = n
            .outputs
            .first()
            .map(|&o| g.ty(o).to_string())
            .unwrap_or_default();
        nodes.push(vec![
            n.name.clone(),
            n.op.name().into(),
            out,
            c.macs.to_string(),
            c.read_bytes.to_string(),
            c.write_bytes.to_string(),
        ]);
    }
    (nodes, by_op)
}

/// Run the reference interpreter on random inputs (seed 0) and add its outputs' ranges
/// to `s`; returns the run's milliseconds, or None (with a note) when it was skipped.
fn reference_run(g: &Graph, s: &mut Section) -> Option<f64> {
    if g.is_shape_only() {
        s.note("Shape-only model (no weight data): the reference run is skipped.");
        return None;
    }
    if let Err(e) = pimkit_interp::check_memory(g) {
        s.note(format!("Reference run skipped: {e}"));
        return None;
    }
    let inputs = pimkit_interp::random_inputs(g, 0);
    let t0 = std::time::Instant::now();
    let outs = match pimkit_interp::run(g, &inputs) {
        Ok(o) => o,
        Err(e) => {
            s.note(format!("Reference run failed: {e}"));
            return None;
        }
    };
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut t = Table::new(
        "reference run (random inputs, seed 0)",
        &["output", "shape", "min", "max", "mean"],
    );
    for (&id, o) in g.outputs.iter().zip(&outs) {
        let (lo, hi, mean) = summary(o);
        t.push(vec![
            g.value(id).name.clone(),
            format!("{:?}", o.shape),
            format!("{lo:.5}"),
            format!("{hi:.5}"),
            format!("{mean:.5}"),
        ]);
    }
    s.text(format!("Reference interpreter: {ms:.1} ms on this host."));
    s.table(t);
    Some(ms)
}
