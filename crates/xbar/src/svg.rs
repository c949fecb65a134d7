//! SVG packing map: every crossbar as a square, every box as a rectangle coloured by layer.
//! Hand-written SVG with fixed number formatting, so the output is byte-deterministic.

use crate::layer::Layer;
use crate::map::Mapping;
use std::fmt::Write;

/// Fill colour of layer `i`: golden-angle hues, two lightness levels.
pub fn layer_colour(i: usize) -> String {
    let hue = (i as f64 * 137.507_764) % 360.0;
    let light = if i.is_multiple_of(2) { 55 } else { 42 };
    format!("hsl({hue:.1},62%,{light}%)")
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Draw the crossbars of `m` (at most `max_xbars`, the rest counted in the caption).
pub fn packing_svg(title: &str, layers: &[Layer], m: &Mapping, max_xbars: usize) -> String {
    let n = m.packing.crossbars.min(max_xbars);
    let per_row = ((n as f64).sqrt().ceil() as usize).clamp(1, 24);
    let rows_of_xbars = n.div_ceil(per_row).max(1);
    let cell = 44.0;
    let gap = 6.0;
    let top = 46.0;
    let width = per_row as f64 * (cell + gap) + gap;
    let height = top + rows_of_xbars as f64 * (cell + gap) + gap;
    let sx = cell / m.cols as f64;
    let sy = cell / m.rows as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{gap}" y="18" font-size="13">{}</text>"#,
        esc(title)
    );
    let hidden = m.packing.crossbars - n;
    let _ = writeln!(
        s,
        r##"<text x="{gap}" y="36" font-size="10" fill="#444">{} crossbars of {}x{} (budget {}), {} boxes; colour = layer{}</text>"##,
        m.packing.crossbars,
        m.rows,
        m.cols,
        m.budget,
        m.packing.placements.len(),
        if hidden > 0 {
            format!("; {hidden} more crossbars not drawn")
        } else {
            String::new()
        }
    );
    for i in 0..n {
        let x = gap + (i % per_row) as f64 * (cell + gap);
        let y = top + (i / per_row) as f64 * (cell + gap);
        let _ = writeln!(
            s,
            r##"<rect x="{x:.1}" y="{y:.1}" width="{cell:.1}" height="{cell:.1}" fill="#f2f2f2" stroke="#888" stroke-width="0.6"><title>crossbar {i}</title></rect>"##
        );
    }
    for p in &m.packing.placements {
        let i = p.xbar as usize;
        if i >= n {
            continue;
        }
        let x = gap + (i % per_row) as f64 * (cell + gap) + p.x as f64 * sx;
        let y = top + (i / per_row) as f64 * (cell + gap) + p.y as f64 * sy;
        let l = p.item.layer as usize;
        let name = layers.get(l).map(|l| l.name.as_str()).unwrap_or("?");
        let _ = writeln!(
            s,
            r##"<rect x="{x:.2}" y="{y:.2}" width="{:.2}" height="{:.2}" fill="{}" stroke="#222" stroke-width="0.3"><title>{} (layer {l}) piece {} copy {}: {}x{} in crossbar {i}</title></rect>"##,
            p.item.w as f64 * sx,
            p.item.h as f64 * sy,
            layer_colour(l),
            esc(name),
            p.item.piece,
            p.item.copy,
            p.item.h,
            p.item.w,
        );
    }
    s.push_str("</svg>\n");
    s
}
