//! The built-in component libraries (`arch/components/*.toml`, compiled in) and the
//! front ends' `--components PRESET|FILE`.

use crate::Components;
use pimkit_engine::ArchError;
use std::path::Path;

pub const ISAAC: &str = include_str!("../../../arch/components/isaac.toml");
pub const PUMA: &str = include_str!("../../../arch/components/puma.toml");
pub const NEUROSIM: &str = include_str!("../../../arch/components/neurosim.toml");

/// (name, repository path, text) of every preset.
pub const PRESETS: [(&str, &str, &str); 3] = [
    ("isaac", "arch/components/isaac.toml", ISAAC),
    ("puma", "arch/components/puma.toml", PUMA),
    ("neurosim", "arch/components/neurosim.toml", NEUROSIM),
];

/// The preset called `name`.
pub fn preset(name: &str) -> Option<Result<Components, ArchError>> {
    PRESETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, path, text)| pimkit_engine::arch::over_base(text, path, None))
}

/// `spec` is a preset's name or a TOML file; a file is laid over the preset its `base` key
/// names (default `isaac`), key by key, like `--arch` files over their built-in file.
pub fn load(spec: &str) -> Result<Components, ArchError> {
    if let Some(p) = preset(spec) {
        return p;
    }
    let names = || PRESETS.map(|p| p.0).join(", ");
    let path = Path::new(spec);
    let err = |msg: String| ArchError {
        file: spec.to_string(),
        field: None,
        value: None,
        msg,
    };
    if !path.exists() {
        return Err(err(format!(
            "no such file and no such preset; give a component TOML file or one of {}",
            names()
        )));
    }
    if path.is_dir() {
        return Err(err("is a directory; give a component .toml file".into()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(format!("cannot read it ({e}); give a component .toml file")))?;
    // The base preset is read first from the file's own `base` key (a syntax error is
    // reported by the loader below, with its line and column).
    let base = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("base").and_then(|b| b.as_str().map(str::to_string)))
        .unwrap_or_else(|| "isaac".to_string());
    let Some((_, bpath, btext)) = PRESETS.iter().find(|(n, _, _)| *n == base) else {
        return Err(ArchError {
            file: spec.to_string(),
            field: Some("base".into()),
            value: Some(base),
            msg: format!("no such preset; use one of {}", names()),
        });
    };
    pimkit_engine::arch::over_base(btext, bpath, Some((&text, spec)))
}
