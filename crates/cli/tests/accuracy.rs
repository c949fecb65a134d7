//! `pimkit xbar accuracy` end to end: outputs of a sweep, inputs from .npy files, labels,
//! and bad settings exiting 2 with the field named.

use std::path::Path;
use std::process::{Command, Output};

fn pimkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(args)
        .output()
        .expect("run pimkit")
}

fn assert_user_error(o: &Output, needles: &[&str]) {
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "expected exit 2, stderr: {e}");
    for n in needles {
        assert!(e.contains(n), "stderr should mention {n:?}: {e}");
    }
    assert!(!e.contains("panicked"), "{e}");
}

/// A little-endian f32 .npy file.
fn write_npy(path: &Path, shape: &[usize], data: &[f32]) {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_s = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_s}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    for v in data {
        bytes.extend(v.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_sweep_writes_its_table_csv_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("acc");
    let o = pimkit(&[
        "xbar",
        "accuracy",
        "zoo:lenet5",
        "--arch",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../arch/rram-128-2bit.toml"),
        "--random",
        "2",
        "--trials",
        "2",
        "--sweep",
        "adc_bits=6,8",
        "variation=0,0.1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("adc_bits=6 variation=0.1") && text.contains("top-1 agreement"),
        "{text}"
    );
    let csv = std::fs::read_to_string(out.join("points.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(csv.starts_with("adc_bits,variation,trials,agreement_mean"));
    for f in [
        "result.json",
        "layers.csv",
        "heatmap.svg",
        "curves.svg",
        "error.svg",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    assert_eq!(json["points"].as_array().unwrap().len(), 4);
    assert!(json["points"][0]["agreement"]["mean"].is_number());
    assert_eq!(json["layers"].as_array().unwrap().len(), 5);
}

#[test]
fn inputs_from_npy_files_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    // LeNet-5 takes [1, 1, 32, 32]: one file with one input, one with two stacked.
    let one: Vec<f32> = (0..1024)
        .map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5)
        .collect();
    write_npy(&inputs.join("a.npy"), &[1, 1, 32, 32], &one);
    let two: Vec<f32> = (0..2048)
        .map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5)
        .collect();
    write_npy(&inputs.join("b.npy"), &[2, 1, 1, 32, 32], &two);
    let labels = dir.path().join("labels.txt");
    std::fs::write(&labels, "3\n1\n4\n").unwrap();
    let o = pimkit(&[
        "xbar",
        "accuracy",
        "zoo:lenet5",
        "--inputs",
        inputs.to_str().unwrap(),
        "--labels",
        labels.to_str().unwrap(),
        "--trials",
        "1",
        "--adc-bits",
        "0",
        "--variation",
        "0",
        "--saf",
        "0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["inputs"], 3);
    assert!(json["ideal_accuracy"].is_number());
    assert!(json["points"][0]["accuracy"]["mean"].is_number());
    // Two labels for three inputs.
    std::fs::write(&labels, "3 1").unwrap();
    assert_user_error(
        &pimkit(&[
            "xbar",
            "accuracy",
            "zoo:lenet5",
            "--inputs",
            inputs.to_str().unwrap(),
            "--labels",
            labels.to_str().unwrap(),
        ]),
        &["2 labels", "3 output rows"],
    );
}

#[test]
fn bad_settings_exit_2_naming_them() {
    let acc = |extra: &[&str]| {
        let mut a = vec!["xbar", "accuracy", "zoo:lenet5", "--trials", "1"];
        a.extend_from_slice(extra);
        pimkit(&a)
    };
    assert_user_error(&acc(&["--sweep", "foo=1,2"]), &["foo", "adc_bits"]);
    assert_user_error(&acc(&["--sweep", "adc_bits=4,x"]), &["'x'"]);
    assert_user_error(&acc(&["--saf", "0.7"]), &["saf"]);
    assert_user_error(&acc(&["--adc-bits", "1"]), &["analog.adc_bits"]);
    assert_user_error(&acc(&["--adc-range", "sometimes"]), &["sometimes"]);
    assert_user_error(&acc(&["--set", "variation=-1"]), &["device.variation"]);
    assert_user_error(&acc(&["--inputs", "/no/such/dir"]), &["/no/such/dir"]);
    assert_user_error(&pimkit(&["xbar", "accuracy", "zoo:relu"]), &["no layer"]);
}

#[test]
fn the_report_has_an_accuracy_section() {
    let dir = tempfile::tempdir().unwrap();
    let o = pimkit(&["report", "zoo:lenet5", "-o", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    let sec = &json["sections"]["accuracy-lenet5"];
    assert_eq!(sec["points"].as_array().map(|p| p.len()), Some(9), "{json}");
    assert!(dir.path().join("lenet5-accuracy-heatmap.svg").exists());
}

#[test]
fn puma_nonideal_runs_the_crossbar_model() {
    let o = pimkit(&["puma", "run", "zoo:lenet5", "--nonideal", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ideal = pimkit(&["puma", "run", "zoo:lenet5", "--json"]);
    let err = |o: &Output| -> f64 {
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        j["max_abs_error"]
            .as_f64()
            .unwrap_or_else(|| panic!("no max_abs_error in {j}"))
    };
    // The built-in device (MNSIM's variation and stuck cells, an 8-bit ADC) is far from exact.
    assert!(
        err(&o) > 10.0 * err(&ideal),
        "{} vs {}",
        err(&o),
        err(&ideal)
    );
    assert_user_error(
        &pimkit(&["puma", "run", "zoo:lenet5", "--nonideal", "/no/such.toml"]),
        &["--nonideal", "/no/such.toml"],
    );
}
