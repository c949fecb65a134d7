//! Entry parameters: declared specs with defaults, `NAME?k=v&...` parsing and typed,
//! validated access. Every bad value is an error naming the entry, the parameter and
//! what was expected.

use crate::ZooError;
use std::collections::BTreeMap;

/// One parameter an entry accepts, with its default (as text) and a help line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: String,
    pub help: &'static str,
}

/// Shorthand constructor used by the entry tables.
pub(crate) fn spec(name: &'static str, default: impl ToString, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        default: default.to_string(),
        help,
    }
}

/// Parameters every entry accepts (appended to each entry's own list).
pub(crate) fn common_specs() -> Vec<ParamSpec> {
    vec![
        spec("seed", 0, "seed of the deterministic random weights"),
        spec(
            "weights",
            "random",
            "random: seeded random weights; none: shape-only constants (no data, nothing runs, \
             but full-size models map instantly)",
        ),
    ]
}

/// Split `"NAME?k=v&k2=v2"` into the entry name and its key/value pairs.
pub fn parse_spec(spec: &str) -> Result<(String, Vec<(String, String)>), ZooError> {
    let bad = |msg: String| ZooError::BadSpec {
        spec: spec.to_string(),
        msg,
    };
    let (name, query) = match spec.split_once('?') {
        Some((n, q)) => (n, q),
        None => (spec, ""),
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(bad(
            "the entry name is empty (expected NAME?k=v&k2=v2)".into()
        ));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for part in query.split('&').filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(bad(format!("'{part}' is not of the form key=value")));
        };
        let k = k.trim();
        if k.is_empty() {
            return Err(bad(format!("'{part}' has an empty key")));
        }
        if out.iter().any(|(e, _)| e == k) {
            return Err(bad(format!("parameter '{k}' is given twice")));
        }
        out.push((k.to_string(), v.trim().to_string()));
    }
    Ok((name.to_string(), out))
}

/// Resolved parameters of one build: every declared parameter has a value (given or
/// default), and unknown names were rejected up front.
#[derive(Clone, Debug)]
pub struct Params {
    entry: &'static str,
    values: BTreeMap<&'static str, String>,
}

impl Params {
    /// Merge user-given values over the defaults of `specs`; unknown keys are an error
    /// listing the valid ones.
    pub(crate) fn resolve(
        entry: &'static str,
        specs: &[ParamSpec],
        given: &[(String, String)],
    ) -> Result<Params, ZooError> {
        let mut values: BTreeMap<&'static str, String> =
            specs.iter().map(|s| (s.name, s.default.clone())).collect();
        for (k, v) in given {
            match specs.iter().find(|s| s.name == k) {
                Some(s) => {
                    values.insert(s.name, v.clone());
                }
                None => {
                    return Err(ZooError::UnknownParam {
                        entry: entry.to_string(),
                        param: k.clone(),
                        valid: specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
                    });
                }
            }
        }
        Ok(Params { entry, values })
    }

    pub fn entry(&self) -> &'static str {
        self.entry
    }

    fn raw(&self, name: &str) -> Result<&str, ZooError> {
        self.values
            .get(name)
            .map(|s| s.as_str())
            .ok_or_else(|| ZooError::Internal {
                entry: self.entry.to_string(),
                msg: format!("builder reads undeclared parameter '{name}'"),
            })
    }

    fn bad(&self, name: &str, value: &str, expected: &str) -> ZooError {
        ZooError::BadValue {
            entry: self.entry.to_string(),
            param: name.to_string(),
            value: value.to_string(),
            expected: expected.to_string(),
        }
    }

    /// A positive integer (sizes: 0 is rejected).
    pub fn size(&self, name: &str) -> Result<usize, ZooError> {
        let v = self.raw(name)?;
        // 2^31 bounds every dimension far above real models and keeps products of two
        // dimensions inside 64 bits; graph construction then limits whole tensors.
        match v.parse::<usize>() {
            Ok(n) if n > 0 && n <= 1 << 31 => Ok(n),
            _ => Err(self.bad(name, v, "a positive integer up to 2^31")),
        }
    }

    /// A non-negative integer (paddings).
    pub fn count(&self, name: &str) -> Result<usize, ZooError> {
        let v = self.raw(name)?;
        v.parse::<usize>()
            .map_err(|_| self.bad(name, v, "a non-negative integer"))
    }

    pub fn u64(&self, name: &str) -> Result<u64, ZooError> {
        let v = self.raw(name)?;
        v.parse::<u64>()
            .map_err(|_| self.bad(name, v, "a non-negative integer"))
    }

    pub fn bool(&self, name: &str) -> Result<bool, ZooError> {
        let v = self.raw(name)?;
        match v {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err(self.bad(name, v, "true or false")),
        }
    }

    /// One of a fixed set of words.
    pub fn choice(&self, name: &str, options: &[&'static str]) -> Result<&'static str, ZooError> {
        let v = self.raw(name)?;
        options
            .iter()
            .find(|o| **o == v)
            .copied()
            .ok_or_else(|| self.bad(name, v, &format!("one of {}", options.join(", "))))
    }

    pub fn seed(&self) -> Result<u64, ZooError> {
        self.u64("seed")
    }

    /// True for `weights=random`, false for `weights=none` (shape-only constants).
    pub fn random_weights(&self) -> Result<bool, ZooError> {
        Ok(self.choice("weights", &["random", "none"])? == "random")
    }

    /// Error for a combination of values that cannot build (e.g. heads not dividing hidden).
    pub fn invalid(&self, msg: impl Into<String>) -> ZooError {
        ZooError::Invalid {
            entry: self.entry.to_string(),
            msg: msg.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parsing() {
        let (n, p) = parse_spec("gemv?n=64&seed=3").unwrap();
        assert_eq!(n, "gemv");
        assert_eq!(
            p,
            vec![("n".into(), "64".into()), ("seed".into(), "3".into())]
        );
        let (n, p) = parse_spec("relu").unwrap();
        assert_eq!((n.as_str(), p.len()), ("relu", 0));
        assert!(parse_spec("relu?").unwrap().1.is_empty());
        assert!(matches!(parse_spec("?n=3"), Err(ZooError::BadSpec { .. })));
        assert!(matches!(
            parse_spec("relu?n"),
            Err(ZooError::BadSpec { .. })
        ));
        assert!(matches!(
            parse_spec("relu?=4"),
            Err(ZooError::BadSpec { .. })
        ));
        assert!(matches!(
            parse_spec("relu?n=1&n=2"),
            Err(ZooError::BadSpec { .. })
        ));
    }

    #[test]
    fn typed_values() {
        let specs = vec![spec("n", 8, "size"), spec("pad", 0, "pad")];
        let p = Params::resolve("t", &specs, &[("n".into(), "abc".into())]).unwrap();
        let e = p.size("n").unwrap_err().to_string();
        assert!(e.contains("'n'") && e.contains("abc"), "{e}");
        let p = Params::resolve("t", &specs, &[("n".into(), "0".into())]).unwrap();
        assert!(p.size("n").is_err());
        assert_eq!(p.count("pad").unwrap(), 0);
        let e = Params::resolve("t", &specs, &[("m".into(), "1".into())]).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("'m'") && s.contains("n, pad"), "{s}");
    }
}
