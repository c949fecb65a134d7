#!/usr/bin/env python3
"""Small decoder-only language models with a KV cache -> tests/data/llm-decoders/.

What: for two `transformers` architectures, randomly initialised from small configs built in
code (nothing is downloaded), one ONNX decoder that runs both the prefill (past length 0)
and decode steps (past length > 0), with the inputs and outputs named as Hugging Face's ONNX
exports (optimum) name them:

  inputs   input_ids              int64 [batch, sequence]
           attention_mask         int64 [batch, past_sequence + sequence]   (all ones here)
           position_ids           int64 [batch, sequence]                    (llama only)
           past_key_values.{i}.key / .value
                                  float [batch, kv_heads, past_sequence, head_dim]
  outputs  logits                 float [batch, sequence, vocab]
           present.{i}.key / .value
                                  float [batch, kv_heads, past_sequence + sequence, head_dim]

  gpt2   GPT2LMHeadModel(n_layer 2, n_embd 32, n_head 4, vocab 128, n_positions 64)
  llama  LlamaForCausalLM(hidden 32, 2 layers, 4 heads, 2 key/value heads (GQA), ffn 64,
         vocab 128, rotary positions)

Why: a functional check of greedy generation with a KV cache (pimkit's `llm` zoo models and
users' exports share these names): the prompt's prefill with an empty (0-length) past, then
decode steps each feeding `present.*` back as `past_key_values.*`.

How: the TorchScript exporter (dynamo=False, opset 17, as tools/real_models_torch.py),
traced at batch 2, sequence 3, past 4 (distinct sizes so that no axis is specialised) through
a thin wrapper that builds a transformers DynamicCache from the flat past tensors and returns
the flat present tensors. Eager attention (MatMul/Softmax, no SDPA). Weights are drawn with
initializer_range 0.2 (the default 0.02 gives near-uniform logits and a constant greedy
token). The script then runs greedy generation with onnxruntime (CPUExecutionProvider, one
thread, ORT_ENABLE_ALL): a 5-token prompt (fixed seed), batch 1, prefill then 8 decode steps,
the next token being the argmax of the last position's logits; 9 new tokens in all (one from
the prefill, one per decode step). It checks them against torch's own greedy loop with
use_cache (and against model.generate) and records the largest logit difference.

Written per model to tests/data/llm-decoders/<name>/:
  model.onnx      the decoder
  generate.json   prompt, generated tokens, names, sizes, the checks' results
  step0_inputs/*.npy, step0_outputs/*.npy   the prefill (past length 0) and ORT's outputs
  step1_inputs/*.npy, step1_outputs/*.npy   the first decode step (past length 5)

Rerun (deterministic; torch, transformers, onnx==1.22.0, onnxruntime==1.32.0, numpy):
  /tmp/toolsvenv/bin/python tools/make_decoder_kv.py
Data generation only.
"""

import contextlib
import io
import json
import os
import shutil
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import transformers as tf
from transformers import DynamicCache

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import DATA  # noqa: E402

OUT = os.path.join(DATA, "llm-decoders")
VOCAB = 128
PROMPT_LEN = 5
DECODE_STEPS = 8
INIT_RANGE = 0.2
OPSET = 17
SIZE_LIMIT = 256 << 10  # ~200 KB asked; the GPT-2 export is 218 KiB (141 KB weights, 80 KB graph)


def seed_all(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)


def gpt2():
    cfg = tf.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=64,
                        initializer_range=INIT_RANGE, use_cache=True, bos_token_id=None,
                        eos_token_id=None, attn_implementation="eager")
    return tf.GPT2LMHeadModel(cfg), \
        "GPT2LMHeadModel(n_layer 2, n_embd 32, n_head 4, vocab 128, n_positions 64)"


def llama():
    cfg = tf.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                         max_position_embeddings=64, initializer_range=INIT_RANGE,
                         use_cache=True, bos_token_id=None, eos_token_id=None,
                         attn_implementation="eager")
    return tf.LlamaForCausalLM(cfg), \
        "LlamaForCausalLM(hidden 32, 2 layers, 4 heads, 2 key/value heads, ffn 64, vocab 128, rope)"


def dims(cfg):
    """(layers, hidden, heads, kv_heads, head_dim, ffn, vocab) of either config."""
    layers = cfg.num_hidden_layers
    hidden = cfg.hidden_size
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    ffn = getattr(cfg, "intermediate_size", None) or getattr(cfg, "n_inner", None) or 4 * hidden
    return layers, hidden, heads, kv, hidden // heads, ffn, cfg.vocab_size


# name -> (builder, seed, takes position_ids). Each seed is the first (from 0) whose 9 greedy
# tokens take at least MIN_DISTINCT values (gpt2's seed 0 gives 92 then 58 eight times).
MODELS = {
    "gpt2": (gpt2, 1, False),
    "llama": (llama, 0, True),
}
MIN_DISTINCT = 6
# Smallest accepted gap between the best and second-best logit of a greedy step, so that a
# runtime within ~1e-4 of onnxruntime picks the same tokens.
MIN_MARGIN = 1e-2

