"""Ready ONNX models shipped inside PyPI packages, for tools/make_real_models.py: Silero VAD
(silero-vad wheel: If on the sample rate, LSTM, STFT-as-Conv; one half-precision file) and
PaddleOCR PP-OCR (rapidocr-onnxruntime wheel: paddle2onnx exports with -1 / unnamed /
p2o.DynamicDimension dims). The wheels are fetched with `pip download --no-deps` (the
package registry is the only network use) into tools/out/wheels/. Data generation only."""

import os
import subprocess
import sys
import zipfile

import numpy as np

from real_models_common import ROOT

WHEELS = os.path.join(ROOT, "tools", "out", "wheels")
PACKAGES = {"silero-vad": "6.2.3", "rapidocr-onnxruntime": "1.4.4"}


def wheel(pkg):
    ver = PACKAGES[pkg]
    stem = f"{pkg.replace('-', '_')}-{ver}-py3-none-any.whl"
    path = os.path.join(WHEELS, stem)
    if not os.path.exists(path):
        os.makedirs(WHEELS, exist_ok=True)
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                               f"{pkg}=={ver}", "-d", WHEELS])
    return path


def extract(pkg, member, dst):
    with zipfile.ZipFile(wheel(pkg)) as z, open(dst, "wb") as f:
        f.write(z.read(member))
    return dst


def vad_feeds(seed, with_sr=True, samples=512):
    rng = np.random.default_rng(seed)
    f = {"input": (0.1 * rng.standard_normal((1, samples))).astype(np.float32),
         "state": (0.1 * rng.standard_normal((2, 1, 128))).astype(np.float32)}
    if with_sr:
        f["sr"] = np.array(16000, np.int64)
    return f


def image(seed, shape):
    return {"x": np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)}


# case -> (package, member, feeds, description, big)
CASES = {
    "pkg_silero_vad": ("silero-vad", "silero_vad/data/silero_vad.onnx", lambda: vad_feeds(31),
                       "Silero VAD v6 (spox export, opset 16): If on the sample rate sr, LSTM; fed 1x512 at 16 kHz", False),
    "pkg_silero_vad_16k_op15": ("silero-vad", "silero_vad/data/silero_vad_16k_op15.onnx", lambda: vad_feeds(32),
                                "Silero VAD 16 kHz (torch.onnx, opset 15, If on sr); fed 1x512", False),
    "pkg_silero_vad_op18_ifless": ("silero-vad", "silero_vad/data/silero_vad_op18_ifless.onnx", lambda: vad_feeds(33),
                                   "Silero VAD \"ifless\" file (torch.onnx, opset 18; still has an If); fed 1x512 at 16 kHz", True),
    "pkg_silero_vad_half": ("silero-vad", "silero_vad/data/silero_vad_half.onnx", lambda: vad_feeds(34, with_sr=False),
                            "Silero VAD half-precision weights (opset 16); fed 1x512", True),
    "pkg_ppocr_cls": ("rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                      lambda: image(35, (1, 3, 48, 192)),
                      "PaddleOCR mobile v2.0 text direction classifier (paddle2onnx, opset 11, dims -1/unknown); fed 1x3x48x192", False),
    "pkg_ppocr_det": ("rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                      lambda: image(36, (1, 3, 96, 128)),
                      "PP-OCRv4 text detector (paddle2onnx, opset 12, p2o.DynamicDimension dims); fed 1x3x96x128", True),
    "pkg_ppocr_rec": ("rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                      lambda: image(37, (1, 3, 48, 160)),
                      "PP-OCRv4 text recognizer (paddle2onnx, opset 12, symbolic width); fed 1x3x48x160", True),
}
