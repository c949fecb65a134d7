//! Deterministic SVG charts (plotters' SVG backend, no fonts needed: text stays as
//! `<text>` elements). Degenerate input (no points, non-positive values on a log axis)
//! yields a chart with a message instead of an error.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// One named line or point set.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Draw a polyline through the points (otherwise markers only).
    pub line: bool,
}

const W: u32 = 800;
const H: u32 = 500;

fn palette(i: usize) -> RGBColor {
    const C: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    C[i % C.len()]
}

fn message_svg(title: &str, msg: &str) -> String {
    let t = crate::html::escape(title);
    let m = crate::html::escape(msg);
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"120\"><text x=\"10\" y=\"30\" font-size=\"18\">{t}</text><text x=\"10\" y=\"70\" font-size=\"14\">{m}</text></svg>\n"
    )
}

fn range(vals: impl Iterator<Item = f64>, log: bool) -> Option<(f64, f64)> {
    let v: Vec<f64> = vals
        .filter(|x| x.is_finite() && (!log || *x > 0.0))
        .collect();
    if v.is_empty() {
        return None;
    }
    let (mut lo, mut hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    if log {
        lo /= 1.5;
        hi *= 1.5;
    } else {
        let pad = if hi > lo {
            (hi - lo) * 0.05
        } else {
            lo.abs().max(1.0) * 0.1
        };
        lo -= pad;
        hi += pad;
        if lo > 0.0 && lo < (hi - lo) * 0.3 {
            lo = 0.0;
        }
    }
    Some((lo, hi))
}

/// The plot corner the legend covers fewest points in. Positions are fractions of the axis
/// ranges (log-aware); a corner's box spans the outer 40 % of width and of height, about
/// the legend's size with a few series. Ties keep the order upper-left, upper-right,
/// lower-right, lower-left.
fn legend_corner(
    series: &[Series],
    xr: (f64, f64),
    yr: (f64, f64),
    log_x: bool,
    log_y: bool,
) -> SeriesLabelPosition {
    let frac = |v: f64, r: (f64, f64), log: bool| {
        if log {
            (v.ln() - r.0.ln()) / (r.1.ln() - r.0.ln())
        } else {
            (v - r.0) / (r.1 - r.0)
        }
    };
    let pts: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .map(|&(x, y)| (frac(x, xr, log_x), frac(y, yr, log_y)))
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let (near, far) = (0.4, 0.6);
    let corners = [
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::LowerLeft, false, false),
    ];
    let covered = |right: bool, upper: bool| {
        pts.iter()
            .filter(|(x, y)| {
                (if right { *x >= far } else { *x <= near })
                    && (if upper { *y >= far } else { *y <= near })
            })
            .count()
    };
    let mut best = (usize::MAX, SeriesLabelPosition::UpperLeft);
    for (pos, right, upper) in corners {
        let n = covered(right, upper);
        if n < best.0 {
            best = (n, pos);
        }
    }
    best.1
}

