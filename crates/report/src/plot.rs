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

macro_rules! draw_lines {
    ($root:expr, $title:expr, $xl:expr, $yl:expr, $series:expr, $xr:expr, $yr:expr) => {{
        let mut chart = ChartBuilder::on(&$root)
            .caption($title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d($xr, $yr)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc($xl)
            .y_desc($yl)
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
            .position(SeriesLabelPosition::UpperLeft)
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
        match (log_x, log_y) {
            (false, false) => draw_lines!(root, title, x_label, y_label, series, lin(xr), lin(yr)),
            (true, false) => draw_lines!(
                root,
                title,
                x_label,
                y_label,
                series,
                (xr.0..xr.1).log_scale(),
                lin(yr)
            ),
            (false, true) => draw_lines!(
                root,
                title,
                x_label,
                y_label,
                series,
                lin(xr),
                (yr.0..yr.1).log_scale()
            ),
            (true, true) => draw_lines!(
                root,
                title,
                x_label,
                y_label,
                series,
                (xr.0..xr.1).log_scale(),
                (yr.0..yr.1).log_scale()
            ),
        }
        root.present().map_err(|e| e.to_string())
    })();
    match res {
        Ok(()) => buf,
        Err(e) => message_svg(title, &format!("plot failed: {e}")),
    }
}

/// Vertical bar chart, one bar per label (labels shortened to 18 characters).
pub fn bar_chart(title: &str, y_label: &str, labels: &[String], values: &[f64]) -> String {
    let n = labels.len().min(values.len());
    if n == 0 {
        return message_svg(title, "no data to plot");
    }
    let ymax = values[..n]
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let width = W.max(40 + 18 * n as u32).min(4000);
    let mut buf = String::new();
    let res: Result<(), String> = (|| {
        let root = SVGBackend::with_string(&mut buf, (width, H)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(110)
            .y_label_area_size(70)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..ymax)
            .map_err(|e| e.to_string())?;
        let short: Vec<String> = labels
            .iter()
            .map(|l| l.chars().take(18).collect())
            .collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(y_label)
            .x_labels(n.min(60))
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => short.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_style(
                ("sans-serif", 11)
                    .into_font()
                    .transform(FontTransform::Rotate90),
            )
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series((0..n).map(|i| {
                let v = if values[i].is_finite() {
                    values[i].max(0.0)
                } else {
                    0.0
                };
                let mut bar = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v),
                    ],
                    palette(0).filled(),
                );
                bar.set_margin(0, 0, 2, 2);
                bar
            }))
            .map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())
    })();
    match res {
        Ok(()) => buf,
        Err(e) => message_svg(title, &format!("plot failed: {e}")),
    }
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
    }
}
