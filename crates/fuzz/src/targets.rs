//! The fuzz targets: each takes bytes and drives one reader the way a user's file would.
//! A target returns `Err(message)` only for a bug (a panic, or an error the library
//! itself marks as internal); a clean rejection of bad input is `Ok`.

use pimkit_onnx::{LoadOptions, OnnxError};
use std::collections::HashMap;

/// ONNX importer: `pimkit_onnx::load_bytes`. The importer turns a panic into
/// `OnnxError::Internal` as a last line of defence; here that is a crash.
pub fn onnx(bytes: &[u8]) -> Result<(), String> {
    match pimkit_onnx::load_bytes(bytes, None, &LoadOptions::default()) {
        Err(OnnxError::Internal(m)) => Err(format!("internal error: {m}")),
        Ok(g) => {
            // What `pimkit info` and `dump` do with every loaded graph.
            pimkit_ir::verify(&g).map_err(|e| format!("loaded graph fails verification: {e}"))?;
            let _ = pimkit_ir::dump(&g);
            Ok(())
        }
        Err(_) => Ok(()),
    }
}

/// Architecture files: the one loader (`pimkit_engine::arch`, what `--arch FILE` reads)
/// with every engine's hardware description, each validating what loads.
pub fn arch(bytes: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Ok(());
    };
    use pimkit_engine::arch::from_str;
    let _ = from_str::<pimkit_xbar::Arch>(text, "fuzz.toml");
    let _ = from_str::<pimkit_puma::Arch>(text, "fuzz.toml");
    let _ = from_str::<pimkit_vpu::Arch>(text, "fuzz.toml");
    let _ = from_str::<pimkit_offload::PimArch>(text, "fuzz.toml");
    Ok(())
}

/// `.npy` reader: `pimkit_ir::npy::read_npy` on the bytes written to a file.
pub fn npy(bytes: &[u8]) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("harness: {e}"))?;
    let p = dir.path().join("input.npy");
    std::fs::write(&p, bytes).map_err(|e| format!("harness: {e}"))?;
    if let Ok(t) = pimkit_ir::npy::read_npy(&p) {
        // A tensor that was read must write back and read again unchanged.
        let q = dir.path().join("again.npy");
        pimkit_ir::npy::write_npy(&q, &t)
            .map_err(|e| format!("write_npy of a read tensor: {e}"))?;
        let u = pimkit_ir::npy::read_npy(&q).map_err(|e| format!("re-read: {e}"))?;
        if u.shape != t.shape || u.dtype() != t.dtype() {
            return Err("write/read round trip changed the tensor".into());
        }
    }
    Ok(())
}

/// Largest weights.bin the PUMA target writes (a manifest may claim any count).
const MAX_WEIGHTS: usize = 64 << 20;

/// PUMA program loader (`Program::load`, what `pimkit puma sim DIR` reads), then a short
/// simulation of what loaded. The input is a program directory packed by [`pack`].
pub fn puma(bytes: &[u8]) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("harness: {e}"))?;
    let files = unpack(bytes);
    for (name, data) in &files {
        // Only the file names a program has; anything else is ignored.
        let ok = name == "manifest.json"
            || name.split_once('/').is_some_and(|(t, f)| {
                t.starts_with("tile")
                    && t[4..].parse::<u8>().is_ok()
                    && (f == "tile.puma" || f.starts_with("core") && f.ends_with(".puma"))
            });
        if !ok {
            continue;
        }
        let p = dir.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("harness: {e}"))?;
        }
        std::fs::write(&p, data).map_err(|e| format!("harness: {e}"))?;
    }
    // weights.bin of the size the manifest asks for, so that loading gets past it.
    let need = files
        .iter()
        .find(|(n, _)| n == "manifest.json")
        .and_then(|(_, m)| serde_json::from_slice::<serde_json::Value>(m).ok())
        .and_then(|v| {
            let n = v["weights"].as_array()?.len();
            let x = v["arch"]["mvmu"]["xbar_size"].as_u64()? as usize;
            n.checked_mul(x.checked_mul(x)?)?.checked_mul(2)
        })
        .unwrap_or(0);
    if need > MAX_WEIGHTS {
        return Ok(());
    }
    std::fs::write(dir.path().join("weights.bin"), vec![0u8; need])
        .map_err(|e| format!("harness: {e}"))?;
    let Ok(p) = pimkit_puma::Program::load(dir.path()) else {
        return Ok(());
    };
    let mut inputs = HashMap::new();
    for io in &p.inputs {
        let n: usize = io
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .unwrap_or(usize::MAX);
        if n > 1 << 20 {
            return Ok(());
        }
        let t = pimkit_ir::Tensor::from_f64_as(io.dtype, io.shape.clone(), &vec![0.25; n]);
        inputs.insert(io.name.clone(), t);
    }
    let opts = pimkit_puma::SimOptions {
        max_cycles: 2_000_000,
        ..Default::default()
    };
    let _ = pimkit_puma::simulate(&p, &inputs, &opts);
    Ok(())
}

/// A program directory as one fuzzable buffer: for each file, `\0FILE <name>\n` then
/// its bytes.
pub fn pack(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, data) in files {
        out.extend_from_slice(format!("\0FILE {name}\n").as_bytes());
        out.extend_from_slice(data);
    }
    out
}

pub fn unpack(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let marker = b"\0FILE ";
    let mut starts: Vec<usize> = (0..bytes.len())
        .filter(|&i| bytes[i..].starts_with(marker))
        .collect();
    starts.push(bytes.len());
    for w in starts.windows(2) {
        let sec = &bytes[w[0] + marker.len()..w[1]];
        let Some(nl) = sec.iter().position(|&b| b == b'\n') else {
            continue;
        };
        let name = String::from_utf8_lossy(&sec[..nl]).to_string();
        if name.contains("..") || name.starts_with('/') {
            continue;
        }
        out.push((name, sec[nl + 1..].to_vec()));
    }
    out
}
