//! Each analysis's section, with the settings the report uses. Every engine goes through
//! its [`Engine`] implementation; the NAS is the exception: it searches a space of
//! networks, not a given model, so it is called as a library (docs/architecture.md).

use super::Analysis;
use pimkit_engine::{Engine, EngineError, Headline, NoProgress, Section};
use pimkit_ir::Graph;

type Sectioned = Result<(Section, Option<Headline>), EngineError>;

/// One engine through the contract: its section and its summary row's figures.
fn via_engine<E: Engine>(g: &Graph, arch: &E::Arch, opts: &E::Options) -> Sectioned {
    let out = E::run(g, arch, opts, &mut NoProgress)?;
    Ok((E::section(&out), Some(E::headline(&out))))
}

/// The section of `analysis` on `g` (loaded from `spec`).
pub fn section(analysis: Analysis, spec: &str, g: &Graph) -> Sectioned {
    match analysis {
        Analysis::Model => Ok((super::model_section(spec, g), None)),
        Analysis::Loops => loops(g),
        Analysis::Offload => offload(g),
        Analysis::Xbar => xbar(g),
        Analysis::Puma => puma(g),
        Analysis::Vpu => vpu(g),
        Analysis::Nas => nas().map(|s| (s, None)),
        Analysis::Accuracy => accuracy(spec, g),
        Analysis::Cost => cost(g),
        Analysis::Llm => llm(g),
    }
}

/// LLM serving of a decoder with its KV cache on DGX H100 with and without AttAcc's
/// bank-level PIM: both systems' tables in one section, AttAcc's headline.
fn llm(g: &Graph) -> Sectioned {
    let opts = pimkit_llm::LlmOptions {
        contexts: vec![1024, 4096, 16384],
        batches: vec![1, 16, 64],
        generate: 32,
        ..Default::default()
    };
    let base = pimkit_llm::system::load("dgx-h100").map_err(EngineError::input)?;
    let pim = pimkit_llm::system::load("dgx-h100-attacc-bank").map_err(EngineError::input)?;
    let out_base = pimkit_llm::Llm::run(g, &base, &opts, &mut NoProgress)?;
    let out_pim = pimkit_llm::Llm::run(g, &pim, &opts, &mut NoProgress)?;
    let mut s = pimkit_llm::Llm::section(&out_pim);
    let b = pimkit_llm::Llm::section(&out_base);
    s.title = format!(
        "LLM serving: {} on dgx-h100 and dgx-h100-attacc-bank",
        g.name
    );
    s.text("The same decoder on DGX H100 alone (xpu):");
    for block in b.blocks {
        if let pimkit_report::Block::Svg { file, caption, svg } = block {
            s.blocks.push(pimkit_report::Block::Svg {
                file: file.replace("llm_", "llm_xpu_"),
                caption: format!("{caption} (dgx-h100)"),
                svg,
            });
        } else {
            s.blocks.push(block);
        }
    }
    s.json = serde_json::json!([
        pimkit_llm::section::json(&out_pim),
        pimkit_llm::section::json(&out_base)
    ]);
    s.note(
        "A small grid (contexts 1024, 4096, 16384; batches 1, 16, 64; 32 generated tokens) to keep the \
         report quick; `pimkit llm MODEL --system ...` runs any grid and system (docs/llm.md).",
    );
    Ok((s, Some(pimkit_llm::Llm::headline(&out_pim))))
}

/// Hardware cost of the crossbar mapping: ISAAC's component library on 128 x 128 arrays of
/// 2-bit cells in differential pairs (arch/rram-128-2bit.toml), table counts.
fn cost(g: &Graph) -> Sectioned {
    let arch = pimkit_xbar::Arch::from_toml_str(pimkit_xbar::arch::RRAM_128_2BIT_TOML)
        .map_err(pimkit_xbar::engine::engine_error)?;
    let lib =
        pimkit_xbar::cost::load_components("isaac").map_err(pimkit_xbar::engine::engine_error)?;
    let mut opts = pimkit_xbar::cost::CostOptions::new(lib);
    opts.map.label = g.name.clone();
    via_engine::<pimkit_xbar::cost::Cost>(g, &arch, &opts)
}

/// Timed runs per nest in the report's profile.
const REPORT_PROFILE_RUNS: usize = 3;

/// Loop nests of the model with native per-nest timings.
fn loops(g: &Graph) -> Sectioned {
    let opts = pimkit_loops::LoopsOptions {
        profile: Some(pimkit_loops::ProfileOptions {
            runs: REPORT_PROFILE_RUNS,
            ..Default::default()
        }),
        ..Default::default()
    };
    via_engine::<pimkit_loops::Loops>(g, &pimkit_engine::HostArch {}, &opts)
}

