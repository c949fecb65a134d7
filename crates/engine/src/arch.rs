//! The one architecture-file loader. Every engine's hardware description is a TOML file
//! under `arch/` whose defaults cite their sources; the built-in file is compiled in, and
//! a user's `--arch FILE` is laid over it key by key (a file that sets only
//! `[crossbar] rows = 256` changes only that). Unknown keys, wrong types and values
//! outside each field's documented range are errors naming the file, the field, the value
//! and the allowed range.

use serde::de::DeserializeOwned;
use std::fmt;
use std::path::Path;

/// A hardware description loaded from TOML.
pub trait ArchSpec: DeserializeOwned {
    /// The built-in file's text (`include_str!` of the file under `arch/`).
    const DEFAULT_TOML: &'static str;
    /// That file's path in the repository, named in errors about it.
    const DEFAULT_PATH: &'static str;
    /// Check every field against its documented bounds, recording problems in `c`.
    fn check(&self, c: &mut Checks);
}

/// The problems [`ArchSpec::check`] found; the first is reported.
#[derive(Default, Debug)]
pub struct Checks {
    problems: Vec<(String, Option<String>, String)>,
}

impl Checks {
    /// Record that `field` has `value`, which is not `allowed` (what would be).
    pub fn fail(
        &mut self,
        field: impl Into<String>,
        value: impl fmt::Display,
        allowed: impl Into<String>,
    ) {
        self.problems
            .push((field.into(), Some(value.to_string()), allowed.into()));
    }
    /// Record that `field` is wrong (`msg` says how and what would be right).
    pub fn fail_field(&mut self, field: impl Into<String>, msg: impl Into<String>) {
        self.problems.push((field.into(), None, msg.into()));
    }
    /// An integer in `lo..=hi`.
    pub fn int_in(&mut self, field: &str, v: u64, lo: u64, hi: u64) {
        if !(lo..=hi).contains(&v) {
            self.fail(field, v, format!("use {lo}..={hi}"));
        }
    }
    /// A finite number in `lo..=hi` (NaN fails).
    pub fn num_in(&mut self, field: &str, v: f64, lo: f64, hi: f64) {
        if !(v >= lo && v <= hi) {
            self.fail(field, v, format!("use a number in [{lo}, {hi}]"));
        }
    }
    /// A finite number in `(0, hi]`.
    pub fn positive(&mut self, field: &str, v: f64, hi: f64) {
        if !(v > 0.0 && v <= hi) {
            self.fail(field, v, format!("use a number in (0, {hi}]"));
        }
    }
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
    /// The first problem as an error about `file`.
    pub fn into_result(self, file: &str) -> Result<(), ArchError> {
        match self.problems.into_iter().next() {
            None => Ok(()),
            Some((field, value, allowed)) => Err(ArchError {
                file: file.to_string(),
                field: Some(field),
                value,
                msg: allowed,
            }),
        }
    }
}

/// What is wrong with an architecture file, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchError {
    /// The file (or the built-in file's repository path).
    pub file: String,
    /// The field (`crossbar.rows`), or `line L, column C` for syntax errors.
    pub field: Option<String>,
    /// The value found.
    pub value: Option<String>,
    /// What is wrong and what would be right.
    pub msg: String,
}

impl fmt::Display for ArchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file)?;
        match (&self.field, &self.value) {
            (Some(k), Some(v)) => write!(f, "{k} = {v}: {}", self.msg),
            (Some(k), None) => write!(f, "{k}: {}", self.msg),
            _ => f.write_str(&self.msg),
        }
    }
}

impl std::error::Error for ArchError {}

/// The built-in architecture (the file under `arch/` compiled in).
pub fn builtin<A: ArchSpec>() -> Result<A, ArchError> {
    parse_over_default(None, A::DEFAULT_PATH)
}

