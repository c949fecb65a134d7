//! One top-level layout for every engine's JSON result, and the report's headline row.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// The figures a reader wants first from one engine's run (the report's summary table).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Headline {
    /// (label, value with its unit), e.g. ("crossbars", "412").
    pub figures: Vec<(String, String)>,
}

impl Headline {
    pub fn with(mut self, label: impl Into<String>, value: impl Into<String>) -> Self {
        self.figures.push((label.into(), value.into()));
        self
    }
}

/// An engine's output as the JSON every command and the Python package return: the
/// output's own fields, plus `engine`, `model` and `arch` (unless it has them), and `totals`, `layers` and
/// `notes` (empty when the output has none), so scripts find the same keys everywhere.
pub fn result_json(engine: &str, model: &str, arch: &str, out: &impl Serialize) -> Value {
    let v = serde_json::to_value(out).unwrap_or(Value::Null);
    let mut m = match v {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("result".into(), other);
            m
        }
    };
    // An output that names its model (or arch) itself keeps its own value.
    m.entry("engine").or_insert_with(|| json!(engine));
    m.entry("model").or_insert_with(|| json!(model));
    m.entry("arch").or_insert_with(|| json!(arch));
    for k in ["totals", "layers"] {
        m.entry(k)
            .or_insert_with(|| if k == "layers" { json!([]) } else { json!({}) });
    }
    m.entry("notes").or_insert_with(|| json!([]));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_result_has_the_common_keys_and_keeps_its_own() {
        #[derive(Serialize)]
        struct Out {
            cycles: u64,
            layers: Vec<u32>,
        }
        let v = result_json(
            "puma",
            "zoo:mlp",
            "arch/puma.toml",
            &Out {
                cycles: 7,
                layers: vec![1],
            },
        );
        for k in [
            "engine", "model", "arch", "totals", "layers", "notes", "cycles",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["layers"], json!([1]));
        assert_eq!(v["engine"], "puma");
    }
}
