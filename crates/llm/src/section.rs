//! Tables and plots of an LLM analysis: the terminal/HTML tables, CSV, SVG curves and the
//! report's headline.

use crate::analysis::{DecodePoint, LlmOutput};
use crate::sim::Place;
use pimkit_engine::{Headline, Section};
use pimkit_report::Table;
use pimkit_report::plot::{Series, line_chart, stacked_bar_chart};

fn ms(s: f64) -> String {
    format!("{:.3}", s * 1e3)
}

fn sig(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

/// The policy, and the pipeline when there is one: "all-pim, 80 pipeline stages".
pub fn setting(o: &LlmOutput) -> String {
    match o.options.pipeline {
        0 | 1 => o.policy.name().to_string(),
        p => format!("{}, {p} pipeline stages", o.policy.name()),
    }
}

/// The decode grid: one row per (context, batch).
pub fn decode_table(o: &LlmOutput) -> Table {
    let mut t = Table::new(
        format!("decode step on {} ({})", o.system.name, setting(o)),
        &[
            "context", "batch", "fits", "step ms", "tokens/s", "J/token", "xPU ms", "PIM ms",
            "link ms",
        ],
    );
    for p in &o.decode {
        t.push(vec![
            p.context.to_string(),
            p.batch.to_string(),
            if p.fits { "yes" } else { "no" }.into(),
            ms(p.step_s),
            sig(p.tokens_per_s),
            sig(p.j_per_token),
            ms(p.xpu_s),
            ms(p.pim_s),
            ms(p.link_s),
        ]);
    }
    t
}

/// Prefill + generation per batch.
pub fn generation_table(o: &LlmOutput) -> Table {
    let mut t = Table::new(
        format!(
            "prompt {} then {} generated tokens",
            o.options.prompt, o.options.generate
        ),
        &[
            "batch",
            "fits",
            "prefill ms",
            "decode ms",
            "ms/token",
            "tokens/s",
            "J/token",
            "decode tokens/s",
            "decode J/token",
        ],
    );
    for g in &o.generation {
        t.push(vec![
            g.batch.to_string(),
            if g.fits { "yes" } else { "no" }.into(),
            ms(g.prefill_s),
            ms(g.decode_s),
            ms(g.time_per_token_s),
            sig(g.tokens_per_s),
            sig(g.j_per_token),
            sig(g.decode_tokens_per_s),
            sig(g.decode_j_per_token),
        ]);
    }
    t
}

/// The breakdown of one decode step by class and place.
pub fn breakdown_table(o: &LlmOutput) -> Option<Table> {
    let st = o.breakdown.as_ref()?;
    let mut t = Table::new(
        format!(
            "decode step at context {}, batch {}, by op class",
            st.positions, st.batch
        ),
        &["class", "place", "GOP", "GB", "ms", "mJ", "bound"],
    );
    for c in &st.classes {
        t.push(vec![
            c.class.to_string(),
            place_name(c.place).into(),
            format!("{:.3}", c.ops / 1e9),
            format!("{:.3}", c.bytes / 1e9),
            ms(c.time_s),
            format!("{:.3}", c.energy_j * 1e3),
            c.bound.into(),
        ]);
    }
    Some(t)
}

pub fn place_name(p: Place) -> &'static str {
    match p {
        Place::Xpu => "xpu",
        Place::Pim => "pim",
        Place::Link => "link",
    }
}

/// `value` of each fitting decode point against context, one line per batch.
fn context_curves(
    o: &LlmOutput,
    what: &str,
    y_label: &str,
    value: fn(&DecodePoint) -> f64,
) -> String {
    let series: Vec<Series> = o
        .options
        .batches
        .iter()
        .map(|&b| Series {
            name: format!("batch {b}"),
            points: o
                .decode
                .iter()
                .filter(|p| p.batch == b && p.fits)
                .map(|p| (p.context as f64, value(p)))
                .collect(),
            line: true,
        })
        .collect();
    line_chart(
        &format!("{}: decode {what} on {}", o.model, o.system.name),
        "context length (positions)",
        y_label,
        &series,
        true,
        true,
    )
}

/// Tokens/s against context, one line per batch.
pub fn throughput_svg(o: &LlmOutput) -> String {
    context_curves(o, "throughput", "tokens/s", |p| p.tokens_per_s)
}

/// J/token against context, one line per batch.
pub fn energy_svg(o: &LlmOutput) -> String {
    context_curves(o, "energy", "J/token", |p| p.j_per_token)
}

/// Roofline: each class of the breakdown step at its arithmetic intensity (ops/byte)
/// against its achieved throughput, with the places' ceilings as lines.
pub fn roofline_svg(o: &LlmOutput) -> String {
    let Some(st) = &o.breakdown else {
        return line_chart("roofline", "ops/byte", "TOPS", &[], true, true);
    };
    let mut series = Vec::new();
    let x = &o.system.xpu;
    let ceiling = |name: String, peak: f64, bw: f64| {
        let pts: Vec<(f64, f64)> = [0.01f64, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]
            .iter()
            .map(|i| (*i, (i * bw).min(peak) / 1e12))
            .collect();
        Series {
            name,
            points: pts,
            line: true,
        }
    };
    let n = x.devices as f64;
    series.push(ceiling(
        "xPU ceiling".into(),
        n * x.tflops * 1e12 * x.compute_util,
        n * x.memory_gbs * 1e9 * x.memory_util,
    ));
    if let Some(p) = &o.system.pim {
        let m = p.devices as f64;
        series.push(ceiling(
            "PIM ceiling".into(),
            m * p.tflops * 1e12 * p.util,
            m * p.internal_gbs * 1e9 * p.util,
        ));
    }
    for c in st.classes.iter().filter(|c| c.ops > 0.0 && c.bytes > 0.0) {
        series.push(Series {
            name: format!("{} ({})", c.class, place_name(c.place)),
            points: vec![(c.ops / c.bytes, c.ops / c.time_s / 1e12)],
            line: false,
        });
    }
    line_chart(
        &format!(
            "roofline of a decode step (context {}, batch {})",
            st.positions, st.batch
        ),
        "operations per byte",
        "TOPS",
        &series,
        true,
        true,
    )
}