/// The built-in architecture overlaid with `file` when one is given.
pub fn load<A: ArchSpec>(file: Option<&Path>) -> Result<A, ArchError> {
    let Some(path) = file else {
        return builtin();
    };
    let name = path.display().to_string();
    if path.is_dir() {
        return Err(ArchError {
            file: name,
            field: None,
            value: None,
            msg: "is a directory; give an architecture .toml file".into(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| ArchError {
        file: name.clone(),
        field: None,
        value: None,
        msg: format!("cannot read it ({e}); give an architecture .toml file"),
    })?;
    parse_over_default(Some(&text), &name)
}

/// `text` (named `name` in errors) overlaid on the built-in architecture.
pub fn from_str<A: ArchSpec>(text: &str, name: &str) -> Result<A, ArchError> {
    parse_over_default(Some(text), name)
}

/// Another built-in file of the same kind (`base`, named `base_name`: a preset such as
/// `arch/components/puma.toml`) instead of [`ArchSpec::DEFAULT_TOML`], overlaid with
/// `overlay` (its text and name) when given, and checked like any other file.
pub fn over_base<A: ArchSpec>(
    base: &str,
    base_name: &str,
    overlay: Option<(&str, &str)>,
) -> Result<A, ArchError> {
    parse_over(base, base_name, overlay)
}

fn parse_over_default<A: ArchSpec>(text: Option<&str>, name: &str) -> Result<A, ArchError> {
    parse_over(A::DEFAULT_TOML, A::DEFAULT_PATH, text.map(|t| (t, name)))
}

fn parse_over<A: ArchSpec>(
    base: &str,
    base_name: &str,
    top: Option<(&str, &str)>,
) -> Result<A, ArchError> {
    let mut merged = parse_table(base, base_name)?;
    let name = top.map_or(base_name, |(_, n)| n);
    let text = top.map(|(t, _)| t);
    if let Some(t) = text {
        overlay(&mut merged, parse_table(t, name)?);
    }
    // serde_path_to_error names the key a type error is about (`vpu.lanes`).
    let a: A = serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(
        |e: serde_path_to_error::Error<toml::de::Error>| {
            let path = e.path().to_string();
            ArchError {
                file: name.to_string(),
                field: (path != ".").then_some(path),
                value: None,
                msg: one_line(e.inner().message()),
            }
        },
    )?;
    let mut c = Checks::default();
    a.check(&mut c);
    c.into_result(name)?;
    Ok(a)
}

fn parse_table(text: &str, name: &str) -> Result<toml::Table, ArchError> {
    text.parse::<toml::Table>().map_err(|e| {
        let at = e.span().map(|s| {
            let before = &text[..s.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}")
        });
        ArchError {
            file: name.to_string(),
            field: at,
            value: None,
            msg: format!("{}; the file must be TOML", one_line(e.message())),
        }
    })
}

/// Lay `top`'s keys over `base`: tables merge recursively, anything else replaces.
fn overlay(base: &mut toml::Table, top: toml::Table) {
    for (k, v) in top {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(t)) => overlay(b, t),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn one_line(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 200 {
        format!("{}...", s.chars().take(200).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Demo {
        name: String,
        grid: Grid,
    }
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Grid {
        rows: u64,
        cols: u64,
    }
    impl ArchSpec for Demo {
        const DEFAULT_TOML: &'static str = "name = \"demo\"\n[grid]\nrows = 128\ncols = 128\n";
        const DEFAULT_PATH: &'static str = "arch/demo.toml";
        fn check(&self, c: &mut Checks) {
            c.int_in("grid.rows", self.grid.rows, 1, 65536);
            c.int_in("grid.cols", self.grid.cols, 1, 65536);
        }
    }

    #[test]
    fn a_file_overrides_only_its_keys() {
        let d: Demo = from_str("[grid]\nrows = 256\n", "mine.toml").unwrap();
        assert_eq!(
            (d.name.as_str(), d.grid.rows, d.grid.cols),
            ("demo", 256, 128)
        );
    }

    #[test]
    fn errors_name_file_field_value_and_range() {
        let e = from_str::<Demo>("[grid]\ncols = 0\n", "mine.toml").unwrap_err();
        assert_eq!(e.to_string(), "mine.toml: grid.cols = 0: use 1..=65536");
        let e = from_str::<Demo>("[grid]\nrows = 9223372036854775807\n", "m.toml").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("m.toml: grid.rows = 9223372036854775807: "),
            "{e}"
        );
        let e = from_str::<Demo>("[grid]\nrowz = 3\n", "m.toml").unwrap_err();
        assert!(
            e.to_string().starts_with("m.toml: ") && e.msg.contains("rowz"),
            "{e}"
        );
        let e = from_str::<Demo>("[grid]\nrows = \"many\"\n", "m.toml").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("grid.rows"), "{e}");
        let e = from_str::<Demo>("[grid\nrows = 3\n", "m.toml").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("line 1, column 6"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn missing_directories_and_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = load::<Demo>(Some(dir.path())).unwrap_err();
        assert!(e.msg.contains("is a directory"), "{e}");
        let e = load::<Demo>(Some(&dir.path().join("none.toml"))).unwrap_err();
        assert!(e.to_string().contains("none.toml: cannot read it"), "{e}");
        assert_eq!(load::<Demo>(None).unwrap().grid.rows, 128);
    }
}

/// The architecture of an engine that runs on this host and has no hardware file (the
/// loops engine times nests natively). Its TOML is empty; any key in a given file is an
/// error naming it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostArch {}

impl ArchSpec for HostArch {
    const DEFAULT_TOML: &'static str = "";
    const DEFAULT_PATH: &'static str = "host";
    fn check(&self, _: &mut Checks) {}
}

#[cfg(test)]
mod host_arch_tests {
    use super::*;

    #[test]
    fn the_host_has_no_keys() {
        assert_eq!(builtin::<HostArch>().unwrap(), HostArch {});
        let e = from_str::<HostArch>("[crossbar]\nrows = 3\n", "x.toml").unwrap_err();
        assert!(e.to_string().contains("x.toml"), "{e}");
    }
}