macro_rules! draw_lines {
    ($root:expr, $title:expr, $xl:expr, $yl:expr, $series:expr, $xr:expr, $yr:expr, $corner:expr) => {{
        let mut chart = ChartBuilder::on(&$root)
            .caption($title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d($xr, $yr)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            // Only the bold grid: on log axes the light lines crowd into grey bands.
            .light_line_style(TRANSPARENT)
            .x_desc($xl)
            .y_desc($yl)
            .x_label_formatter(&|v| fmt_tick(*v))
            .y_label_formatter(&|v| fmt_tick(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        for (i, s) in $series.iter().enumerate() {
            let color = palette(i);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            if s.line {
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(|e| e.to_string())?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(|e| e.to_string())?;
            } else {
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                    .map_err(|e| e.to_string())?
                    .label(s.name.clone())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
            }
        }
        chart
            .configure_series_labels()
            .position($corner)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
    }};
}

/// Line/scatter chart of several series, each axis linear or logarithmic.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    log_x: bool,
    log_y: bool,
) -> String {
    let xs = range(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.0)),
        log_x,
    );
    let ys = range(
        series.iter().flat_map(|s| s.points.iter().map(|p| p.1)),
        log_y,
    );
    let (Some(xr), Some(yr)) = (xs, ys) else {
        return message_svg(title, "no data to plot");
    };
    let mut buf = String::new();
    let res: Result<(), String> = (|| {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let lin = |r: (f64, f64)| -> RangedCoordf64 { (r.0..r.1).into() };
        // Log axes tick at explicit points: plotters' own choice on a range under a decade
        // or two is one or two labels (a 32-128 core sweep got only "100").
        let xk = log_ticks(xr, series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
        let yk = log_ticks(yr, series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        let corner = || legend_corner(series, xr, yr, log_x, log_y);
        match (log_x, log_y) {
            (false, false) => draw_lines!(
                root,
                title,
                x_label,
                y_label,
                series,
                lin(xr),
                lin(yr),
                corner()
            ),
            (true, false) => draw_lines!(
                root,
                title,
                x_label,
                y_label,
                series,
                (xr.0..xr.1).log_scale().with_key_points(xk.clone()),
                lin(yr),
                corner()
            ),
            (false, true) => draw_lines!(
                root,
                title,
                x_label,
                y_label,
                series,
                lin(xr),
                (yr.0..yr.1).log_scale().with_key_points(yk.clone()),
                corner()
            ),
            (true, true) => draw_lines!(
                root,
                title,
                x_label,
                y_label,
                series,
                (xr.0..xr.1).log_scale().with_key_points(xk.clone()),
                (yr.0..yr.1).log_scale().with_key_points(yk.clone()),
                corner()
            ),
        }
        root.present().map_err(|e| e.to_string())
    })();
    match res {
        Ok(()) => buf,
        Err(e) => message_svg(title, &format!("plot failed: {e}")),
    }
}

/// Tick positions for a log axis over `r`: the data's own values when there are few
/// (a sweep's 32 / 64 / 128), else 1-2-5 steps per decade, thinned to at most ~12.
fn log_ticks(r: (f64, f64), data: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut vals: Vec<f64> = data
        .filter(|v| v.is_finite() && *v >= r.0 && *v <= r.1 && *v > 0.0)
        .collect();
    vals.sort_by(f64::total_cmp);
    vals.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs());
    if !vals.is_empty() && vals.len() <= 8 {
        return vals;
    }
    if !(r.0 > 0.0 && r.1 > r.0) {
        return vec![];
    }
    let decades = (r.1 / r.0).log10();
    let steps: &[f64] = if decades <= 2.5 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let every = if decades > 12.0 {
        (decades / 12.0).ceil() as i32
    } else {
        1
    };
    let mut out = vec![];
    let (lo, hi) = (r.0.log10().floor() as i32, r.1.log10().ceil() as i32);
    for e in lo..=hi {
        if (e - lo) % every != 0 {
            continue;
        }
        for &m in steps {
            let v = m * 10f64.powi(e);
            if v >= r.0 && v <= r.1 {
                out.push(v);
            }
        }
    }
    out
}

/// Compact tick label: 1.5k, 20M, 3.2G, or plain for small magnitudes.
pub fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if x.fract().abs() < 1e-9 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s}{suffix}")
}

/// Vertical bar chart, one bar per label (labels shortened to 24 characters), drawn as
/// plain SVG so that bars and labels line up exactly.
pub fn bar_chart(title: &str, y_label: &str, labels: &[String], values: &[f64]) -> String {
    stacked_bar_chart(title, y_label, labels, &[("", values.to_vec())])
}

