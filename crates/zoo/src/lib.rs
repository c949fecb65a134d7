//! pimkit's built-in model zoo: graphs built in code with deterministic random weights
//! from a seed, every size a parameter.
//!
//! Families: the Torch-PIM suite (tensor operators, layers, GPT-J/LLaMA decode layers),
//! vision nets from published layer tables (torchvision and the RNC variants), the PUMA
//! benchmarks, and quantized QOperator versions (as onnxruntime's `quantize_static`
//! emits them) of the vision nets plus single quantized kernels.
//!
//! ```
//! let (name, params) = pimkit_zoo::parse_spec("gemv?n=64").unwrap();
//! let g = pimkit_zoo::build(&name, &params).unwrap();
//! assert_eq!(g.nodes.len(), 1);
//! ```

mod decode;
pub mod init;
pub mod layers;
mod llm;
pub use llm::max_positions;
mod params;
mod puma;
mod qkernels;
pub mod quantize;
mod torchpim;
mod vision;

pub use params::{ParamSpec, Params, parse_spec};
use pimkit_ir::{Graph, IrError};

/// Errors of the zoo. Each names the entry and, where it applies, the parameter.
#[derive(Debug, thiserror::Error)]
pub enum ZooError {
    /// `hint`: entries with a similar name and where the whole list is (the list of
    /// every entry is too long for one line of an error message).
    #[error("unknown zoo entry '{name}'; {hint}")]
    UnknownEntry { name: String, hint: String },
    #[error("zoo entry '{entry}' has no parameter '{param}'; valid parameters: {valid}")]
    UnknownParam {
        entry: String,
        param: String,
        valid: String,
    },
    #[error("zoo entry '{entry}': parameter '{param}' = '{value}' is invalid, expected {expected}")]
    BadValue {
        entry: String,
        param: String,
        value: String,
        expected: String,
    },
    #[error("bad zoo spec '{spec}': {msg}")]
    BadSpec { spec: String, msg: String },
    #[error("zoo entry '{entry}': {msg}")]
    Invalid { entry: String, msg: String },
    #[error("zoo entry '{entry}': quantization failed: {msg}")]
    Quantize { entry: String, msg: String },
    #[error("zoo entry '{entry}': building the graph failed: {source}")]
    Graph { entry: String, source: Box<IrError> },
    #[error("graph construction failed: {0}")]
    Ir(Box<IrError>),
    #[error("zoo entry '{entry}': internal error: {msg}")]
    Internal { entry: String, msg: String },
}

impl From<IrError> for ZooError {
    fn from(e: IrError) -> Self {
        ZooError::Ir(Box::new(e))
    }
}

pub type Result<T> = std::result::Result<T, ZooError>;

/// A zoo entry as listed by `pimkit zoo list`.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: &'static str,
    pub family: &'static str,
    pub description: &'static str,
    /// Entry-specific parameters followed by `seed` and `weights`.
    pub params: Vec<ParamSpec>,
}

/// Internal definition: the listing plus the builder.
pub(crate) struct Def {
    pub name: &'static str,
    pub family: &'static str,
    pub description: &'static str,
    pub params: Vec<ParamSpec>,
    pub build: fn(&Params) -> Result<Graph>,
    /// Quantized entries: the float graph they quantize (same weights for the same seed).
    pub float: Option<fn(&Params) -> Result<Graph>>,
}

fn defs() -> Vec<Def> {
    let mut d = torchpim::defs();
    d.extend(decode::defs());
    d.extend(llm::defs());
    d.extend(vision::defs());
    d.extend(puma::defs());
    d.extend(qkernels::defs());
    d
}

fn with_common(mut p: Vec<ParamSpec>) -> Vec<ParamSpec> {
    p.extend(params::common_specs());
    p
}

/// Every entry, in a stable order (family by family).
pub fn entries() -> Vec<Entry> {
    defs()
        .into_iter()
        .map(|d| Entry {
            name: d.name,
            family: d.family,
            description: d.description,
            params: with_common(d.params),
        })
        .collect()
}

/// Build entry `name` with the given parameter values (others take their defaults).
pub fn build(name: &str, params: &[(String, String)]) -> Result<Graph> {
    build_with(name, params, false)
}

/// For a quantized entry, the float graph it quantizes (BatchNorm folded, same weights
/// for the same seed), e.g. to compare outputs; any other entry builds as [`build`].
pub fn build_float(name: &str, params: &[(String, String)]) -> Result<Graph> {
    build_with(name, params, true)
}

fn build_with(name: &str, params: &[(String, String)], float: bool) -> Result<Graph> {
    let all = defs();
    let Some(def) = all.iter().find(|d| d.name == name) else {
        let names: Vec<&str> = all.iter().map(|d| d.name).collect();
        return Err(ZooError::UnknownEntry {
            name: name.to_string(),
            hint: unknown_entry_hint(name, &names),
        });
    };
    let specs = with_common(def.params.clone());
    let p = Params::resolve(def.name, &specs, params)?;
    let f = match (float, def.float) {
        (true, Some(f)) => f,
        _ => def.build,
    };
    f(&p).map_err(|e| match e {
        ZooError::Ir(source) => ZooError::Graph {
            entry: def.name.to_string(),
            source,
        },
        e => e,
    })
}

/// Up to five entries whose names contain `name` or share its first three letters, and
/// where the whole list is.
fn unknown_entry_hint(name: &str, names: &[&str]) -> String {
    let low = name.to_lowercase();
    let head: String = low.chars().take(3).collect();
    let similar: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| {
            !low.is_empty()
                && (n.contains(low.as_str()) || (head.len() == 3 && n.starts_with(&head)))
        })
        .take(5)
        .collect();
    let all = format!("`pimkit zoo list` shows all {} entries", names.len());
    if similar.is_empty() {
        all
    } else {
        format!("similar: {}; {all}", similar.join(", "))
    }
}

/// Parse `NAME?k=v&...` and build it.
pub fn build_spec(spec: &str) -> Result<Graph> {
    let (name, params) = parse_spec(spec)?;
    build(&name, &params)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unknown_entry_gets_a_short_hint() {
        let e = super::build("mobilenet", &[]).unwrap_err().to_string();
        assert!(
            e.contains("similar: mobilenet_v2") && e.contains("pimkit zoo list"),
            "{e}"
        );
        assert!(e.len() < 200, "{e}");
        let e = super::build("zz", &[]).unwrap_err().to_string();
        assert!(!e.contains("similar"), "{e}");
    }
}