/// Time of the breakdown step by class, stacked per place.
pub fn breakdown_svg(o: &LlmOutput) -> String {
    let Some(st) = &o.breakdown else {
        return stacked_bar_chart("decode step", "ms", &[], &[]);
    };
    let labels: Vec<String> = st.classes.iter().map(|c| c.class.to_string()).collect();
    let series: Vec<(&str, Vec<f64>)> = [Place::Xpu, Place::Pim, Place::Link]
        .iter()
        .map(|p| {
            (
                place_name(*p),
                st.classes
                    .iter()
                    .map(|c| if c.place == *p { c.time_s * 1e3 } else { 0.0 })
                    .collect(),
            )
        })
        .collect();
    stacked_bar_chart(
        &format!(
            "decode step time by class (context {}, batch {})",
            st.positions, st.batch
        ),
        "ms",
        &labels,
        &series,
    )
}

pub fn section(o: &LlmOutput) -> Section {
    let mut s = Section::new("llm", format!("LLM serving on {}", o.system.name));
    let w = &o.workload;
    s.text(format!(
        "{}: {} layers, {:.2} B FC parameters ({:.1} GB at {} bits), KV cache {:.0} KB per position \
         ({} key/value heads of {}), policy {}; the largest batch that fits {} + {} positions is {}.",
        o.model,
        w.layers,
        w.weight_elems / 1e9,
        o.memory.weight_bytes / 1e9,
        o.options.precision.weight_bits,
        o.memory.kv_bytes_per_position / 1e3,
        w.kv_heads,
        w.head_dim,
        setting(o),
        o.options.prompt,
        o.options.generate,
        o.memory.max_batch
    ));
    for n in &o.notes {
        s.note(n.clone());
    }
    s.table(generation_table(o));
    s.table(decode_table(o));
    if let Some(t) = breakdown_table(o) {
        s.table(t);
    }
    s.svg(
        "llm_throughput.svg",
        "decode tokens/s against context",
        throughput_svg(o),
    );
    s.svg(
        "llm_energy.svg",
        "decode J/token against context",
        energy_svg(o),
    );
    s.svg(
        "llm_roofline.svg",
        "roofline of one decode step",
        roofline_svg(o),
    );
    s.svg(
        "llm_breakdown.svg",
        "decode step time by class and place",
        breakdown_svg(o),
    );
    s.json = pimkit_engine::result_json("llm", &o.model, &o.arch, o);
    s
}

pub fn headline(o: &LlmOutput) -> Headline {
    let best = o
        .generation
        .iter()
        .filter(|g| g.fits)
        .max_by(|a, b| a.tokens_per_s.total_cmp(&b.tokens_per_s));
    let h = Headline::default()
        .with("system", o.system.name.clone())
        .with("max batch", o.memory.max_batch.to_string());
    match best {
        Some(g) => h
            .with(
                "tokens/s",
                format!("{} (batch {})", sig(g.tokens_per_s), g.batch),
            )
            .with("J/token", sig(g.j_per_token)),
        None => h.with("tokens/s", "no batch fits".to_string()),
    }
}

/// The output as JSON in the common layout.
pub fn json(o: &LlmOutput) -> serde_json::Value {
    pimkit_engine::result_json("llm", &o.model, &o.arch, o)
}

/// One row per (model, system): the headline figures.
pub fn summary_table(outs: &[LlmOutput]) -> Table {
    let mut t = Table::new(
        "models on systems",
        &[
            "model",
            "system",
            "policy",
            "weights GB",
            "max batch",
            "best tokens/s",
            "at batch",
            "J/token",
        ],
    );
    for o in outs {
        let best = o
            .generation
            .iter()
            .filter(|g| g.fits)
            .max_by(|a, b| a.tokens_per_s.total_cmp(&b.tokens_per_s));
        t.push(vec![
            o.model.clone(),
            o.system.name.clone(),
            setting(o),
            format!("{:.1}", o.memory.weight_bytes / 1e9),
            o.memory.max_batch.to_string(),
            best.map_or("-".into(), |g| sig(g.tokens_per_s)),
            best.map_or("-".into(), |g| g.batch.to_string()),
            best.map_or("-".into(), |g| sig(g.j_per_token)),
        ]);
    }
    t
}

/// A folder name for one (model, system) result.
pub fn folder_name(o: &LlmOutput) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}__{}", clean(&o.model), clean(&o.system.name))
}

/// result.json, the CSV tables and the SVG curves in `dir`.
pub fn write_dir(o: &LlmOutput, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
    let mut files = vec![
        (
            "result.json",
            serde_json::to_string_pretty(&json(o)).map_err(std::io::Error::other)? + "\n",
        ),
        ("decode.csv", decode_table(o).to_csv()),
        ("generation.csv", generation_table(o).to_csv()),
        ("throughput.svg", throughput_svg(o)),
        ("energy.svg", energy_svg(o)),
        ("roofline.svg", roofline_svg(o)),
        ("breakdown.svg", breakdown_svg(o)),
    ];
    if let Some(t) = breakdown_table(o) {
        files.push(("breakdown.csv", t.to_csv()));
    }
    for (name, text) in &files {
        pimkit_ir::fsio::write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok(files.iter().map(|(n, _)| n.to_string()).collect())
}
