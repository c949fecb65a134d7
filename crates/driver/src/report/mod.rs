//! `pimkit report` / `pimkit.report`: every engine on a model (or the built-in set, each
//! engine on a model of the kind its paper studies), assembled into one [`Report`] that
//! [`Report::write_dir`] turns into index.html, report.json and the SVG/CSV files.
//! An engine that cannot handle a model yields a note and a summary row saying why, never
//! a failed report.

mod model_section;
mod sections;

pub use model_section::model_section;

use crate::model::{load, model_label};
use pimkit_engine::{EngineError, Progress};
use pimkit_ir::Graph;
use pimkit_onnx::LoadOptions;
use pimkit_report::{Report, Section, SummaryRow};
use std::collections::HashMap;

/// One analysis of the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Analysis {
    /// The model itself: facts, per-node cost, a reference-interpreter run.
    Model,
    Loops,
    Offload,
    Xbar,
    Puma,
    Vpu,
    /// A short crossbar-aware NAS (only in the built-in set: it searches a space, not a model).
    Nas,
    /// Analog accuracy of the crossbar mapping (functional model, Monte-Carlo trials).
    Accuracy,
    /// Hardware cost of the crossbar mapping (energy, area, TOPS/W on a component library).
    Cost,
    /// LLM serving on xPU + DRAM-PIM (a decoder with its KV cache).
    Llm,
}

impl Analysis {
    /// Lower-case name: the summary row's engine and the section id's stem.
    pub fn name(self) -> &'static str {
        match self {
            Analysis::Model => "model",
            Analysis::Loops => "loops",
            Analysis::Offload => "offload",
            Analysis::Xbar => "xbar",
            Analysis::Puma => "puma",
            Analysis::Vpu => "vpu",
            Analysis::Nas => "nas",
            Analysis::Accuracy => "accuracy",
            Analysis::Cost => "cost",
            Analysis::Llm => "llm",
        }
    }
}

/// The built-in set: each engine on a model of the kind its paper studies.
pub const DEFAULT_SET: &[(Analysis, &str)] = &[
    (Analysis::Model, "zoo:mobilenet_v2"),
    (Analysis::Loops, "zoo:softmax?n=1024"),
    (Analysis::Offload, "zoo:llama_decode?weights=none"),
    (Analysis::Xbar, "zoo:rnc_mobilenet_v3_small?weights=none"),
    (Analysis::Puma, "zoo:puma_mlp_l4"),
    (Analysis::Vpu, "zoo:q_mobilenet_v2"),
    (Analysis::Nas, "zoo:rnc_mobilenet_v3_small?weights=none"),
    (Analysis::Accuracy, "zoo:q_mobilenet_v2?res=64"),
    (Analysis::Cost, "zoo:resnet18?weights=none"),
    (Analysis::Llm, "zoo:llama2_7b?weights=none"),
];

/// Every analysis that takes a model, for the models a user names.
pub const PER_MODEL: &[Analysis] = &[
    Analysis::Model,
    Analysis::Loops,
    Analysis::Offload,
    Analysis::Xbar,
    Analysis::Puma,
    Analysis::Vpu,
    Analysis::Accuracy,
    Analysis::Cost,
    Analysis::Llm,
];

/// The (analysis, model) jobs of a report on `models` (empty: the built-in set).
pub fn jobs(models: &[String]) -> Vec<(Analysis, String)> {
    if models.is_empty() {
        return DEFAULT_SET
            .iter()
            .map(|&(a, m)| (a, m.to_string()))
            .collect();
    }
    models
        .iter()
        .flat_map(|m| PER_MODEL.iter().map(move |&a| (a, m.clone())))
        .collect()
}

