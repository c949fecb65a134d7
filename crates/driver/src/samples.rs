//! Sample sets from a directory (calibration data for `pimkit quantize` and
//! `pimkit.quantize`): one `.npy` file per sample for a model with one input, or one
//! subdirectory per sample holding `<input name>.npy` files (names sanitized as output
//! files are). Files and subdirectories are taken in name order.

use pimkit_ir::{Graph, Tensor};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One sample: a tensor per graph input.
pub type Sample = HashMap<String, Tensor>;

/// Read the samples under `dir`. Errors start with the directory or file they are about.
pub fn read_sample_dir(dir: &Path, g: &Graph) -> Result<Vec<Sample>, String> {
    let names: Vec<String> = g.inputs.iter().map(|&v| g.value(v).name.clone()).collect();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let read = |p: &Path| pimkit_ir::npy::read_npy(p).map_err(|e| e.to_string());
    let mut sets = Vec::new();
    for p in entries {
        let mut set = HashMap::new();
        if p.is_dir() {
            for n in &names {
                let f = p.join(format!("{}.npy", pimkit_ir::fsio::sanitize(n)));
                set.insert(n.clone(), read(&f)?);
            }
        } else if p.extension().is_some_and(|e| e == "npy") {
            let [only] = names.as_slice() else {
                return Err(format!(
                    "{}: the model has {} inputs; put each sample in a subdirectory of <input name>.npy files",
                    dir.display(),
                    names.len()
                ));
            };
            set.insert(only.clone(), read(&p)?);
        } else {
            continue;
        }
        sets.push(conform_f64(g, set));
    }
    if sets.is_empty() {
        return Err(format!("{}: no .npy samples found", dir.display()));
    }
    Ok(sets)
}

/// numpy's default float64 data for a narrower float input, converted to its dtype
/// ([`Tensor::float64_as`], the rule every front end uses).
pub fn conform_f64(g: &Graph, mut set: Sample) -> Sample {
    for &id in &g.inputs {
        let want = g.ty(id).dtype;
        if let Some(t) = set.remove(&g.value(id).name) {
            set.insert(g.value(id).name.clone(), t.float64_as(want).0);
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_per_sample_for_a_one_input_model() {
        let g = pimkit_zoo::build("mlp", &[]).unwrap();
        let d = tempfile::tempdir().unwrap();
        let ty = g.ty(g.inputs[0]).clone();
        for i in 0..2 {
            let t = Tensor::from_f64(ty.shape.clone(), vec![i as f64; ty.numel()]);
            pimkit_ir::npy::write_npy(&d.path().join(format!("s{i}.npy")), &t).unwrap();
        }
        std::fs::write(d.path().join("README"), "not a sample").unwrap();
        let s = read_sample_dir(d.path(), &g).unwrap();
        assert_eq!(s.len(), 2);
        let name = &g.value(g.inputs[0]).name;
        assert_eq!(s[1][name].dtype(), ty.dtype, "float64 converted");
        let empty = tempfile::tempdir().unwrap();
        let e = read_sample_dir(empty.path(), &g).unwrap_err();
        assert!(e.contains("no .npy samples"), "{e}");
    }
}