/// Vertical bars stacked from `series` (name, one value per label; drawn bottom up in
/// order, with a legend when there is more than one), one bar per label.
pub fn stacked_bar_chart(
    title: &str,
    y_label: &str,
    labels: &[String],
    series: &[(&str, Vec<f64>)],
) -> String {
    use std::fmt::Write;
    let n = series
        .iter()
        .map(|(_, v)| v.len())
        .fold(labels.len(), usize::min);
    if n == 0 || series.is_empty() {
        return message_svg(title, "no data to plot");
    }
    let clean: Vec<Vec<f64>> = series
        .iter()
        .map(|(_, v)| {
            v[..n]
                .iter()
                .map(|v| if v.is_finite() { v.max(0.0) } else { 0.0 })
                .collect()
        })
        .collect();
    let vmax = (0..n)
        .map(|i| clean.iter().map(|v| v[i]).sum::<f64>())
        .fold(0.0f64, f64::max);
    // A "nice" axis top: 1, 2 or 5 times a power of ten.
    let top = if vmax <= 0.0 {
        1.0
    } else {
        let p = 10f64.powf(vmax.log10().floor());
        [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
            .iter()
            .map(|m| m * p)
            .find(|&t| t >= vmax)
            .unwrap_or(10.0 * p)
    };
    let legend = series.len() > 1;
    let (left, right, top_m, bottom) = (80.0, 20.0, if legend { 70.0 } else { 50.0 }, 150.0);
    let bar_w = (700.0 / n as f64).clamp(6.0, 60.0);
    let width = (left + right + bar_w * n as f64).max(420.0);
    let height = 480.0;
    let plot_h = height - top_m - bottom;
    let esc = crate::html::escape;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{:.1}\" y=\"28\" font-size=\"18\" text-anchor=\"middle\">{}</text>\n",
        width / 2.0,
        esc(title)
    );
    if legend {
        for (k, (name, _)) in series.iter().enumerate() {
            let c = palette(k);
            let x = left + 130.0 * k as f64;
            let _ = writeln!(
                s,
                "<rect x=\"{x:.1}\" y=\"40\" width=\"12\" height=\"12\" fill=\"rgb({},{},{})\"/><text x=\"{:.1}\" y=\"51\" font-size=\"12\">{}</text>",
                c.0,
                c.1,
                c.2,
                x + 16.0,
                esc(name)
            );
        }
    }
    for k in 0..=5 {
        let v = top * k as f64 / 5.0;
        let y = top_m + plot_h * (1.0 - k as f64 / 5.0);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
            width - right,
            left - 6.0,
            y + 4.0,
            fmt_tick(v)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"18\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 18 {:.1})\">{}</text>",
        top_m + plot_h / 2.0,
        top_m + plot_h / 2.0,
        esc(y_label)
    );
    for (i, l) in labels[..n].iter().enumerate() {
        let x = left + bar_w * i as f64;
        let mut base = 0.0;
        for (k, v) in clean.iter().enumerate() {
            let h = plot_h * v[i] / top;
            let c = palette(k);
            let what = if legend {
                format!("{l} {}", series[k].0)
            } else {
                l.clone()
            };
            let _ = writeln!(
                s,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"rgb({},{},{})\"><title>{}: {}</title></rect>",
                x + bar_w * 0.1,
                top_m + plot_h - base - h,
                bar_w * 0.8,
                c.0,
                c.1,
                c.2,
                esc(&what),
                fmt_tick(v[i]),
            );
            base += h;
        }
        let short: String = l.chars().take(24).collect();
        let (lx, ly) = (x + bar_w / 2.0 + 4.0, top_m + plot_h + 8.0);
        let _ = writeln!(
            s,
            "<text x=\"{lx:.1}\" y=\"{ly:.1}\" font-size=\"11\" text-anchor=\"end\" transform=\"rotate(-60 {lx:.1} {ly:.1})\">{}</text>",
            esc(&short)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"black\"/><line x1=\"{left}\" y1=\"{top_m}\" x2=\"{left}\" y2=\"{:.1}\" stroke=\"black\"/>\n</svg>",
        top_m + plot_h,
        width - right,
        top_m + plot_h,
        top_m + plot_h
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_chart_is_deterministic_svg_with_legend() {
        let s = vec![Series {
            name: "speedup".into(),
            points: vec![(32.0, 1.0), (64.0, 1.8), (128.0, 3.1)],
            line: true,
        }];
        let a = line_chart("t", "cores", "x", &s, true, false);
        assert_eq!(a, line_chart("t", "cores", "x", &s, true, false));
        assert!(a.contains("<svg") && a.contains("speedup"));
    }

    #[test]
    fn legend_goes_to_the_emptiest_corner() {
        let s = |pts: Vec<(f64, f64)>| Series {
            name: "a".into(),
            points: pts,
            line: false,
        };
        let r = (0.0, 10.0);
        // A Pareto front falling from the upper left: the upper right is empty.
        let front = s(vec![
            (1.0, 9.0),
            (2.0, 8.5),
            (3.0, 5.0),
            (6.0, 2.0),
            (9.0, 1.0),
        ]);
        assert!(matches!(
            legend_corner(&[front], r, r, false, false),
            SeriesLabelPosition::UpperRight
        ));
        // Rising speedup curve: the upper left is empty, kept as the default.
        let rising = s(vec![(1.0, 1.0), (5.0, 5.0), (9.0, 9.0)]);
        assert!(matches!(
            legend_corner(&[rising], r, r, false, false),
            SeriesLabelPosition::UpperLeft
        ));
        // Log axes measure position in decades: 1..1000 puts 500 in the upper third.
        let lg = s(vec![(1.0, 500.0), (500.0, 500.0), (1.0, 1.0)]);
        assert!(matches!(
            legend_corner(&[lg], (1.0, 1000.0), (1.0, 1000.0), true, true),
            SeriesLabelPosition::LowerRight
        ));
    }

    #[test]
    fn log_ticks_use_a_sweeps_values_or_1_2_5_steps() {
        assert_eq!(
            log_ticks((20.0, 200.0), [32.0, 64.0, 128.0, 64.0].into_iter()),
            [32.0, 64.0, 128.0]
        );
        let many = (1..50).map(|i| i as f64 * 3.0);
        assert_eq!(
            log_ticks((2.0, 160.0), many),
            [2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
        let wide = log_ticks((1e-3, 1e9), (0..40).map(|i| 10f64.powi(i % 9)));
        assert!(wide.len() <= 13 && wide.contains(&1.0), "{wide:?}");
    }

    #[test]
    fn log_axis_without_positive_values_gives_message() {
        let s = vec![Series {
            name: "z".into(),
            points: vec![(0.0, 0.0)],
            line: false,
        }];
        assert!(line_chart("t", "x", "y", &s, true, true).contains("no data"));
    }

    #[test]
    fn bar_chart_labels() {
        let svg = bar_chart(
            "time per nest",
            "ns",
            &["n0".into(), "n1".into()],
            &[3.0, 5.0],
        );
        assert!(svg.contains("n1"));
        assert!(
            !svg.contains("<rect x=\"80.0\" y=\"40\""),
            "no legend for one series"
        );
        let st = stacked_bar_chart(
            "cycles",
            "cycles",
            &["a".into(), "b".into()],
            &[("compute", vec![1.0, 2.0]), ("dma", vec![3.0, 0.0])],
        );
        // Legend entries, and each bar's parts named in their tooltips.
        assert!(st.contains(">compute</text>") && st.contains(">dma</text>"));
        assert!(st.contains("<title>a dma: 3</title>"));
        assert_eq!(fmt_tick(20_000_000.0), "20M");
        assert_eq!(fmt_tick(1500.0), "1.5k");
        assert_eq!(fmt_tick(0.25), "0.25");
    }
}

/// Viridis-like colour for `t` in [0, 1] (dark blue -> teal -> yellow).
fn heat_colour(t: f64) -> (u8, u8, u8) {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (253.0, 231.0, 37.0),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = t * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |p: f64, q: f64| (p + (q - p) * f).round() as u8;
    (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Heat map of `values` (one row per y tick, top row first; NaN = empty cell) with the
/// value printed in each cell; colours span `[lo, hi]`.
pub fn heat_map(
    title: &str,
    x_label: &str,
    y_label: &str,
    x_ticks: &[String],
    y_ticks: &[String],
    values: &[Vec<f64>],
    range: (f64, f64),
) -> String {
    use std::fmt::Write;
    let (nx, ny) = (x_ticks.len(), y_ticks.len());
    if nx == 0 || ny == 0 || values.len() != ny || values.iter().any(|r| r.len() != nx) {
        return message_svg(title, "no data to plot");
    }
    let esc = crate::html::escape;
    let (cw, ch) = (90.0, 56.0);
    let (left, top) = (110.0, 60.0);
    let width = left + cw * nx as f64 + 30.0;
    let height = top + ch * ny as f64 + 70.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{:.1}\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
        width / 2.0,
        esc(title)
    );
    let span = if range.1 > range.0 {
        range.1 - range.0
    } else {
        1.0
    };
    for (r, row) in values.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            let (x, y) = (left + cw * c as f64, top + ch * r as f64);
            let (fill, label) = if v.is_finite() {
                let (cr, cg, cb) = heat_colour((v - range.0) / span);
                (
                    format!("rgb({cr},{cg},{cb})"),
                    fmt_tick((v * 1000.0).round() / 1000.0),
                )
            } else {
                ("rgb(230,230,230)".to_string(), "-".to_string())
            };
            let light = v.is_finite() && (v - range.0) / span > 0.6;
            let _ = writeln!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cw:.1}\" height=\"{ch:.1}\" fill=\"{fill}\" stroke=\"white\"/><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"14\" text-anchor=\"middle\" fill=\"{}\">{}</text>",
                x + cw / 2.0,
                y + ch / 2.0 + 5.0,
                if light { "black" } else { "white" },
                esc(&label)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            top + ch * r as f64 + ch / 2.0 + 5.0,
            esc(&y_ticks[r])
        );
    }
    for (c, t) in x_ticks.iter().enumerate() {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"13\" text-anchor=\"middle\">{}</text>",
            left + cw * c as f64 + cw / 2.0,
            top + ch * ny as f64 + 20.0,
            esc(t)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"14\" text-anchor=\"middle\">{}</text>",
        left + cw * nx as f64 / 2.0,
        top + ch * ny as f64 + 50.0,
        esc(x_label)
    );
    let _ = writeln!(
        s,
        "<text x=\"20\" y=\"{:.1}\" font-size=\"14\" text-anchor=\"middle\" transform=\"rotate(-90 20 {:.1})\">{}</text>",
        top + ch * ny as f64 / 2.0,
        top + ch * ny as f64 / 2.0,
        esc(y_label)
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod heat_tests {
    #[test]
    fn heat_map_draws_every_cell_and_refuses_ragged_rows() {
        let svg = super::heat_map(
            "t",
            "x",
            "y",
            &["a".into(), "b".into()],
            &["1".into()],
            &[vec![0.25, f64::NAN]],
            (0.0, 1.0),
        );
        assert_eq!(svg.matches("<rect x=").count(), 2);
        assert!(svg.contains(">0.25<") && svg.contains(">-<"));
        let bad = super::heat_map(
            "t",
            "x",
            "y",
            &["a".into()],
            &["1".into()],
            &[vec![]],
            (0.0, 1.0),
        );
        assert!(bad.contains("no data"));
    }
}
