//! `pimkit llm` and `pimkit llm-generate` end to end: the common JSON layout, the files of
//! `-o`, several models and systems, the generation check on a real export, exit statuses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn pimkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(args)
        .output()
        .expect("run pimkit")
}

fn ok_json(args: &[&str]) -> serde_json::Value {
    let o = pimkit(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/llm-decoders")
        .join(p)
}

#[test]
fn llm_json_has_the_common_layout_and_the_grid() {
    let v = ok_json(&[
        "llm",
        "zoo:llama3_8b",
        "--system",
        "dgx-h100-attacc-bank",
        "--context",
        "1024,8192",
        "--batch",
        "1,32",
        "--generate",
        "8",
        "--json",
    ]);
    for k in [
        "engine",
        "model",
        "arch",
        "totals",
        "layers",
        "notes",
        "decode",
        "generation",
        "memory",
        "breakdown",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
    assert_eq!(v["engine"], "llm");
    assert_eq!(v["policy"], "attn-pim");
    assert_eq!(v["decode"].as_array().unwrap().len(), 4);
    assert_eq!(v["workload"]["kv_heads"], 8);
    // Longer context, same batch: slower steps.
    let d = v["decode"].as_array().unwrap();
    assert!(d[2]["step_s"].as_f64() > d[0]["step_s"].as_f64());
}

#[test]
fn several_models_and_systems_give_a_list_and_one_folder_each() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let v = ok_json(&[
        "llm",
        "zoo:llama2_7b",
        "zoo:gptj_6b",
        "--system",
        "dgx-h100,dgx-h100-attacc-buffer",
        "--context",
        "2048",
        "--batch",
        "1,8",
        "--generate",
        "4",
        "--json",
        "-o",
        out.to_str().unwrap(),
    ]);
    let list = v.as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[1]["model"], "zoo:llama2_7b");
    assert_eq!(list[1]["system"]["name"], "dgx-h100-attacc-buffer");
    assert!(out.join("summary.csv").exists());
    let sub = out.join("zoo_gptj_6b__dgx-h100");
    for f in [
        "result.json",
        "decode.csv",
        "generation.csv",
        "breakdown.csv",
        "throughput.svg",
        "roofline.svg",
    ] {
        assert!(sub.join(f).exists(), "{f}");
    }
    let svg = std::fs::read_to_string(sub.join("throughput.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("batch 8"));
}

#[test]
fn a_real_export_is_read_and_generates_onnxruntimes_tokens() {
    let model = data("llama/model.onnx");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("llama/generate.json")).unwrap())
            .unwrap();
    let v = ok_json(&[
        "llm",
        model.to_str().unwrap(),
        "--system",
        "dgx-h100",
        "--context",
        "64",
        "--batch",
        "1",
        "--json",
    ]);
    assert_eq!(v["workload"]["layers"], 2);
    assert_eq!(v["workload"]["kv_heads"], 2);
    let prompt: Vec<String> = meta["prompt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.to_string())
        .collect();
    let o = pimkit(&[
        "llm-generate",
        model.to_str().unwrap(),
        "--prompt",
        &prompt.join(","),
        "--tokens",
        "8",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let want: Vec<String> = meta["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.to_string())
        .collect();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), want.join(","));
}

#[test]
fn bad_input_exits_2_with_one_line_saying_what_to_do() {
    for (args, needle) in [
        (vec!["llm", "zoo:mlp"], "no KV cache found"),
        (
            vec!["llm", "zoo:llama2_7b", "--system", "nope"],
            "no such file and no such system",
        ),
        (
            vec!["llm", "zoo:llama2_7b", "--policy", "gpu"],
            "--policy gpu: use xpu",
        ),
        (vec!["llm", "zoo:llama2_7b", "--batch", "0"], "--batch"),
        (
            vec!["llm", "zoo:llama2_7b", "--weight-bits", "0"],
            "--weight-bits",
        ),
        (vec!["llm", "no/such.onnx"], "no such file"),
        (
            vec!["llm", "zoo:llama2_7b", "--context", "8192,16384"],
            "--context 8192: zoo:llama2_7b was made for 4096 positions; give contexts of at most 4096",
        ),
        (
            vec![
                "llm",
                "zoo:gpt3_175b",
                "--prompt",
                "2048",
                "--context",
                "1024",
            ],
            "= 2176 positions: zoo:gpt3_175b was made for 2048",
        ),
        (
            vec!["llm", "zoo:llama2_70b", "--pipeline", "81"],
            "zoo:llama2_70b has 80 layers; give at most 80 stages",
        ),
        (
            vec![
                "llm",
                "zoo:llama2_7b",
                "--batch",
                "100000",
                "--context",
                "1024",
            ],
            "zoo:llama2_7b on dgx-h100: no requested batch fits: at most 1254 sequences of 1024 positions",
        ),
        (
            vec![
                "llm",
                "zoo:gpt3_175b",
                "--system",
                "dgx-h100",
                "--weight-bits",
                "32",
                "--prompt",
                "8",
                "--generate",
                "8",
                "--context",
                "64",
            ],
            "the weights (699.5 GB) do not fit the 687.2 GB",
        ),
        (
            vec!["llm-generate", "zoo:decoder", "--prompt", "1,999"],
            "out of range",
        ),
    ] {
        let o = pimkit(&args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(needle) && !e.contains("panicked"),
            "{args:?}: {e}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let sys = dir.path().join("s.toml");
    std::fs::write(&sys, "[pim]\nutil = 2\n").unwrap();
    let o = pimkit(&["llm", "zoo:llama2_7b", "--system", sys.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("s.toml") && e.contains("pim"), "{e}");
}

#[test]
fn a_transformers_config_json_is_a_model() {
    // Qwen2-7B's config.json (Qwen/Qwen2-7B): 7.62B parameters, 4 key/value heads.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.json");
    std::fs::write(
        &cfg,
        r#"{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
            "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
            "num_key_value_heads": 4, "vocab_size": 152064, "torch_dtype": "bfloat16"}"#,
    )
    .unwrap();
    let v = ok_json(&[
        "llm",
        cfg.to_str().unwrap(),
        "--system",
        "dgx-h100",
        "--context",
        "4096",
        "--batch",
        "1",
        "--generate",
        "2",
        "--json",
    ]);
    let w = &v["workload"];
    assert_eq!(
        (
            w["layers"].as_u64(),
            w["kv_heads"].as_u64(),
            w["head_dim"].as_u64()
        ),
        (Some(28), Some(4), Some(128))
    );
    let params = w["resident_elems"].as_f64().unwrap();
    assert!((params / 7_615_616_512.0 - 1.0).abs() < 0.005, "{params}");
    std::fs::write(&cfg, r#"{"model_type": "llama", "hidden_size": 64}"#).unwrap();
    let o = pimkit(&["llm", cfg.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("config.json") && e.contains("num_hidden_layers"),
        "{e}"
    );
}

#[test]
fn limits_come_from_the_config_beside_an_export_and_can_be_lifted() {
    // GPT-2's fixture has 64 learned positions (n_positions in its config.json, which
    // Hugging Face exports ship beside model.onnx).
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("gpt2/model.onnx"), dir.path().join("model.onnx")).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"model_type": "gpt2", "n_positions": 64}"#,
    )
    .unwrap();
    let m = dir.path().join("model.onnx");
    let args = |ctx: &'static str, extra: &[&'static str]| {
        let mut a = vec![
            "llm",
            m.to_str().unwrap(),
            "--system",
            "dgx-h100",
            "--prompt",
            "8",
            "--generate",
            "8",
            "--batch",
            "1",
            "--context",
            ctx,
            "--json",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| pimkit(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert_eq!(run(args("64", &[])).status.code(), Some(0));
    let o = run(args("65", &[]));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("was made for 64 positions"), "{e}");
    let o = run(args("65", &["--ignore-limits"]));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_matmulnbits_decoder_runs_exactly_and_is_costed_at_its_own_bits() {
    // tools/make_decoder_nbits.py: the LLaMA fixture's MatMuls quantized to 4 bits in
    // blocks of 16 by onnxruntime's MatMulNBitsQuantizer; onnxruntime's step-1 logits.
    let m = data("llama-nbits/model.onnx");
    let dir = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = vec!["exec".into(), m.to_str().unwrap().into()];
    for e in std::fs::read_dir(data("llama/step1_inputs")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        args.push("--input".into());
        args.push(format!("{name}={}", p.display()));
    }
    args.extend(["-o".into(), dir.path().join("o").to_str().unwrap().into()]);
    let o = pimkit(&args.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let got = pimkit_ir::npy::read_npy(&dir.path().join("o/logits.npy")).unwrap();
    let want = pimkit_ir::npy::read_npy(&data("llama-nbits/expected_logits.npy")).unwrap();
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    let range =
        w.iter().cloned().fold(f64::MIN, f64::max) - w.iter().cloned().fold(f64::MAX, f64::min);
    let err = g
        .iter()
        .zip(&w)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(err <= 1e-3 * range, "max |error| {err} of range {range}");
    // pimkit llm reads the bits and block size from the file.
    let args = [
        "llm",
        m.to_str().unwrap(),
        "--system",
        "dgx-h100",
        "--context",
        "64",
        "--batch",
        "1",
        "--prompt",
        "8",
        "--generate",
        "2",
        "--json",
    ];
    let q = ok_json(&args);
    assert_eq!(q["options"]["precision"]["weight_bits"], 4.0);
    assert_eq!(q["options"]["precision"]["weight_group"], 16);
    assert_eq!(q["workload"]["weight_quant"]["layers"], 15);
    let full = data("llama/model.onnx");
    let mut fargs = args;
    fargs[1] = full.to_str().unwrap();
    let f = ok_json(&fargs);
    let (wq, wf) = (
        q["memory"]["weight_bytes"].as_f64().unwrap(),
        f["memory"]["weight_bytes"].as_f64().unwrap(),
    );
    assert!(wq < 0.6 * wf, "4-bit weights {wq} B vs 16-bit {wf} B");
    // Explicit options win.
    let mut e = args.to_vec();
    e.extend(["--weight-bits", "8"]);
    let x = ok_json(&e);
    assert_eq!(x["options"]["precision"]["weight_bits"], 8.0);
}
