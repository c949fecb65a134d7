//! MODEL arguments: a path to an `.onnx` file or `zoo:NAME[?k=v&...]`, with the options
//! that fix what a file leaves open (symbolic dims, input shapes, inputs bound to
//! constants).

use crate::error::user;
use pimkit_ir::{Graph, Tensor};
use std::collections::HashMap;
use std::path::Path;

/// Options every command that loads a model takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LoadArgs {
    /// Value of a symbolic dimension of the model's inputs, NAME=VALUE (repeatable)
    #[arg(long = "dim", value_name = "NAME=VALUE")]
    pub dims: Vec<String>,
    /// Shape of an input, INPUT=1x3x224x224 (repeatable; binds its symbolic dims)
    #[arg(long = "shape", value_name = "INPUT=SHAPE")]
    pub shapes: Vec<String>,
    /// Replace an input by a constant, NAME=VALUE or NAME=FILE.npy (repeatable): control
    /// flow and shapes that depend only on it are folded at import
    #[arg(long = "bind", value_name = "NAME=VALUE|FILE")]
    pub binds: Vec<String>,
    /// Compute a QDQ model's float ops in float between DequantizeLinear and
    /// QuantizeLinear, as ONNX defines them, instead of as the integer nodes
    /// onnxruntime's default session fuses them into
    #[arg(long = "qdq-float")]
    pub qdq_float: bool,
}

fn split_kv<'a>(flag: &str, s: &'a str, what: &str) -> anyhow::Result<(&'a str, &'a str)> {
    s.split_once('=')
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .ok_or_else(|| user(format!("{flag} {s}: expected {what}")))
}

/// `LoadOptions` from the flags, plus the shapes of the inputs a command was given
/// (`(name, tensor)`, name "" for a model's lone input).
pub fn load_options(
    a: &LoadArgs,
    given: &[(String, Tensor)],
) -> anyhow::Result<pimkit_onnx::LoadOptions> {
    let mut o = pimkit_onnx::LoadOptions {
        qdq_float: a.qdq_float,
        ..Default::default()
    };
    for d in &a.dims {
        let (k, v) = split_kv("--dim", d, "NAME=VALUE")?;
        let v: usize = v
            .parse()
            .map_err(|_| user(format!("--dim {d}: '{v}' is not a non-negative integer")))?;
        o.dims.insert(k.to_string(), v);
    }
    for s in &a.shapes {
        let (k, v) = split_kv("--shape", s, "INPUT=D1xD2x... (e.g. input=1x3x224x224)")?;
        let shape = if v == "scalar" {
            vec![]
        } else {
            v.split(['x', ','])
                .map(|d| d.trim().parse::<usize>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    user(format!(
                        "--shape {s}: '{v}' is not a shape like 1x3x224x224 (or 'scalar')"
                    ))
                })?
        };
        o.input_shapes.insert(k.to_string(), shape);
    }
    for (name, t) in given {
        o.input_shapes
            .entry(name.clone())
            .or_insert_with(|| t.shape.clone());
    }
    for b in &a.binds {
        let (k, v) = split_kv("--bind", b, "NAME=VALUE or NAME=FILE.npy")?;
        let t = if v.ends_with(".npy") {
            pimkit_ir::npy::read_npy(Path::new(v)).map_err(user)?
        } else if let Ok(i) = v.parse::<i64>() {
            Tensor::from_i64(vec![], vec![i])
        } else if let Ok(f) = v.parse::<f64>() {
            Tensor::from_f64(vec![], vec![f])
        } else if let Ok(b) = v.parse::<bool>() {
            Tensor::from_bool(vec![], vec![b])
        } else {
            return Err(user(format!(
                "--bind {b}: '{v}' is neither a number, true/false nor a .npy file"
            )));
        };
        o.bind.insert(k.to_string(), t);
    }
    Ok(o)
}

/// Like [`load_model`], with extra zoo parameters (ignored for files).
pub fn load_model_with(spec: &str, extra: &[(String, String)]) -> anyhow::Result<Graph> {
    load_model_full(spec, extra, &LoadArgs::default(), &[])
}

/// Like [`load_model`] with the load flags and the inputs the command was given (their
/// shapes bind the model's symbolic dims). Import notes are printed on stderr first,
/// also when the import fails (a dim set to 1 may explain the error).
pub fn load_model_full(
    spec: &str,
    extra: &[(String, String)],
    load: &LoadArgs,
    given: &[(String, Tensor)],
) -> anyhow::Result<Graph> {
    // A zoo model's shapes come from its parameters, not from the data given.
    let given = if spec.starts_with("zoo:") {
        &[][..]
    } else {
        given
    };
    let opts = load_options(load, given)?;
    let mut notes = Vec::new();
    let r = pimkit_driver::load(spec, extra, &opts, &mut notes);
    for n in &notes {
        eprintln!("note: {spec}: {n}");
    }
    r.map_err(|e| match e {
        pimkit_driver::LoadError::InputShape { input, msg } => {
            // The data's fault: name the .npy file it came from (by name, or a lone file).
            let files = input_files().lock().ok();
            let file = files.and_then(|m| m.get(&input).or_else(|| m.get("")).cloned());
            let at = file.unwrap_or_else(|| format!("--shape {input}"));
            user(format!(
                "{at}: {msg}; give data of the declared shape (or a model exported with dynamic dims)"
            ))
        }
        pimkit_driver::LoadError::Other(e) => crate::error::engine(e),
    })
}

