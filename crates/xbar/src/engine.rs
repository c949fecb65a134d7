//! The xbar engine behind the common contract ([`pimkit_engine::Engine`]): map a model
//! onto crossbars (partition, duplication, packing), optionally draw the packing and run
//! the budget/S_DW sweep. The CLI's `xbar map`, the report and the Python package all go
//! through [`Xbar::run`].

use crate::sweep::{SweepResult, SweepSpec, sweep};
use crate::{Arch, Budget, DepthwiseMapping, MapOptions, MapResult, Mode, XbarError};
use pimkit_engine::{EngineError, Headline, Progress, Section};
use pimkit_ir::Graph;
use serde::Serialize;

/// The xbar engine.
pub struct Xbar;

/// What steers a mapping; `None` takes the architecture file's `[defaults]` (mapping
/// settings, not hardware: docs/xbar.md).
#[derive(Clone, Debug, Default)]
pub struct XbarOptions {
    /// The model's name in results.
    pub label: String,
    pub budget: Option<Budget>,
    pub sdw: Option<usize>,
    pub samples: Option<usize>,
    pub depthwise: Option<DepthwiseMapping>,
    pub mode: Option<Mode>,
    pub seed: Option<u64>,
    /// Do not duplicate layers into spare crossbars.
    pub no_dup: bool,
    /// Draw the packing map (SVG, at most this many crossbars drawn).
    pub packing_svg: Option<usize>,
    /// Also run this budget x S_DW x samples sweep.
    pub sweep: Option<SweepSpec>,
}

impl XbarOptions {
    /// Set the mapping mode and depthwise mapping from their names (`None` keeps the
    /// architecture file's defaults): the front ends' `--mode` and `--depthwise`.
    pub fn with_names(
        mut self,
        mode: Option<&str>,
        depthwise: Option<&str>,
    ) -> Result<Self, XbarError> {
        self.mode = mode.map(str::parse::<Mode>).transpose()?;
        self.depthwise = depthwise.map(str::parse::<DepthwiseMapping>).transpose()?;
        Ok(self)
    }

    /// The model's name in results: the label, or the graph's name when none is given.
    pub fn label_for(&self, g: &Graph) -> String {
        if self.label.is_empty() {
            g.name.clone()
        } else {
            self.label.clone()
        }
    }

    /// The mapping options: the arch's defaults with these overrides.
    pub fn resolve(&self, arch: &Arch) -> MapOptions {
        let mut o = MapOptions::from_arch(arch);
        if let Some(b) = self.budget {
            o.budget = b;
        }
        if let Some(s) = self.sdw {
            o.sdw = s;
        }
        if let Some(k) = self.samples {
            o.samples = k;
        }
        if let Some(d) = self.depthwise {
            o.depthwise = d;
        }
        if let Some(m) = self.mode {
            o.mode = m;
        }
        if let Some(s) = self.seed {
            o.seed = s;
        }
        o.duplicate = !self.no_dup;
        o
    }
}

/// A mapping, its packing map and sweep when asked for.
#[derive(Clone, Debug, Serialize)]
pub struct XbarOutput {
    #[serde(flatten)]
    pub map: MapResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepResult>,
    /// The samples the sweep's speedup chart highlights.
    #[serde(skip)]
    pub samples: usize,
    #[serde(skip)]
    pub packing_svg: Option<String>,
}

impl XbarOutput {
    /// Write `xbar map -o DIR`'s files into `dir` (existing): result.json (the given JSON,
    /// the command's `--json` layout), summary.csv, layers.csv and packing.svg when drawn.
    pub fn write_dir(
        &self,
        dir: &std::path::Path,
        json: &serde_json::Value,
    ) -> std::io::Result<Vec<String>> {
        let (summary, layers) = crate::result_tables(&self.map);
        let mut files = vec![
            (
                "result.json",
                serde_json::to_string_pretty(json).map_err(std::io::Error::other)? + "\n",
            ),
            ("summary.csv", summary.to_csv()),
            ("layers.csv", layers.to_csv()),
        ];
        if let Some(svg) = &self.packing_svg {
            files.push(("packing.svg", svg.clone()));
        }
        for (name, text) in &files {
            pimkit_ir::fsio::write_atomic(&dir.join(name), text.as_bytes())?;
        }
        Ok(files.into_iter().map(|(n, _)| n.to_string()).collect())
    }
}

