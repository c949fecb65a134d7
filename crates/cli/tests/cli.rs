//! End-to-end tests of the `pimkit` binary: outputs, exit statuses and error messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

fn pimkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(args)
        .output()
        .expect("run pimkit")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn assert_user_error(o: &Output, needles: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "expected exit 2, stderr: {e}");
    for n in needles {
        assert!(e.contains(n), "stderr should mention {n:?}: {e}");
    }
    assert!(!e.contains("panicked"), "{e}");
}

#[test]
fn garbage_and_truncated_files_exit_2_naming_the_file() {
    assert_user_error(
        &pimkit(&["info", &fixture("garbage.onnx")]),
        &["garbage.onnx"],
    );
    assert_user_error(
        &pimkit(&["info", &fixture("truncated.onnx")]),
        &["truncated.onnx"],
    );
    assert_user_error(
        &pimkit(&["info", "/no/such/model.onnx"]),
        &["/no/such/model.onnx: no such file"],
    );
}

#[test]
fn unknown_op_names_op_and_node() {
    assert_user_error(
        &pimkit(&["info", &fixture("unknown_op.onnx")]),
        &["FooBar", "mystery_node"],
    );
}

#[test]
fn exec_writes_sanitized_npy_equal_to_numpy() {
    let dir = tempfile::tempdir().unwrap();
    let o = pimkit(&[
        "exec",
        &fixture("mlp.onnx"),
        "--input",
        &fixture("mlp_x.npy"),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got = pimkit_ir::npy::read_npy(&dir.path().join("y_0_out.npy")).unwrap();
    let want = pimkit_ir::npy::read_npy(&PathBuf::from(fixture("mlp_y.npy"))).unwrap();
    let (g, w) = (got.as_f32().unwrap(), want.as_f32().unwrap());
    assert_eq!(got.shape, want.shape);
    for (a, b) in g.iter().zip(w) {
        assert!((a - b).abs() < 1e-5, "{g:?} vs {w:?}");
    }
}

#[test]
fn exec_rejects_wrong_shape_dtype_and_names() {
    let m = fixture("mlp.onnx");
    assert_user_error(
        &pimkit(&[
            "exec",
            &m,
            "--input",
            &format!("x={}", fixture("wrong_shape.npy")),
        ]),
        &["wrong_shape.npy: ", "x", "[2, 4]"],
    );
    assert_user_error(
        &pimkit(&[
            "exec",
            &m,
            "--input",
            &format!("x={}", fixture("wrong_dtype.npy")),
        ]),
        &["wrong_dtype.npy: ", "x", "i32"],
    );
    assert_user_error(
        &pimkit(&[
            "exec",
            &m,
            "--input",
            &format!("nope={}", fixture("mlp_x.npy")),
        ]),
        &["nope", "x"],
    );
    assert_user_error(&pimkit(&["exec", &m]), &["missing input", "x"]);
}

#[test]
fn info_json_has_required_keys() {
    let o = pimkit(&["info", "zoo:resnet18?weights=none", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for k in ["inputs", "outputs", "ops", "params", "macs"] {
        assert!(v.get(k).is_some(), "missing key {k}");
    }
    // torchvision ResNet18: 11.69 M parameters, 1.82 GMACs (published figures).
    let params = v["params"].as_u64().unwrap();
    assert!((11_600_000..11_800_000).contains(&params), "{params}");
    let macs = v["macs"].as_u64().unwrap();
    assert!((1_800_000_000..1_850_000_000).contains(&macs), "{macs}");
}

#[test]
fn unknown_zoo_entry_and_param_exit_2() {
    assert_user_error(&pimkit(&["info", "zoo:no_such_net"]), &["no_such_net"]);
    assert_user_error(&pimkit(&["info", "zoo:mlp?bogus=1"]), &["bogus"]);
}

#[test]
fn usage_error_exits_2() {
    assert_eq!(pimkit(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn zoo_export_reimports_to_same_dump() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("m.onnx");
    let o = pimkit(&[
        "zoo",
        "export",
        "mlp",
        "--param",
        "n=16",
        "-o",
        f.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let a = pimkit(&["dump", "zoo:mlp?n=16"]);
    let b = pimkit(&["dump", f.to_str().unwrap()]);
    assert!(a.status.success() && b.status.success());
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn report_writes_html_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let o = pimkit(&[
        "report",
        "zoo:squeezenet1_1?res=64",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("Conv"));
    // The VPU sweeps run at reduced sizes in the report, and say so.
    assert!(html.contains("reduced sizes"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    assert!(
        json["sections"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("model-"))
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().any(|e| e
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "csv"))
    );
}

#[test]
fn out_of_range_options_and_paths_are_user_errors() {
    let mlp = fixture("mlp.onnx");
    let x = format!("x={}", fixture("mlp_x.npy"));
    // The same input twice.
    assert_user_error(
        &pimkit(&["exec", &mlp, "-i", &x, "-i", &x]),
        &["given twice"],
    );
    // Counts and thresholds with no sensible meaning.
    assert_user_error(
        &pimkit(&["profile", &mlp, "--runs", "99999999999"]),
        &["--runs", "1..=1000"],
    );
    for (flag, v) in [("--theta", "-1"), ("--theta", "nan"), ("--sigma", "2")] {
        assert_user_error(
            &pimkit(&[
                "offload",
                "zoo:mlp?n=64",
                "--host-fixed",
                &format!("{flag}={v}"),
            ]),
            &[flag],
        );
    }
    assert_user_error(
        &pimkit(&["offload", "zoo:mlp?n=64", "--host-fixed", "--sweep", "n="]),
        &["--sweep", "at least one value"],
    );
    // An output directory that is a file.
    let f = std::env::temp_dir().join(format!("pimkit-cli-file-{}", std::process::id()));
    std::fs::write(&f, "x").unwrap();
    let fs = f.display().to_string();
    assert_user_error(
        &pimkit(&["xbar", "map", "zoo:lenet5", "-o", &fs]),
        &[&fs, "a file of that name exists"],
    );
    assert_user_error(
        &pimkit(&["exec", &mlp, "-i", &x, "--out", &fs]),
        &[&fs, "a file of that name exists"],
    );
    assert_user_error(
        &pimkit(&["report", "zoo:mlp?n=16", "-o", &fs]),
        &[&fs, "a file of that name exists"],
    );
    let _ = std::fs::remove_file(&f);
    assert_user_error(&pimkit(&["exec", &mlp, "-i", "x="]), &["no file given"]);
    for (flag, v) in [
        ("--pop", "1000000000"),
        ("--budget", "1e30"),
        ("--samples", "0"),
    ] {
        assert_user_error(
            &pimkit(&["xbar", "nas", "--gens", "1", "-o", "/tmp/x", flag, v]),
            &[flag],
        );
    }
    // A zoo size whose weights cannot exist.
    assert_user_error(&pimkit(&["info", "zoo:mlp?n=99999999999"]), &["2^31"]);
    // Not a model file.
    assert_user_error(&pimkit(&["info", "/dev/zero"]), &["not a regular file"]);
}

#[test]
fn a_closed_or_full_stdout_is_not_a_crash() {
    use std::process::Stdio;
    // /dev/full: writing fails with ENOSPC; an I/O error, not an internal error.
    if let Ok(full) = std::fs::File::create("/dev/full") {
        let o = Command::new(env!("CARGO_BIN_EXE_pimkit"))
            .args(["info", "zoo:lenet5"])
            .stdout(Stdio::from(full))
            .output()
            .unwrap();
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{e}");
        assert!(
            e.contains("cannot write the output") && !e.contains("internal error"),
            "{e}"
        );
    }
    // A reader that goes away (`| head -1`): ended by SIGPIPE like other Unix tools, with
    // no panic message.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(["zoo", "list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("internal error"), "{}", stderr(&o));
}

/// `--host-fixed` pairs the reference θ with times measured here: when this machine's
/// calibration on disk reads far from the reference host, a note says so (exit 0).
#[test]
fn host_fixed_notes_a_machine_far_from_the_reference() {
    let dir = std::env::temp_dir().join(format!("pimkit-cli-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let calib = |read: f64| {
        let p = dir.join(format!("host-{read}.toml"));
        std::fs::write(
            &p,
            format!(
                "vendor = \"AuthenticAMD\"\ncpu_model = \"test\"\nb_read_gbs = {read:.1}\n\
                 b_store_gbs = 20.0\nb_mem_gbs = 576.0\nstore_curve = [[4096, 3.0]]\n\
                 t_ctx_ns = 2000.0\nl1d_bytes = 32768\nl2_bytes = 524288\n\
                 llc_bytes = 33554432\nline_bytes = 64\nsource = \"measured\"\n"
            ),
        )
        .unwrap();
        p.display().to_string()
    };
    let run = |read: f64| {
        let o = pimkit(&[
            "offload",
            "zoo:relu?n=64",
            "--host-fixed",
            "--host",
            &calib(read),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let far = run(40.0);
    assert!(
        far.contains("--host-fixed") && far.contains("40.0 GB/s") && far.contains("pass C3"),
        "{far}"
    );
    assert!(!run(18.0).contains("--host-fixed"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn vpu_run_writes_outputs_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = pimkit(&[
        "vpu",
        "run",
        "zoo:q_mobilenet_v2?res=32",
        "--vpus",
        "2",
        "--bandwidth",
        "0.8",
        "--dataflow",
        "ws",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for k in ["cycles", "offchip_bytes", "ops", "energy_j", "layers"] {
        assert!(j.get(k).is_some(), "JSON lacks {k}");
    }
    let layers = j["layers"].as_array().unwrap();
    let conv = layers
        .iter()
        .find(|l| l["kernel"] == "conv2d" || l["kernel"] == "mm")
        .expect("a kernel layer");
    for k in ["cycles", "offchip_bytes", "ops", "dataflow", "energy_j"] {
        assert!(conv.get(k).is_some(), "layer JSON lacks {k}");
    }
    assert_eq!(j["vpus"], 2);
    let y = pimkit_ir::npy::read_npy(&out.join("classifier.1.npy")).unwrap();
    assert_eq!(y.shape, vec![1, 1000]);
    assert!(out.join("result.json").exists() && out.join("layers.csv").exists());
    let svg = std::fs::read_to_string(out.join("layers.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains(">DMA stall</text>"));
}

#[test]
fn vpu_bad_settings_exit_2_naming_them() {
    for bw in ["0", "-1", "nan"] {
        assert_user_error(
            &pimkit(&[
                "vpu",
                "run",
                "zoo:qlinear_matmul?m=4&k=8&n=16",
                "--bandwidth",
                bw,
            ]),
            &["--bandwidth"],
        );
    }
    assert_user_error(
        &pimkit(&[
            "vpu",
            "run",
            "zoo:qlinear_matmul?m=4&k=8&n=16",
            "--characterize",
            "every",
        ]),
        &["--characterize every", "shape or layer"],
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad_arch.toml");
    std::fs::write(&bad, "[vpu]\nlanes = \"eight\"\n").unwrap();
    assert_user_error(
        &pimkit(&["vpu", "table3", "--quick", "--arch", bad.to_str().unwrap()]),
        &["bad_arch.toml", "lanes"],
    );
    std::fs::write(&bad, "[cache]\nways = 0\n").unwrap();
    assert_user_error(
        &pimkit(&["vpu", "table3", "--quick", "--arch", bad.to_str().unwrap()]),
        &["cache.ways", "bad_arch.toml"],
    );
}

#[test]
fn vpu_runs_a_qdq_model_fused_and_names_the_float_form() {
    // Default: the DQ -> MatMul -> Q group is imported as QLinearMatMul and runs on a VPU.
    let o = pimkit(&["vpu", "run", &fixture("qdq_matmul.onnx"), "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("1 QLinearMatMul") && !e.contains("QDQ form"),
        "{e}"
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kernels = j["layers"].as_array().unwrap().iter();
    let kinds: Vec<&str> = kernels.filter_map(|l| l["kernel"].as_str()).collect();
    assert!(kinds.iter().any(|k| *k != "host"), "{kinds:?}");
    // --qdq-float keeps the float MatMul, which only the host runs; the note says why.
    let o = pimkit(&["vpu", "run", &fixture("qdq_matmul.onnx"), "--qdq-float"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("QDQ form (`fc`") && e.contains("without --qdq-float"),
        "{e}"
    );
}

fn class_model(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../onnx/tests/fixtures/classes")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn symbolic_dims_bind_from_inputs_shape_and_dim_flags() {
    let m = class_model("symbolic_cnn/model.onnx");
    let x = class_model("symbolic_cnn/input_0.npy");
    let o = pimkit(&["exec", &m, "--input", &x, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["outputs"][0]["shape"], serde_json::json!([1, 5]));
    assert!(!stderr(&o).contains("note:"), "{}", stderr(&o));
    let o = pimkit(&[
        "exec",
        &m,
        "--random",
        "0",
        "--shape",
        "x=2x3x32x40",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["outputs"][0]["shape"], serde_json::json!([2, 5]));
    let o = pimkit(&[
        "info", &m, "--dim", "batch=4", "--dim", "height=8", "--dim", "width=8", "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["inputs"][0]["shape"], serde_json::json!([4, 3, 8, 8]));
    // Unbound dims: the notes come before the error they explain.
    let o = pimkit(&["info", &m]);
    assert_user_error(&o, &["MaxPool"]);
    let e = stderr(&o);
    let note = e.find("symbolic dim 'width' set to 1").expect("note");
    assert!(note < e.find("pimkit: error").unwrap(), "{e}");
    assert_user_error(&pimkit(&["info", &m, "--shape", "x=1x3"]), &["rank 4"]);
    assert_user_error(&pimkit(&["info", &m, "--shape", "x=1by3"]), &["--shape"]);
    assert_user_error(&pimkit(&["info", &m, "--bind", "y=3"]), &["no input 'y'"]);
    assert_user_error(
        &pimkit(&["info", "zoo:mlp", "--dim", "a=1"]),
        &["zoo:NAME?k=v"],
    );
}

#[test]
fn bind_turns_an_input_into_a_constant() {
    let m = class_model("paddle_minus1/model.onnx");
    let x = class_model("paddle_minus1/input_0.npy");
    let o = pimkit(&["info", &m, "--bind", &format!("x={x}"), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Everything folds: the graph has no inputs and one Identity.
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["inputs"], serde_json::json!([]));
}

#[test]
fn outputs_whose_names_sanitize_alike_are_all_written() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.npy");
    let t = pimkit_ir::Tensor::from_f32(vec![1, 4], vec![1.0, -2.0, 0.5, -3.0]);
    pimkit_ir::npy::write_npy(&x, &t).unwrap();
    let out = dir.path().join("out");
    let o = pimkit(&[
        "exec",
        &fixture("colliding_outputs.onnx"),
        "--input",
        x.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("a_b-2.npy"), "{}", stderr(&o));
    let relu = pimkit_ir::npy::read_npy(&out.join("a_b.npy")).unwrap();
    let neg = pimkit_ir::npy::read_npy(&out.join("a_b-2.npy")).unwrap();
    assert_eq!(relu.as_f32().unwrap(), &[1.0, 0.0, 0.5, 0.0]);
    assert_eq!(neg.as_f32().unwrap(), &[-1.0, 2.0, -0.5, 3.0]);
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
}

#[test]
fn report_on_a_float_cnn_fills_every_engine_with_a_summary() {
    // A torchvision MobileNetV2 export (tests/data/real-models): the VPU section
    // quantizes it (noted), PUMA runs it (per layer if it must), every row has figures.
    let dir = tempfile::tempdir().unwrap();
    let model = format!(
        "{}/../../tests/data/real-models/tv_mobilenet_v2_ts/model.onnx",
        env!("CARGO_MANIFEST_DIR")
    );
    let o = pimkit(&["report", &model, "-o", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    let rows = j["summary"].as_array().unwrap();
    let engines: Vec<&str> = rows.iter().map(|r| r["engine"].as_str().unwrap()).collect();
    for e in ["loops", "offload", "xbar", "puma", "vpu", "accuracy"] {
        assert!(engines.contains(&e), "{engines:?}");
    }
    for r in rows {
        assert_eq!(r["status"], "done", "{r}");
    }
    for e in ["offload", "xbar", "puma", "vpu"] {
        let r = rows.iter().find(|r| r["engine"] == e).unwrap();
        assert!(!r["figures"].as_array().unwrap().is_empty(), "{r}");
    }
    let html = std::fs::read_to_string(dir.path().join("index.html")).unwrap();
    let summary = html.find("<caption>Summary</caption>").unwrap();
    assert!(
        summary < html.find("<section").unwrap(),
        "the summary comes first"
    );
    assert!(html.contains("quantized here with pimkit's built-in quantizer"));
    assert!(
        html.contains("<details><summary>"),
        "long tables are collapsed"
    );
}

#[test]
fn absurd_xbar_budgets_exit_2_naming_the_option() {
    for (flag, v) in [
        ("--budget", "1.8e19"),
        ("--budget", "0"),
        ("--crossbars", "18446744073709551615"),
        ("--samples", "0"),
    ] {
        assert_user_error(&pimkit(&["xbar", "map", "zoo:lenet5", flag, v]), &[flag]);
    }
}

#[test]
fn absurd_crossbar_architecture_values_exit_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.toml");
    for (text, field) in [
        ("[crossbar]\nrows = 9223372036854775807\n", "crossbar.rows"),
        (
            "[timing]\nread_latency_ns = 1e300\n",
            "timing.read_latency_ns",
        ),
        ("[timing]\ndac_bits = 4294967295\n", "timing.dac_bits"),
        ("[defaults]\nbudget = 1.8e19\n", "defaults.budget"),
        (
            "[packing]\nmax_load = 9223372036854775807\n",
            "packing.max_load",
        ),
    ] {
        std::fs::write(&f, text).unwrap();
        assert_user_error(
            &pimkit(&["xbar", "map", "zoo:lenet5", "--arch", f.to_str().unwrap()]),
            &["x.toml", field],
        );
    }
}

/// The commands that draw progress on a terminal print nothing on stderr when it is a
/// pipe (scripts see only the result).
#[test]
fn progress_stays_off_stderr_when_it_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).display().to_string();
    let mlp = fixture("mlp.onnx");
    let cases: Vec<Vec<String>> = vec![
        vec![
            "profile".into(),
            "zoo:matmul?n=8".into(),
            "--runs".into(),
            "1".into(),
        ],
        vec!["lower".into(), mlp.clone(), "--json".into()],
        vec![
            "offload".into(),
            "zoo:matmul?n=8".into(),
            "--host-fixed".into(),
            "--counters".into(),
            "model".into(),
        ],
        vec!["xbar".into(), "map".into(), mlp.clone()],
        vec![
            "puma".into(),
            "compile".into(),
            mlp.clone(),
            "--out".into(),
            d("prog"),
        ],
        vec!["puma".into(), "sim".into(), d("prog")],
        vec!["quantize".into(), mlp.clone(), "-o".into(), d("q.onnx")],
    ];
    for args in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = pimkit(&a);
        assert!(o.status.success(), "{a:?}: {}", stderr(&o));
        let err = stderr(&o);
        let e: Vec<&str> = err
            .lines()
            .filter(|l| !l.starts_with("note: ") && !l.starts_with("warning: "))
            .collect();
        assert!(e.is_empty(), "{a:?}: stderr {e:?}");
    }
}

/// `puma run --per-layer` on a model whose only node has one output and more inputs
/// than a tile holds (an ONNX Gemm of 2,048 inputs and 1 output on 128-word tiles,
/// which failed before: one output cannot be split by outputs): the layer runs as
/// partial sums over its input channels, says so, and reports its error.
#[test]
fn puma_per_layer_splits_a_one_output_layer_by_input_channels() {
    use pimkit_ir::{DType, Graph, Op, Tensor, TensorType};
    let dir = tempfile::tempdir().unwrap();
    let (k, n) = (2048usize, 1usize);
    let mut g = Graph::new("one_output");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, k]));
    let w: Vec<f32> = (0..k * n)
        .map(|i| ((i * 7919 % 1000) as f32 / 1000.0 - 0.5) / (k as f32).sqrt())
        .collect();
    let w = g.add_const("w", Tensor::from_f32(vec![n, k], w));
    let b = g.add_const("b", Tensor::from_f32(vec![n], vec![0.25]));
    let gemm = Op::Gemm {
        alpha: 1.0,
        beta: 1.0,
        trans_a: false,
        trans_b: true,
    };
    let y = g.op("fc", gemm, &[x, w, b]).unwrap();
    g.outputs.push(y);
    let model = dir.path().join("one_output.onnx");
    pimkit_onnx::save(&g, &model).unwrap();
    let arch = dir.path().join("small.toml");
    std::fs::write(&arch, "[tile]\nshared_mem_words = 128\n").unwrap();
    let (m, a) = (model.display().to_string(), arch.display().to_string());
    let o = pimkit(&["puma", "run", &m, "--per-layer", "--arch", &a, "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let text = v.to_string();
    assert!(
        text.contains("`fc` split by input channels (1024 + 1024 of 2048)"),
        "{text}"
    );
    let err = text
        .split("\"max_abs_error\":")
        .nth(1)
        .and_then(|s| s.split([',', '}']).next())
        .and_then(|s| s.parse::<f64>().ok())
        .expect("an error figure");
    assert!(err < 0.05, "{err}");
    // The same model without the small tile needs no split.
    let o = pimkit(&["puma", "run", &m, "--per-layer", "--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert!(!stdout(&o).contains("split by input channels"));
}

#[test]
fn xbar_cost_writes_its_files_and_bad_component_files_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cost");
    let o = pimkit(&[
        "xbar",
        "cost",
        "zoo:lenet5",
        "--components",
        "puma",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in [
        "result.json",
        "summary.csv",
        "layers.csv",
        "components.csv",
        "energy.svg",
        "area.svg",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let bad = d.path().join("bad.toml");
    std::fs::write(&bad, "base = \"neurosim\"\n[components.adc]\nbits = 40\n").unwrap();
    let o = pimkit(&[
        "xbar",
        "cost",
        "zoo:lenet5",
        "--components",
        bad.to_str().unwrap(),
    ]);
    assert_user_error(&o, &["bad.toml", "components.adc.bits = 40", "use 1..=16"]);
    let o = pimkit(&["xbar", "cost", "zoo:lenet5", "--components", "nosuch"]);
    assert_user_error(&o, &["nosuch", "isaac, puma, neurosim"]);
    let o = pimkit(&["xbar", "cost", "zoo:lenet5", "--sweep", "adc=4"]);
    assert_user_error(&o, &["unknown parameter 'adc'"]);
}

#[test]
fn puma_run_binds_symbolic_dims_from_its_input_files() {
    // A CNN exported with symbolic batch, height and width: the file's [2, 3, 40, 24]
    // binds them (before, every dim was set to 1 and the pooling window did not fit).
    let d = format!(
        "{}/../../tests/data/real-models/pt_symbolic_bhw_cnn_ts",
        env!("CARGO_MANIFEST_DIR")
    );
    let model = format!("{d}/model.onnx");
    for input in [format!("{d}/input_0.npy"), format!("x={d}/input_0.npy")] {
        let o = pimkit(&["puma", "run", &model, "--input", &input, "--json"]);
        assert!(o.status.success(), "{input}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["cycles"].as_u64().unwrap() > 0, "{input}");
    }
    let o = pimkit(&[
        "puma",
        "run",
        &model,
        "--input",
        &format!("y={d}/input_0.npy"),
    ]);
    assert_user_error(&o, &["no such input", "inputs: x"]);
}
