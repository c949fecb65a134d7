//! Inputs and labels of an accuracy study: `.npy` files from a directory, deterministic
//! random inputs, class labels from a text file.

use crate::error::{Result, XbarError};
use pimkit_analog::network::Inputs;
use pimkit_ir::{Graph, Tensor};
use std::path::Path;

fn bad(msg: String) -> XbarError {
    XbarError::Option {
        option: "inputs",
        msg,
    }
}

/// `n` random inputs (pimkit-interp's ranges per dtype), input i from seed `seed + i`.
pub fn random_inputs(g: &Graph, n: usize, seed: u64) -> Vec<Inputs> {
    (0..n as u64)
        .map(|i| pimkit_interp::random_inputs(g, seed.wrapping_add(i)))
        .collect()
}

/// Inputs from `dir`: for a one-input model every `*.npy` file (sorted by name) holds one
/// input of the exact shape, or several stacked along a new first axis; for several
/// inputs every subdirectory (sorted) holds one `<input name>.npy` per graph input.
pub fn load_inputs_dir(g: &Graph, dir: &Path) -> Result<Vec<Inputs>> {
    let read =
        |p: &Path| pimkit_ir::npy::read_npy(p).map_err(|e| bad(format!("{}: {e}", p.display())));
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| bad(format!("cannot read directory {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let names: Vec<String> = g.inputs.iter().map(|&v| g.value(v).name.clone()).collect();
    let mut out = Vec::new();
    if names.len() == 1 {
        let ty = g.ty(g.inputs[0]);
        for p in entries
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "npy"))
        {
            let t = read(p)?;
            if t.dtype() != ty.dtype {
                return Err(bad(format!(
                    "{}: {} elements, the model's input '{}' is {ty}",
                    p.display(),
                    t.dtype(),
                    names[0]
                )));
            }
            if t.shape == ty.shape {
                out.push(Inputs::from([(names[0].clone(), t)]));
            } else if t.shape.len() == ty.shape.len() + 1 && t.shape[1..] == ty.shape[..] {
                let per = ty.numel();
                let v = t.to_f64_vec();
                for k in 0..t.shape[0] {
                    let part =
                        Tensor::from_f64_as(ty.dtype, ty.shape.clone(), &v[k * per..(k + 1) * per]);
                    out.push(Inputs::from([(names[0].clone(), part)]));
                }
            } else {
                return Err(bad(format!(
                    "{}: shape {:?}; the model's input '{}' is {ty} (give that shape, or N stacked along a new first axis)",
                    p.display(),
                    t.shape,
                    names[0]
                )));
            }
        }
    } else {
        for sub in entries.iter().filter(|p| p.is_dir()) {
            let mut one = Inputs::new();
            for (name, &v) in names.iter().zip(&g.inputs) {
                let p = sub.join(format!("{name}.npy"));
                let t = read(&p)?;
                if t.dtype() != g.ty(v).dtype || t.shape != g.ty(v).shape {
                    return Err(bad(format!(
                        "{}: {}{:?}, expected {}",
                        p.display(),
                        t.dtype(),
                        t.shape,
                        g.ty(v)
                    )));
                }
                one.insert(name.clone(), t);
            }
            out.push(one);
        }
    }
    if out.is_empty() {
        return Err(bad(format!(
            "{} holds no inputs: put one .npy file per input there ({} model input{}: {})",
            dir.display(),
            names.len(),
            if names.len() == 1 {
                ""
            } else {
                "s; one subdirectory per input set with NAME.npy files"
            },
            names.join(", ")
        )));
    }
    Ok(out)
}

/// Class labels: integers separated by whitespace or commas (one per output row, in input
/// order), or an integer `.npy` array.
pub fn load_labels(path: &Path) -> Result<Vec<usize>> {
    let bad = |m: String| XbarError::Option {
        option: "labels",
        msg: format!("{}: {m}", path.display()),
    };
    if path.extension().is_some_and(|e| e == "npy") {
        let t = pimkit_ir::npy::read_npy(path).map_err(|e| bad(e.to_string()))?;
        return t
            .to_i64_vec()
            .into_iter()
            .map(|v| usize::try_from(v).map_err(|_| bad(format!("label {v} is negative"))))
            .collect();
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| bad(format!("'{s}' is not a class index")))
        })
        .collect()
}
