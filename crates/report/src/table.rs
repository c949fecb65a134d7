use comfy_table::{ContentArrangement, Table as Comfy, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

/// A titled table of strings: printed on the terminal, written as CSV, rendered in HTML.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Table {
    pub title: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(title: impl Into<String>, headers: &[&str]) -> Self {
        Table {
            title: title.into(),
            headers: headers.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// Box-drawn table for the terminal, title on the line above.
    pub fn to_terminal(&self) -> String {
        let mut t = Comfy::new();
        t.load_style(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(self.headers.clone());
        for r in &self.rows {
            t.add_row(r.clone());
        }
        if self.title.is_empty() {
            format!("{t}\n")
        } else {
            format!("{}\n{t}\n", self.title)
        }
    }

    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        // Writing strings to a Vec cannot fail.
        let _ = w.write_record(&self.headers);
        for r in &self.rows {
            let _ = w.write_record(r);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_commas() {
        let mut t = Table::new("t", &["a", "b"]);
        t.push(vec!["x,y".into(), "2".into()]);
        assert_eq!(t.to_csv(), "a,b\n\"x,y\",2\n");
        assert!(t.to_terminal().contains("x,y"));
    }
}