/// The report's title.
fn title(models: &[String], jobs: &[(Analysis, String)]) -> String {
    if !models.is_empty() {
        return format!("pimkit report: {}", models.join(", "));
    }
    let mut labels: Vec<String> = vec![];
    for (_, m) in jobs {
        let l = model_label(m);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    format!("pimkit report: the built-in set ({})", labels.join(", "))
}

/// A model for the report: a path or zoo spec to load, or a graph already loaded, with
/// the name that stands for it in titles, section ids and file names.
pub enum ReportModel {
    Spec(String),
    Loaded(String, Graph),
}

impl ReportModel {
    fn name(&self) -> &str {
        match self {
            ReportModel::Spec(s) | ReportModel::Loaded(s, _) => s,
        }
    }
}

/// Run every analysis on `models` (the built-in set when empty; `load` applies to the
/// models a user names) and assemble the report. A model that does not load is an error;
/// an engine that cannot handle a loaded model is a note in its section. Import notes go
/// to `notes` ("SPEC: note"); `progress` is told each job before it starts.
pub fn build(
    models: &[String],
    load_opts: &LoadOptions,
    progress: &mut dyn Progress,
    notes: &mut Vec<String>,
) -> Result<Report, EngineError> {
    let models = models.iter().cloned().map(ReportModel::Spec).collect();
    build_models(models, load_opts, progress, notes)
}

/// [`build`] on a mix of specs to load and graphs already loaded.
pub fn build_models(
    models: Vec<ReportModel>,
    load_opts: &LoadOptions,
    progress: &mut dyn Progress,
    notes: &mut Vec<String>,
) -> Result<Report, EngineError> {
    let names: Vec<String> = models.iter().map(|m| m.name().to_string()).collect();
    let jobs = jobs(&names);
    let default_opts = LoadOptions::default();
    let opts = if names.is_empty() {
        &default_opts
    } else {
        load_opts
    };
    let mut graphs: HashMap<String, Graph> = HashMap::new();
    for m in models {
        if let ReportModel::Loaded(name, g) = m {
            graphs.insert(name, g);
        }
    }
    for (_, spec) in &jobs {
        if !graphs.contains_key(spec) {
            let mut got = vec![];
            let g = load(spec, &[], opts, &mut got);
            notes.extend(got.into_iter().map(|n| format!("{spec}: {n}")));
            graphs.insert(spec.clone(), g?);
        }
    }
    // LLM serving applies to decoders with a KV cache only: other models a user names get
    // no LLM section (the built-in set names a decoder).
    let jobs: Vec<(Analysis, String)> = jobs
        .into_iter()
        .filter(|(a, spec)| *a != Analysis::Llm || pimkit_llm::workload::has_cache(&graphs[spec]))
        .collect();
    Ok(assemble(title(&names, &jobs), &jobs, &graphs, progress))
}

/// Run `jobs` on their graphs, in order, into one report.
fn assemble(
    title: String,
    jobs: &[(Analysis, String)],
    graphs: &HashMap<String, Graph>,
    progress: &mut dyn Progress,
) -> Report {
    let mut report = Report::new(title);
    for (i, (analysis, spec)) in jobs.iter().enumerate() {
        progress.step(i, jobs.len(), &format!("{} on {spec}", analysis.name()));
        let (mut sec, mut row) = run_one(*analysis, spec, &graphs[spec]);
        // Section ids must be unique within the report (several models, one engine).
        if report.sections.iter().any(|s| s.id == sec.id) {
            sec.id = format!("{}-{}", sec.id, model_label(spec));
            row.section = sec.id.clone();
        }
        if *analysis != Analysis::Model {
            report.summary.push(row);
        }
        report.sections.push(sec);
    }
    progress.step(jobs.len(), jobs.len(), "done");
    report
}

/// One analysis on one model: its section and summary row; a failure becomes a note.
pub fn run_one(analysis: Analysis, spec: &str, g: &Graph) -> (Section, SummaryRow) {
    // The engines map a fixed dataflow graph: control flow must flatten first.
    let flat = match analysis {
        Analysis::Model | Analysis::Nas => Ok(None),
        _ => pimkit_ir::require_static(g)
            .map(Some)
            .map_err(EngineError::input),
    };
    let r = flat.and_then(|f| sections::section(analysis, spec, f.as_ref().unwrap_or(g)));
    let name = analysis.name().to_string();
    let (sec, headline, status) = match r {
        Ok((s, h)) => (s, h, "done".to_string()),
        Err(e) => {
            let mut s = Section::new(name.clone(), format!("{analysis:?} on {spec}"));
            s.note(format!("not run on {spec}: {e}"));
            let short: String = e.msg.chars().take(160).collect();
            (s, None, format!("not run: {short}"))
        }
    };
    let row = SummaryRow {
        engine: name,
        model: model_label(spec),
        section: sec.id.clone(),
        figures: headline.map(|h| h.figures).unwrap_or_default(),
        status,
    };
    (sec, row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_model_gets_every_per_model_analysis_and_a_summary_row_each() {
        let models = vec!["zoo:mlp".to_string()];
        let mut steps = vec![];
        let mut notes = vec![];
        let r = build(
            &models,
            &LoadOptions::default(),
            &mut |d: usize, t: usize, w: &str| steps.push((d, t, w.to_string())),
            &mut notes,
        )
        .unwrap();
        // Every analysis but LLM serving (an MLP has no KV cache).
        let n = PER_MODEL.len() - 1;
        assert_eq!(r.sections.len(), n);
        assert_eq!(r.summary.len(), n - 1);
        assert!(r.summary.iter().all(|s| s.engine != "llm"));
        assert_eq!(steps.first().map(|s| s.0), Some(0));
        assert_eq!(steps.last().map(|s| (s.0, s.1)), Some((n, n)));
        // An MLP maps onto crossbars and runs on PUMA: those rows have figures.
        for e in ["xbar", "puma"] {
            let row = r.summary.iter().find(|s| s.engine == e).unwrap();
            assert_eq!(row.status, "done", "{e}: {}", row.status);
            assert!(!row.figures.is_empty(), "{e}");
        }
    }

    #[test]
    fn a_decoder_with_its_cache_gets_the_llm_section() {
        let r = build(
            &["zoo:decoder".to_string()],
            &LoadOptions::default(),
            &mut pimkit_engine::NoProgress,
            &mut vec![],
        )
        .unwrap();
        let row = r.summary.iter().find(|s| s.engine == "llm").unwrap();
        assert_eq!(row.status, "done");
        assert!(row.figures.iter().any(|(k, _)| k == "tokens/s"));
    }

    #[test]
    fn a_model_that_does_not_load_fails_the_report() {
        let e = build(
            &["/no/such.onnx".to_string()],
            &LoadOptions::default(),
            &mut pimkit_engine::NoProgress,
            &mut vec![],
        )
        .unwrap_err();
        assert!(e.is_input() && e.msg.contains("no such file"), "{e}");
    }
}