/// Like [`load_model_full`] for the engines, which map a fixed dataflow graph: control
/// flow is flattened (constant Ifs inlined, static Loops and Scans unrolled); what depends
/// on run-time values is an error naming the node and the input to bind.
pub fn load_static(
    spec: &str,
    extra: &[(String, String)],
    load: &LoadArgs,
    given: &[(String, Tensor)],
) -> anyhow::Result<Graph> {
    let g = load_model_full(spec, extra, load, given)?;
    pimkit_ir::into_static(g).map_err(|e| user(format!("{spec}: {e}")))
}

/// Like [`load_model`] for commands that need only shapes (`info`): a zoo model is built
/// without weight data unless the spec sets `weights` (a 16 GiB layer then costs nothing).
/// Returns the graph and whether the shapes-only build was chosen here.
pub fn load_model_shapes(spec: &str, load: &LoadArgs) -> anyhow::Result<(Graph, bool)> {
    if let Some(rest) = spec.strip_prefix("zoo:") {
        let (_, params) = pimkit_zoo::parse_spec(rest).map_err(user)?;
        if !params.iter().any(|(k, _)| k == "weights") {
            let g = load_model_full(spec, &[("weights".into(), "none".into())], load, &[])?;
            return Ok((g, true));
        }
    }
    Ok((load_model_full(spec, &[], load, &[])?, false))
}

/// Read `--input` arguments (`NAME=FILE.npy`, or a lone `FILE.npy` for a model with one
/// input, returned under the name "") before the model is loaded, so that their shapes
/// can bind its symbolic dims.
pub fn read_inputs(args: &[String]) -> anyhow::Result<Vec<(String, Tensor)>> {
    let mut out: Vec<(String, Tensor)> = Vec::new();
    for a in args {
        let (name, file) = match a.split_once('=') {
            Some((n, f)) => (n.to_string(), f.to_string()),
            None => (String::new(), a.clone()),
        };
        if file.is_empty() {
            return Err(user(format!(
                "--input {a}: no file given; write NAME=FILE.npy"
            )));
        }
        if out.iter().any(|(n, _)| *n == name) {
            return Err(user(format!(
                "--input {a}: input '{name}' is given twice; pass each input once"
            )));
        }
        let t = pimkit_ir::npy::read_npy(Path::new(&file)).map_err(user)?;
        input_files()
            .lock()
            .map(|mut m| m.insert(name.clone(), file.clone()))
            .ok();
        out.push((name, t));
    }
    Ok(out)
}

/// The .npy file each `--input` came from (by the name given, "" for a lone file), so
/// that a type or shape mismatch found later names the file.
fn input_files() -> &'static std::sync::Mutex<HashMap<String, String>> {
    static FILES: std::sync::OnceLock<std::sync::Mutex<HashMap<String, String>>> =
        std::sync::OnceLock::new();
    FILES.get_or_init(Default::default)
}

/// Match inputs read by [`read_inputs`] to the graph's inputs; fill the rest from
/// `random` if given. float64 data (numpy's default) for a float input is converted to
/// the input's type, with a note.
pub fn bind_inputs(
    g: &Graph,
    given: Vec<(String, Tensor)>,
    random: Option<u64>,
) -> anyhow::Result<HashMap<String, Tensor>> {
    let names: Vec<String> = g.inputs.iter().map(|&v| g.value(v).name.clone()).collect();
    let mut out = HashMap::new();
    for (given_name, t) in given {
        let file = input_files()
            .lock()
            .ok()
            .and_then(|m| m.get(&given_name).cloned());
        let name = given_name;
        let name = if name.is_empty() {
            match names.as_slice() {
                [only] => only.clone(),
                _ => {
                    return Err(user(format!(
                        "--input FILE.npy: the model has {} inputs ({}); write NAME=FILE.npy",
                        names.len(),
                        names.join(", ")
                    )));
                }
            }
        } else {
            name
        };
        let Some(&id) = g.inputs.iter().find(|&&v| g.value(v).name == name) else {
            return Err(user(format!(
                "--input {name}=...: the model has no input '{name}' (inputs: {})",
                names.join(", ")
            )));
        };
        let want = g.ty(id).dtype;
        let (t, converted) = t.float64_as(want);
        if converted {
            eprintln!("note: input '{name}': float64 data converted to {want}");
        }
        let ty = g.ty(id);
        if t.dtype() != ty.dtype || t.shape != ty.shape {
            let at = file.map(|f| format!("{f}: ")).unwrap_or_default();
            return Err(user(format!(
                "{at}input '{name}' is {}{:?}, the model expects {ty}; give an array of that \
                 dtype and shape (or bind the model's symbolic dims with --dim/--shape)",
                t.dtype(),
                t.shape
            )));
        }
        out.insert(name, t);
    }
    if let Some(seed) = random {
        pimkit_interp::check_memory(g).map_err(user)?;
        for (k, v) in pimkit_interp::random_inputs(g, seed) {
            out.entry(k).or_insert(v);
        }
    }
    let missing: Vec<String> = g
        .inputs
        .iter()
        .filter(|&&v| !out.contains_key(&g.value(v).name))
        .map(|&v| format!("{} ({})", g.value(v).name, g.ty(v)))
        .collect();
    if !missing.is_empty() {
        return Err(user(format!(
            "missing input(s): {}; pass --input NAME=FILE.npy or --random SEED",
            missing.join(", ")
        )));
    }
    Ok(out)
}

/// A short, file-name-friendly name for a model spec.
pub fn model_label(spec: &str) -> String {
    pimkit_driver::model_label(spec)
}
