"""Hugging Face `transformers` architectures, randomly initialised from small configs built
in code (nothing is downloaded), for tools/make_real_models.py. Data generation only."""

import numpy as np
import torch
import torch.nn as nn
import transformers as tf

from real_models_torch import export, seed_all

VOCAB = 128


class Logits(nn.Module):
    """Returns one tensor (logits or last hidden state): what users export."""
    star_args = True

    def __init__(self, model, names, field):
        super().__init__()
        self.model, self.names, self.field = model, names, field

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)), return_dict=True)
        return getattr(out, self.field)


def _text(batch, seq, seed, type_ids=False):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, (batch, seq)).astype(np.int64)
    mask = np.ones((batch, seq), np.int64)
    if batch > 1:
        mask[-1, seq - 2:] = 0  # the last sequence is padded at the end
    feeds = {"input_ids": ids, "attention_mask": mask}
    if type_ids:
        tt = np.zeros((batch, seq), np.int64)
        tt[:, seq // 2:] = 1
        feeds["token_type_ids"] = tt
    return feeds


def gpt2():
    cfg = tf.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=VOCAB, n_positions=64,
                        use_cache=False)
    return tf.GPT2LMHeadModel(cfg), "logits", "GPT2LMHeadModel(n_layer=2, n_embd=32, n_head=4)"


def bert():
    cfg = tf.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=64)
    return tf.BertModel(cfg, add_pooling_layer=False), "last_hidden_state", \
        "BertModel(hidden 32, 2 layers, 4 heads)"


def distilbert():
    cfg = tf.DistilBertConfig(dim=32, n_layers=2, n_heads=4, hidden_dim=64, vocab_size=VOCAB,
                              max_position_embeddings=64)
    return tf.DistilBertModel(cfg), "last_hidden_state", "DistilBertModel(dim 32, 2 layers, 4 heads)"


def llama():
    cfg = tf.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, vocab_size=VOCAB,
                         max_position_embeddings=64, use_cache=False)
    return tf.LlamaForCausalLM(cfg), "logits", "LlamaForCausalLM(hidden 32, 2 layers, 4 heads, 2 KV heads)"


def t5():
    cfg = tf.T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, vocab_size=VOCAB,
                      use_cache=False)
    return tf.T5EncoderModel(cfg), "last_hidden_state", "T5EncoderModel(d_model 32, 2 layers, 4 heads)"


def vit():
    cfg = tf.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, num_labels=10)
    return tf.ViTForImageClassification(cfg), "logits", \
        "ViTForImageClassification(32x32, patch 8, hidden 32, 2 layers)"


def whisper_encoder():
    cfg = tf.WhisperConfig(d_model=32, encoder_layers=2, encoder_attention_heads=4,
                           encoder_ffn_dim=64, num_mel_bins=16, max_source_positions=32,
                           decoder_layers=1, decoder_attention_heads=4, decoder_ffn_dim=64,
                           vocab_size=VOCAB, max_target_positions=32, pad_token_id=0,
                           bos_token_id=1, eos_token_id=2, decoder_start_token_id=1)
    return tf.WhisperModel(cfg).get_encoder(), "last_hidden_state", \
        "WhisperModel(...).encoder (d_model 32, 2 layers, 16 mel bins, 64 frames)"


def wav2vec2():
    cfg = tf.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, conv_dim=(16, 16, 16), conv_stride=(5, 2, 2),
                            conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                            num_conv_pos_embedding_groups=4, do_stable_layer_norm=False)
    return tf.Wav2Vec2Model(cfg), "last_hidden_state", \
        "Wav2Vec2Model (3-layer conv feature encoder 16 ch, hidden 32, 2 layers)"


# name -> (builder, input kind, dynamic variant exported too)
MODELS = {
    "gpt2": (gpt2, "text", True),
    "bert": (bert, "text+types", True),
    "llama": (llama, "text", True),
    "distilbert": (distilbert, "text", False),
    "t5_encoder": (t5, "text", False),
    "vit": (vit, "image", False),
    "whisper_encoder": (whisper_encoder, "mel", False),
    "wav2vec2": (wav2vec2, "audio", False),
}


def feeds_for(kind, seed, batch, seq):
    rng = np.random.default_rng(seed)
    if kind.startswith("text"):
        return _text(batch, seq, seed, type_ids=kind == "text+types")
    if kind == "image":
        return {"pixel_values": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)}
    if kind == "mel":
        return {"input_features": rng.standard_normal((batch, 16, 64)).astype(np.float32)}
    if kind == "audio":
        return {"input_values": rng.standard_normal((batch, 1600)).astype(np.float32)}
    raise ValueError(kind)


def hf_case(name, exporter, path, dynamic, seed):
    """Export one model; returns (feeds for the reference run, description)."""
    build, kind, _ = MODELS[name]
    seed_all(seed)
    model, field, desc = build()
    model.eval()
    ex = feeds_for(kind, seed, 1, 8)
    names = list(ex)
    dyn = None
    if dynamic:
        dyn = {n: {0: "batch", 1: "sequence"} for n in names}
    wrapped = Logits(model, names, field).eval()
    args = tuple(torch.from_numpy(ex[n]) for n in names)
    export(wrapped, args, path, exporter, names, [field], dyn)
    feeds = feeds_for(kind, seed + 1, 2, 7) if dynamic else feeds_for(kind, seed + 1, 1, 8)
    return feeds, f"transformers {tf.__version__} {desc}"
