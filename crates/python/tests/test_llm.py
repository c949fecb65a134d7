"""pimkit.llm: the same numbers and files as `pimkit llm` / `pimkit llm-generate`, the
sweep identical in-process and on Ray, and errors as InputError."""

import pathlib

import pytest

import pimkit

DATA = pathlib.Path(__file__).resolve().parents[3] / "tests/data/llm-decoders"


def test_llm_analyze_matches_cli(cli, tmp_path):
    spec = "zoo:llama2_7b"
    py = pimkit.llm.analyze(spec, system="dgx-h100-attacc-bank", contexts=[1024, 4096],
                            batches=[1, 16], generate=16, out=tmp_path / "py")
    c = cli("llm", spec, "--system", "dgx-h100-attacc-bank", "--context", "1024,4096",
            "--batch", "1,16", "--generate", "16", "--json", "-o", tmp_path / "cli")
    assert dict(py) == c
    assert py["engine"] == "llm" and py["policy"] == "attn-pim"
    assert len(py.frame("decode")) == 4 and py["memory"]["max_batch"] > 16
    for name in ("result.json", "decode.csv", "generation.csv", "breakdown.csv",
                 "throughput.svg", "energy.svg", "roofline.svg", "breakdown.svg"):
        assert (tmp_path / "py" / name).read_text() == (tmp_path / "cli" / name).read_text(), name


def test_llm_sweep_is_the_same_in_process_and_on_ray(ray_local):
    models = ["zoo:llama2_7b", "zoo:llama3_8b"]
    systems = ["dgx-h100", "dgx-h100-attacc-bank"]
    kw = dict(contexts=[2048], batches=[1, 8], generate=4)
    here = pimkit.llm.sweep(models, systems, **kw)
    ray = pimkit.llm.sweep(models, systems, executor="ray", **kw)
    assert [dict(r) for r in here] == [dict(r) for r in ray]
    assert [(r["model"], r["system"]["name"]) for r in here] == [
        (m, s) for m in models for s in systems]


def test_llm_generate_matches_onnxruntime_tokens(cli):
    import json

    meta = json.loads((DATA / "gpt2/generate.json").read_text())
    model = str(DATA / "gpt2/model.onnx")
    r = pimkit.llm.generate(model, meta["prompt"], tokens=len(meta["tokens"]) - 1)
    assert r["tokens"] == meta["tokens"]
    c = cli("llm-generate", model, "--prompt", ",".join(map(str, meta["prompt"])),
            "--tokens", len(meta["tokens"]) - 1, "--json")
    assert dict(r) == c


def test_llm_errors_are_input_errors():
    with pytest.raises(pimkit.InputError, match="no KV cache"):
        pimkit.llm.analyze("zoo:mlp")
    with pytest.raises(pimkit.InputError, match="no such system"):
        pimkit.llm.analyze("zoo:llama2_7b", system="nope")
    with pytest.raises(pimkit.InputError, match="batch"):
        pimkit.llm.analyze("zoo:llama2_7b", batches=[0])


def test_llm_pipeline_policy_and_limits_match_cli(cli):
    # CENT's GPU-free system, pipeline-parallel (docs/llm.md), and Torch-PIM's rule.
    py = pimkit.llm.analyze("zoo:llama2_70b", system="cent", policy="all-pim", pipeline=80,
                            prompt=512, generate=64, contexts=[4096], batches=[80])
    c = cli("llm", "zoo:llama2_70b", "--system", "cent", "--policy", "all-pim", "--pipeline",
            "80", "--prompt", "512", "--generate", "64", "--context", "4096", "--batch", "80",
            "--json")
    assert dict(py) == c
    assert any(k["class"] == "stage_hop" for k in py["breakdown"]["classes"])
    rule = pimkit.llm.analyze("zoo:llama2_7b", system="dgx-h100-attacc-bank", policy="torch-pim",
                              contexts=[4096], batches=[1], generate=4)
    assert {r["class"] for r in rule["breakdown"]["rule"]} >= {"qkv", "ffn", "attn_score"}
    with pytest.raises(pimkit.InputError, match="made for 4096 positions"):
        pimkit.llm.analyze("zoo:llama2_7b", contexts=[8192])
    long = pimkit.llm.analyze("zoo:llama2_7b", contexts=[8192], batches=[1], generate=4,
                              ignore_limits=True)
    assert [p["context"] for p in long["decode"]] == [8192]
