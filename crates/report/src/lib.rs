//! Output formats shared by every engine: a [`Table`] prints to the terminal and to CSV,
//! [`plot`] draws deterministic SVG charts, and a [`Report`] of [`Section`]s becomes one
//! self-contained HTML page plus `report.json`.

mod html;
pub mod plot;
mod table;

pub use table::Table;

/// Create an output directory and its parents; the error names the directory, and a
/// regular file in the way gets its own message (used by every command that writes one).
pub fn create_out_dir(dir: &std::path::Path) -> std::io::Result<()> {
    if dir.exists() && !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "cannot create output directory '{}': a file of that name exists; pass a directory path",
                dir.display()
            ),
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot create output directory '{}': {e}", dir.display()),
        )
    })
}

use serde::Serialize;
use std::path::Path;

/// One piece of a section, in display order.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Block {
    /// A paragraph of plain text.
    Text(String),
    /// A notice the reader must not miss: a model used instead of a measurement, a deviation.
    Note(String),
    Table(Table),
    /// An SVG figure, inlined in the HTML and also written as `file`.
    Svg {
        file: String,
        caption: String,
        svg: String,
    },
}

/// One engine's (or the model's) part of the report.
#[derive(Clone, Debug, Serialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub blocks: Vec<Block>,
    /// Machine-readable results of this section, copied into report.json.
    pub json: serde_json::Value,
}

impl Section {
    pub fn new(id: impl Into<String>, title: impl Into<String>) -> Self {
        Section {
            id: id.into(),
            title: title.into(),
            blocks: Vec::new(),
            json: serde_json::Value::Null,
        }
    }
    pub fn text(&mut self, s: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Text(s.into()));
        self
    }
    pub fn note(&mut self, s: impl Into<String>) -> &mut Self {
        self.blocks.push(Block::Note(s.into()));
        self
    }
    pub fn table(&mut self, t: Table) -> &mut Self {
        self.blocks.push(Block::Table(t));
        self
    }
    pub fn svg(
        &mut self,
        file: impl Into<String>,
        caption: impl Into<String>,
        svg: String,
    ) -> &mut Self {
        self.blocks.push(Block::Svg {
            file: file.into(),
            caption: caption.into(),
            svg,
        });
        self
    }
}

/// A whole report: written as a directory of index.html, report.json, SVG and CSV files.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub title: String,
    pub sections: Vec<Section>,
}

impl Report {
    pub fn new(title: impl Into<String>) -> Self {
        Report {
            title: title.into(),
            sections: Vec::new(),
        }
    }

    /// The JSON document: `{ "title": .., "sections": { id: json, .. } }`.
    pub fn json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for s in &self.sections {
            m.insert(s.id.clone(), s.json.clone());
        }
        serde_json::json!({ "title": self.title, "sections": m })
    }

    /// Write index.html (SVG inline), report.json, every SVG and every table as CSV
    /// (`<section>-<n>.csv`).
    pub fn write_dir(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        // Every file is renamed into place when complete (never a half-written report).
        let write = pimkit_ir::fsio::write_atomic;
        write(&dir.join("index.html"), html::render(self).as_bytes())?;
        write(
            &dir.join("report.json"),
            (serde_json::to_string_pretty(&self.json())? + "\n").as_bytes(),
        )?;
        let mut used = std::collections::HashSet::new();
        for s in &self.sections {
            let mut n = 0;
            for b in &s.blocks {
                match b {
                    Block::Svg { file, svg, .. } => {
                        // Two sections may name a figure alike (same engine, two models).
                        let name = if used.insert(file.clone()) {
                            file.clone()
                        } else {
                            format!("{}-{file}", s.id)
                        };
                        write(&dir.join(name), svg.as_bytes())?
                    }
                    Block::Table(t) => {
                        n += 1;
                        write(
                            &dir.join(format!("{}-{n}.csv", s.id)),
                            t.to_csv().as_bytes(),
                        )?;
                    }
                    Block::Text(_) | Block::Note(_) => {}
                }
            }
        }
        Ok(())
    }
}
