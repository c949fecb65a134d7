#!/usr/bin/env python3
"""Export the PyTorch models the PUMA engine is checked on, as a user would (docs/puma.md).

Usage: /work/venv/bin/python tools/export_puma_models.py OUT_DIR [--check]
       /work/venv/bin/python tools/export_puma_models.py --fixture

Writes to OUT_DIR (nothing is downloaded: weights are torchvision's random
initialisation with a fixed seed, so the files are reproducible):
  resnet18.onnx, mobilenet_v2.onnx, squeezenet1_1.onnx, vgg16.onnx   (1x3x224x224)
  prenorm_block.onnx   pre-norm transformer encoder block: LayerNorm -> 8-head
                       self-attention (nn.MultiheadAttention) -> residual -> LayerNorm ->
                       MLP 512-2048-512 with GELU (erf) -> residual; input [1, 16, 512]
  SHA256SUMS           checksums of the exported files (the big files are not committed:
                       regenerate them and compare; --check verifies an existing dir)

--fixture writes crates/puma/tests/fixtures/prenorm_block_d64.onnx: the same block at
d = 64, 4 heads, MLP 256, 8 tokens (67 k parameters), committed for tests/transformer.rs.

The models are exported with torch.onnx.export (TorchScript exporter, opset 17, static
shapes). Only `prenorm_block.onnx` is small enough to commit as a fixture
(crates/puma/tests/fixtures/); the CNNs are several MB to half a GB.
"""
import hashlib
import os
import sys

import torch
import torch.nn as nn
import torchvision

SEED = 0


class PreNormBlock(nn.Module):
    """x + MHA(LN(x)); then + MLP(LN(.)) — the pre-norm encoder block (GPT-2/ViT order)."""

    def __init__(self, d=512, heads=8, ff=2048):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(ff, d)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


def models():
    torch.manual_seed(SEED)
    cnn = {
        "resnet18": torchvision.models.resnet18,
        "mobilenet_v2": torchvision.models.mobilenet_v2,
        "squeezenet1_1": torchvision.models.squeezenet1_1,
        "vgg16": torchvision.models.vgg16,
    }
    for name, f in cnn.items():
        torch.manual_seed(SEED)
        yield name, f(weights=None).eval(), torch.randn(1, 3, 224, 224), "input", "logits"
    torch.manual_seed(SEED)
    yield "prenorm_block", PreNormBlock().eval(), torch.randn(1, 16, 512), "x", "y"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main(out, check):
    os.makedirs(out, exist_ok=True)
    # nn.MultiheadAttention's inference fast path is one fused aten op that the ONNX
    # exporter cannot write; the ordinary path exports as MatMul/Softmax/... nodes.
    torch.backends.mha.set_fastpath_enabled(False)
    sums = []
    for name, m, x, iname, oname in models():
        path = os.path.join(out, f"{name}.onnx")
        if not check:
            with torch.no_grad():
                torch.onnx.export(
                    m,
                    (x,),
                    path,
                    opset_version=17,
                    input_names=[iname],
                    output_names=[oname],
                    dynamo=False,
                )
        sums.append(f"{sha256(path)}  {name}.onnx")
        print(f"{'checked' if check else 'wrote'} {path}")
    text = "\n".join(sums) + "\n"
    listing = os.path.join(out, "SHA256SUMS")
    if check:
        with open(listing) as f:
            if f.read() != text:
                sys.exit("checksums differ from SHA256SUMS")
    else:
        with open(listing, "w") as f:
            f.write(text)


def fixture():
    torch.backends.mha.set_fastpath_enabled(False)
    torch.manual_seed(SEED)
    m = PreNormBlock(d=64, heads=4, ff=256).eval()
    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "crates", "puma", "tests", "fixtures", "prenorm_block_d64.onnx",
    )
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(m, (torch.randn(1, 8, 64),), path, opset_version=17,
                          input_names=["x"], output_names=["y"], dynamo=False)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, sha256 {sha256(path)})")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if sys.argv[1] == "--fixture":
        fixture()
    else:
        main(sys.argv[1], "--check" in sys.argv[2:])