# transformers 5 renamed forward's `past_key_values` (and the output field) to `cache`.
CACHE_ARG = "cache" if "cache" in tf.modeling_outputs.CausalLMOutputWithPast.__dataclass_fields__ \
    else "past_key_values"


class Decoder(nn.Module):
    """forward(input_ids, attention_mask, [position_ids], past k0, past v0, k1, v1, ...) ->
    (logits, present k0, v0, k1, v1, ...): the flat tensors of an ONNX decoder."""
    star_args = True

    def __init__(self, model, layers, position_ids):
        super().__init__()
        self.model, self.layers, self.position_ids = model, layers, position_ids

    def forward(self, *args):
        n = 3 if self.position_ids else 2
        kw = dict(input_ids=args[0], attention_mask=args[1])
        if self.position_ids:
            kw["position_ids"] = args[2]
        past = args[n:]
        pairs = [(past[2 * i], past[2 * i + 1]) for i in range(self.layers)]
        cache = DynamicCache(pairs, config=self.model.config)
        out = self.model(**kw, **{CACHE_ARG: cache}, use_cache=True, return_dict=True)
        flat = [out.logits]
        for layer in getattr(out, CACHE_ARG).layers:
            flat += [layer.keys, layer.values]
        return tuple(flat)


def io_names(layers, position_ids):
    ins = ["input_ids", "attention_mask"] + (["position_ids"] if position_ids else [])
    outs = ["logits"]
    for i in range(layers):
        ins += [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        outs += [f"present.{i}.key", f"present.{i}.value"]
    return ins, outs


def dynamic_axes(ins, outs):
    dyn = {}
    for n in ins:
        if n in ("input_ids", "position_ids"):
            dyn[n] = {0: "batch", 1: "sequence"}
        elif n == "attention_mask":
            dyn[n] = {0: "batch", 1: "total_sequence"}
        else:
            dyn[n] = {0: "batch", 2: "past_sequence"}
    for n in outs:
        dyn[n] = {0: "batch", 1: "sequence"} if n == "logits" else {0: "batch", 2: "total_sequence"}
    return dyn


def feeds_for(ids, past, position_ids, kv_shape):
    """ids [batch, seq] int64; past: list of (k, v) numpy arrays or None (empty past)."""
    batch, seq = ids.shape
    if past is None:
        past = [(np.zeros((batch, kv_shape[0], 0, kv_shape[1]), np.float32),) * 2
                for _ in range(kv_shape[2])]
    plen = past[0][0].shape[2]
    feeds = {"input_ids": ids.astype(np.int64),
             "attention_mask": np.ones((batch, plen + seq), np.int64)}
    if position_ids:
        feeds["position_ids"] = np.tile(np.arange(plen, plen + seq, dtype=np.int64), (batch, 1))
    for i, (k, v) in enumerate(past):
        feeds[f"past_key_values.{i}.key"] = np.ascontiguousarray(k)
        feeds[f"past_key_values.{i}.value"] = np.ascontiguousarray(v)
    return feeds


def export(wrapper, feeds, ins, outs, path):
    args = tuple(torch.from_numpy(feeds[n]) for n in ins)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, args, path, dynamo=False, opset_version=OPSET,
                          input_names=ins, output_names=outs,
                          dynamic_axes=dynamic_axes(ins, outs), do_constant_folding=True)


def ort_session(path):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def torch_step(wrapper, feeds, ins):
    with torch.no_grad():
        return [t.numpy() for t in wrapper(*(torch.from_numpy(feeds[n]) for n in ins))]


def dumps(obj):
    """JSON, one key per line, lists and nested dicts' values on one line."""
    rows = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in obj.items()]
    return "{\n" + ",\n".join(rows) + "\n}"


def save_npys(d, names, arrays):
    os.makedirs(d, exist_ok=True)
    for n, a in zip(names, arrays):
        np.save(os.path.join(d, f"{n}.npy"), a)


