use crate::{Block, Report};
use std::fmt::Write;

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
h1{border-bottom:2px solid #444}h2{margin-top:2em;border-bottom:1px solid #aaa}\
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}th,td{border:1px solid #ccc;padding:2px 8px;text-align:right}\
th{background:#eee}td:first-child,th:first-child{text-align:left}caption{font-weight:bold;text-align:left;padding:4px 0}\
.note{background:#fff6d5;border-left:4px solid #e0b000;padding:6px 10px}figure{margin:1em 0}figcaption{font-size:0.9em;color:#555}\
nav a{margin-right:1em}details{margin:1em 0}summary{cursor:pointer;font-weight:bold}\
.summary td{text-align:left}.summary td.status{color:#a05000}\
@media (max-width:800px){body{margin:1em auto}table{font-size:0.8em}}svg{max-width:100%;height:auto}";

/// Tables longer than this are collapsed (`<details>`) so a page reads at a glance.
const COLLAPSE_ROWS: usize = 12;

/// Self-contained HTML: styles and SVG inline, no scripts, no external resources.
pub(crate) fn render(r: &Report) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n<nav>",
        escape(&r.title),
        escape(&r.title)
    );
    for s in &r.sections {
        let _ = write!(h, "<a href=\"#{}\">{}</a>", escape(&s.id), escape(&s.title));
    }
    h.push_str("</nav>\n");
    summary(&mut h, r);
    for s in &r.sections {
        let _ = writeln!(
            h,
            "<section id=\"{}\"><h2>{}</h2>",
            escape(&s.id),
            escape(&s.title)
        );
        for b in &s.blocks {
            match b {
                Block::Text(t) => {
                    let _ = writeln!(h, "<p>{}</p>", escape(t));
                }
                Block::Note(t) => {
                    let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(t));
                }
                Block::Table(t) => {
                    let collapse = t.rows.len() > COLLAPSE_ROWS;
                    if collapse {
                        let _ = write!(
                            h,
                            "<details><summary>{} ({} rows)</summary>",
                            escape(&t.title),
                            t.rows.len()
                        );
                    }
                    let _ = write!(h, "<table><caption>{}</caption><tr>", escape(&t.title));
                    for c in &t.headers {
                        let _ = write!(h, "<th>{}</th>", escape(c));
                    }
                    h.push_str("</tr>\n");
                    for row in &t.rows {
                        h.push_str("<tr>");
                        for c in row {
                            let _ = write!(h, "<td>{}</td>", escape(c));
                        }
                        h.push_str("</tr>\n");
                    }
                    h.push_str("</table>\n");
                    if collapse {
                        h.push_str("</details>\n");
                    }
                }
                Block::Svg { caption, svg, .. } => {
                    // Drop the XML prolog so the SVG can sit inline.
                    let body = svg.find("<svg").map(|i| &svg[i..]).unwrap_or(svg);
                    let _ = writeln!(
                        h,
                        "<figure>{body}<figcaption>{}</figcaption></figure>",
                        escape(caption)
                    );
                }
            }
        }
        h.push_str("</section>\n");
    }
    h.push_str("</body></html>\n");
    h
}

/// The summary table: one row per engine run, its headline figures, a link to its section.
fn summary(h: &mut String, r: &Report) {
    if r.summary.is_empty() {
        return;
    }
    h.push_str("<table class=\"summary\"><caption>Summary</caption><tr><th>engine</th><th>model</th><th>headline</th></tr>\n");
    for row in &r.summary {
        let figures = if row.figures.is_empty() {
            format!("<td class=\"status\">{}</td>", escape(&row.status))
        } else {
            let f: Vec<String> = row
                .figures
                .iter()
                .map(|(k, v)| format!("{}: <b>{}</b>", escape(k), escape(v)))
                .collect();
            format!("<td>{}</td>", f.join(" &middot; "))
        };
        let _ = writeln!(
            h,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td>{figures}</tr>",
            escape(&row.section),
            escape(&row.engine),
            escape(&row.model)
        );
    }
    h.push_str("</table>\n");
}
