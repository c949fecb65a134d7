//! Every bad-input error follows one style (issue #22): the first line is
//! `pimkit: error: <file>: <where>: <what>; <what to do>`, names the file that was read,
//! holds no Rust debug output and stays short; at most a few short lines follow. This
//! sweeps the error corpus (the fixtures, invalid models from
//! tools/make_invalid_models.py, malformed .npy files written here) through the CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Run pimkit; expect exit 2 and check the message's shape. `file` must be named on the
/// first line right after the prefix.
fn check(args: &[&str], file: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(args)
        .output()
        .expect("run pimkit");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    // Import notes come first; the error is the first line that is not a note.
    let lines: Vec<&str> = err
        .lines()
        .skip_while(|l| l.starts_with("note: "))
        .collect();
    let first = lines.first().copied().unwrap_or("");
    let ctx = format!("{args:?}:\n{err}");
    assert!(
        first.starts_with(&format!("pimkit: error: {file}: ")),
        "first line must start with `pimkit: error: {file}: `: {ctx}"
    );
    for bad in ["{", "}", "Some(", "[Field", "Record(", "Error {", "kind: "] {
        assert!(!err.contains(bad), "debug output `{bad}`: {ctx}");
    }
    assert!(
        first.len() <= 300,
        "first line of {} chars: {ctx}",
        first.len()
    );
    assert!(lines.len() <= 6, "{} lines: {ctx}", lines.len());
    assert!(
        lines[1..].iter().all(|l| l.len() <= 200),
        "long line: {ctx}"
    );
}

#[test]
fn model_errors_name_the_file_first() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [fixtures(), fixtures().join("invalid")] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "onnx") {
                files.push(p);
            }
        }
    }
    files.sort();
    let valid = ["mlp.onnx", "qdq_matmul.onnx", "colliding_outputs.onnx"];
    let mut n = 0;
    for p in &files {
        if valid.iter().any(|v| p.ends_with(v)) {
            continue;
        }
        let f = p.to_str().unwrap();
        check(&["info", f], f);
        check(&["exec", f, "--random", "1"], f);
        n += 1;
    }
    assert!(n >= 15, "only {n} invalid models found");
    let missing = fixtures().join("no_such.onnx");
    let m = missing.to_str().unwrap();
    check(&["info", m], m);
    let dir = fixtures();
    check(&["info", dir.to_str().unwrap()], dir.to_str().unwrap());
}

/// Malformed .npy files, each as the only input of the fixture MLP.
#[test]
fn npy_errors_name_the_file_first() {
    let dir = tempfile::tempdir().unwrap();
    let header = |dict: &str, version: u8| -> Vec<u8> {
        let mut h = dict.as_bytes().to_vec();
        h.push(b'\n');
        let mut b = b"\x93NUMPY".to_vec();
        b.push(version);
        b.push(0);
        if version == 1 {
            b.extend((h.len() as u16).to_le_bytes());
        } else {
            b.extend((h.len() as u32).to_le_bytes());
        }
        b.extend(h);
        b
    };
    let plain = |d: &str| {
        header(
            &format!("{{'descr': '{d}', 'fortran_order': False, 'shape': (1, 4), }}"),
            1,
        )
    };
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty.npy", vec![]),
        ("magic.npy", b"NOTNUMPY".repeat(4)),
        ("truncated_header.npy", plain("<f4")[..20].to_vec()),
        ("unparsable_header.npy", header("{not a dict}", 1)),
        (
            "structured.npy",
            header(
                "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (4,), }",
                1,
            ),
        ),
        (
            "long_header.npy",
            header(
                &format!(
                    "{{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'junk': '{}'}}",
                    "x".repeat(15000)
                ),
                1,
            ),
        ),
        (
            "long_shape.npy",
            header(
                &format!(
                    "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}",
                    "1,".repeat(5000)
                ),
                2,
            ),
        ),
        ("complex.npy", plain("<c8")),
        ("strings.npy", plain("<U2")),
        ("big_endian_short.npy", plain(">f4")),
        (
            "fortran.npy",
            header(
                "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                1,
            ),
        ),
        (
            "huge_shape.npy",
            header(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
                1,
            ),
        ),
    ];
    // A valid header whose data is cut short.
    let mut short = plain("<f4");
    short.extend([0u8; 7]);
    cases.push(("short_data.npy", short));
    let model = fixtures().join("mlp.onnx");
    for (name, bytes) in &cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let f = p.to_str().unwrap();
        check(&["exec", model.to_str().unwrap(), "--input", f], f);
    }
}

/// TOML files other than architecture files (those get one loader of their own): the
/// reason and its line and column on the first line.
#[test]
fn toml_errors_give_line_and_column_on_the_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("space.toml");
    std::fs::write(&p, "name = \"x\"\nstages = = 3\n").unwrap();
    let f = p.to_str().unwrap();
    let out = dir.path().join("out");
    check(
        &["xbar", "nas", "--space", f, "--out", out.to_str().unwrap()],
        f,
    );
    let o = Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(["xbar", "nas", "--space", f, "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("line 2, column 10: "), "{e}");
}