/// Host-vs-PIM placement per nest: this machine (calibration cached) and the paper's
/// reference host side by side.
fn offload(g: &Graph) -> Sectioned {
    let opts = pimkit_offload::OffloadOptions {
        host: pimkit_offload::HostChoice::Measured(pimkit_offload::host::default_cache_path()),
        with_reference: true,
        ..Default::default()
    };
    via_engine::<pimkit_offload::Offload>(g, &pimkit_offload::PimArch::default(), &opts)
}

/// Crossbar mapping (RNC) at the architecture file's default budget.
fn xbar(g: &Graph) -> Sectioned {
    let arch = pimkit_xbar::Arch::default();
    let opts = pimkit_xbar::Xbar::report_options(&arch, &g.name);
    via_engine::<pimkit_xbar::Xbar>(g, &arch, &opts)
}

/// PUMA compile + simulate (exact arithmetic), layer by layer when the whole network
/// does not run as one program.
fn puma(g: &Graph) -> Sectioned {
    let opts = pimkit_puma::PumaOptions {
        per_layer: pimkit_puma::PerLayer::Fallback,
        ..Default::default()
    };
    via_engine::<pimkit_puma::Puma>(g, &pimkit_puma::Arch::default(), &opts)
}

/// The model on the simulated VPUs (a float model quantized first, noted), then quick
/// roofline sweeps.
fn vpu(g: &Graph) -> Sectioned {
    let arch = pimkit_vpu::Arch::default();
    let opts = pimkit_vpu::VpuOptions {
        quantize_float: true,
        ..Default::default()
    };
    let (mut s, h) = via_engine::<pimkit_vpu::Vpu>(g, &arch, &opts)?;
    let sweeps = pimkit_vpu::report::build_section(&arch, None, true)
        .map_err(|e| EngineError::input(e.to_string()))?;
    s.blocks.extend(sweeps.blocks);
    Ok((s, h))
}

/// Population and generations of the report's NAS: a few seconds, enough to show the
/// front's shape; `pimkit xbar nas` runs the full search (50 x 100 by default).
const REPORT_NAS: (usize, usize) = (24, 12);

/// A short NSGA-II search over the MobileNetV3-small space at the base network's
/// crossbar count (RNC's Fig. 10 setting at 1x), accuracy from the proxy.
fn nas() -> Result<Section, EngineError> {
    let space = pimkit_nas::Space::load("mbv3-small").map_err(EngineError::input)?;
    let mut cfg = pimkit_nas::SearchConfig::rnc_default(space);
    (cfg.nsga.pop, cfg.nsga.gens) = REPORT_NAS;
    let r = pimkit_nas::search(&cfg, &mut |_| {}).map_err(EngineError::input)?;
    let mut s = pimkit_nas::report_section(&[r]);
    s.note(format!(
        "A short search (population {}, {} generations) to keep the report quick; \
         `pimkit xbar nas -o DIR` runs the full one (--pop 50 --gens 100, --budget 0.8,1,1.2).",
        REPORT_NAS.0, REPORT_NAS.1
    ));
    Ok(s)
}

/// Trials and inputs of the report's accuracy study: a few seconds on a small network;
/// `pimkit xbar accuracy` runs any size.
const REPORT_ACCURACY: (usize, usize) = (2, 2);

/// Analog accuracy on ISAAC/PUMA-style 2-bit cells (arch/rram-128-2bit.toml) with
/// calibrated ADC ranges: a 3 x 3 sweep of ADC bits x variation.
fn accuracy(spec: &str, g: &Graph) -> Sectioned {
    use pimkit_xbar::accuracy::{Accuracy, AccuracyOptions, AccuracyRun, InputSource};
    let arch = pimkit_engine::arch::from_str::<pimkit_xbar::Arch>(
        pimkit_xbar::arch::RRAM_128_2BIT_TOML,
        "arch/rram-128-2bit.toml",
    )?;
    let (trials, n) = REPORT_ACCURACY;
    let run = AccuracyRun {
        label: crate::model_label(spec),
        options: AccuracyOptions {
            trials,
            seed: arch.defaults.seed,
            adc_range: Some(pimkit_analog::AdcRange::Calibrated),
            sweep: vec![
                ("adc_bits".into(), vec![4.0, 6.0, 8.0]),
                ("variation".into(), vec![0.0, 0.05, 0.1]),
            ],
            // Priced as `xbar accuracy` prices by default (the quality-vs-energy front).
            components: Some(
                pimkit_xbar::cost::load_components("isaac")
                    .map_err(pimkit_xbar::engine::engine_error)?,
            ),
            ..Default::default()
        },
        inputs: InputSource::Random { n, seed: 0 },
        labels: None,
    };
    let (mut s, h) = via_engine::<Accuracy>(g, &arch, &run)?;
    s.note(format!(
        "A short study ({trials} trials, {n} random inputs, calibrated ADC ranges) to keep the \
         report quick; `pimkit xbar accuracy MODEL --arch arch/rram-128-2bit.toml --calibrate-adc \
         --sweep ...` runs any setting."
    ));
    Ok((s, h))
}