def make(name):
    build, seed, pos_ids = MODELS[name]
    seed_all(seed)
    model, desc = build()
    model.eval()
    layers, hidden, heads, kv, head_dim, ffn, vocab = dims(model.config)
    kv_shape = (kv, head_dim, layers)
    ins, outs = io_names(layers, pos_ids)
    wrapper = Decoder(model, layers, pos_ids).eval()

    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    path = os.path.join(d, "model.onnx")

    # Trace at batch 2, sequence 3, past 4.
    rng = np.random.default_rng(1000 + seed)
    tids = rng.integers(0, vocab, (2, 3)).astype(np.int64)
    tpast = [tuple(rng.standard_normal((2, kv, 4, head_dim)).astype(np.float32) for _ in "kv")
             for _ in range(layers)]
    export(wrapper, feeds_for(tids, tpast, pos_ids, kv_shape), ins, outs, path)
    onnx.checker.check_model(onnx.load(path), full_check=True)
    size = os.path.getsize(path)
    assert size <= SIZE_LIMIT, f"{path}: {size} bytes"

    # Greedy generation: ORT and torch through the same wrapper, step by step.
    sess = ort_session(path)
    assert [i.name for i in sess.get_inputs()] == ins, [i.name for i in sess.get_inputs()]
    assert [o.name for o in sess.get_outputs()] == outs
    prompt = np.random.default_rng(seed).integers(0, vocab, (1, PROMPT_LEN)).astype(np.int64)
    ids, past_o, past_t = prompt, None, None
    tok_o, tok_t, err, margin = [], [], 0.0, np.inf
    for step in range(DECODE_STEPS + 1):
        feeds = feeds_for(ids, past_o, pos_ids, kv_shape)
        res = sess.run(None, feeds)
        ref = torch_step(wrapper, feeds_for(ids, past_t, pos_ids, kv_shape), ins)
        for a, b in zip(res, ref):
            assert a.shape == b.shape, (step, a.shape, b.shape)
        err = max(err, float(np.max(np.abs(res[0] - ref[0]))))
        if step in (0, 1):
            save_npys(os.path.join(d, f"step{step}_inputs"), ins, [feeds[n] for n in ins])
            save_npys(os.path.join(d, f"step{step}_outputs"), outs, res)
        last = np.sort(res[0][0, -1])
        margin = min(margin, float(last[-1] - last[-2]))
        tok_o.append(int(np.argmax(res[0][0, -1])))
        tok_t.append(int(np.argmax(ref[0][0, -1])))
        past_o = [(res[1 + 2 * i], res[2 + 2 * i]) for i in range(layers)]
        past_t = [(ref[1 + 2 * i], ref[2 + 2 * i]) for i in range(layers)]
        ids = np.array([[tok_o[-1]]], np.int64)

    # transformers' own greedy generation (its DynamicCache, no wrapper).
    with torch.no_grad():
        gen = model.generate(torch.from_numpy(prompt), attention_mask=torch.ones_like(
            torch.from_numpy(prompt)), max_new_tokens=DECODE_STEPS + 1,
            do_sample=False, use_cache=True, pad_token_id=0)
    tok_g = [int(t) for t in gen[0, PROMPT_LEN:]]

    assert len(set(tok_o)) >= MIN_DISTINCT, f"{name}: repetitive greedy tokens {tok_o}; pick another seed"
    assert margin >= MIN_MARGIN, f"{name}: a greedy step's top-2 logit gap is {margin}; pick another seed"
    assert tok_o == tok_t == tok_g, (tok_o, tok_t, tok_g)

    m = onnx.load(path)
    info = {
        "model": desc,
        "transformers": tf.__version__, "torch": torch.__version__,
        "onnx": onnx.__version__, "onnxruntime": ort.__version__, "numpy": np.__version__,
        "exporter": f"torch.onnx.export(dynamo=False, opset_version={OPSET}), eager attention",
        "seed": seed, "initializer_range": INIT_RANGE,
        "prompt": [int(t) for t in prompt[0]],
        "tokens": tok_o,
        "decode_steps": DECODE_STEPS,
        "note": "tokens[0] is the prefill's argmax (past length 0); tokens[k] for k >= 1 is "
                "decode step k's, which fed tokens[k-1] with past length 5 + k - 1",
        "inputs": ins, "outputs": outs,
        "input_shapes": {i.name: [x.dim_param or x.dim_value for x in i.type.tensor_type.shape.dim]
                         for i in m.graph.input},
        "output_shapes": {o.name: [x.dim_param or x.dim_value for x in o.type.tensor_type.shape.dim]
                          for o in m.graph.output},
        "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv, "head_dim": head_dim,
        "ffn": ffn, "vocab": vocab, "position_ids": pos_ids,
        "style": name,
        "max_abs_logit_err_ort_vs_torch": err,
        "min_top2_logit_margin": margin,
        "torch_greedy_tokens": tok_t, "torch_generate_tokens": tok_g,
        "torch_agrees": tok_o == tok_t == tok_g,
        "ort": "CPUExecutionProvider, intra_op_num_threads 1, ORT_ENABLE_ALL",
        "ops": sorted({n.op_type for n in m.graph.node}),
        "model_bytes": size,
    }
    with open(os.path.join(d, "generate.json"), "w") as f:
        f.write(dumps(info) + "\n")
    print(f"{name}: {size} bytes, prompt {info['prompt']} -> {tok_o}, max |dlogit| {err:.2e}")


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in MODELS:
        make(name)


if __name__ == "__main__":
    main()