/// Whose fault an xbar error is: I/O failures are the system's, the rest the input's.
pub fn engine_error(e: XbarError) -> EngineError {
    // Every variant listed: a new one must be classified here.
    match e {
        XbarError::Io(_) => EngineError::internal(e),
        XbarError::ArchFile(_)
        | XbarError::Arch { .. }
        | XbarError::Option { .. }
        | XbarError::Layer { .. }
        | XbarError::NoLayers
        | XbarError::BudgetTooSmall { .. }
        | XbarError::Analog(_) => EngineError::input(e),
    }
}

impl pimkit_engine::Engine for Xbar {
    const NAME: &'static str = "xbar";
    type Arch = Arch;
    type Options = XbarOptions;
    type Output = XbarOutput;

    fn run(
        g: &Graph,
        arch: &Arch,
        opts: &XbarOptions,
        progress: &mut dyn Progress,
    ) -> Result<XbarOutput, EngineError> {
        let o = opts.resolve(arch);
        let label = opts.label_for(g);
        progress.step(0, 3, "extract");
        let ex = crate::extract(g).map_err(engine_error)?;
        if ex.layers.is_empty() {
            return Err(engine_error(XbarError::NoLayers));
        }
        progress.step(1, 3, "map");
        let map =
            crate::map_layers(&label, &ex.layers, &ex.skipped, arch, &o).map_err(engine_error)?;
        let packing_svg = match opts.packing_svg {
            Some(w) => {
                let m = crate::compile(&ex.layers, arch, &o).map_err(engine_error)?;
                Some(crate::svg::packing_svg(
                    &format!("{label}: packing"),
                    &ex.layers,
                    &m,
                    w,
                ))
            }
            None => None,
        };
        progress.step(2, 3, "sweep");
        let sweep = match &opts.sweep {
            Some(spec) => Some(sweep(&label, &ex.layers, arch, &o, spec).map_err(engine_error)?),
            None => None,
        };
        progress.step(3, 3, "done");
        Ok(XbarOutput {
            map,
            sweep,
            samples: o.samples,
            packing_svg,
        })
    }

    fn section(out: &XbarOutput) -> Section {
        crate::section_from(&out.map, out.packing_svg.clone(), out.sweep.as_ref())
    }

    fn headline(out: &XbarOutput) -> Headline {
        let r = &out.map;
        let mut h = Headline::default()
            .with(
                "crossbars",
                format!("{} of {}", r.crossbars_used, r.crossbars_budget),
            )
            .with("latency", format!("{} cycles", r.latency_cycles));
        if let Some(s) = r.speedup {
            h = h.with("speedup vs ISAAC-like", format!("{s:.2}x"));
        }
        h
    }
}

impl Xbar {
    /// The report's mapping: the arch's default budget, packing map and the paper's sweep
    /// at 1 and the default sample count.
    pub fn report_options(arch: &Arch, label: &str) -> XbarOptions {
        XbarOptions {
            label: label.to_string(),
            packing_svg: Some(400),
            sweep: Some(SweepSpec {
                samples: vec![1, arch.defaults.samples],
                ..SweepSpec::paper()
            }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimkit_engine::Engine;

    #[test]
    fn a_model_without_layers_is_the_users_and_io_is_not() {
        assert_eq!(engine_error(XbarError::NoLayers).exit_code(), 2);
        let io = XbarError::Io(std::io::Error::other("disk"));
        assert_eq!(engine_error(io).exit_code(), 1);
        let g = pimkit_zoo::build("softmax", &[]).unwrap();
        let e = Xbar::run(
            &g,
            &Arch::default(),
            &XbarOptions::default(),
            &mut pimkit_engine::NoProgress,
        )
        .unwrap_err();
        assert!(e.is_input(), "{e}");
    }
}
