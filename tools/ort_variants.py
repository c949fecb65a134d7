#!/usr/bin/env python3
"""Golden vectors for onnxruntime's CPU kernel variants -> tests/data/ort-variants/.

MLAS picks some kernels by instruction set and they round differently
(shared/reference/onnxruntime-quantized.md):
- QLinearAdd: SSE2 rounds every f32 step; AVX2 (every AVX2/AVX-512 x86-64) contracts into
  fused multiply-adds; NEON uses a fixed-point form (shift + two multipliers) with a float
  fallback.
- The logistic function (QLinearSigmoid's table, Sigmoid): fused multiply-adds on AVX2 and
  ARM64, separate on SSE2.
- u8 x s8 products (QLinearConv, QLinearMatMul, QGemm, MatMulInteger): AVX2 without VNNI
  (and AVX-512 without VNNI) sums pairs of neighbouring k with 16-bit saturation
  (vpmaddubsw); QLinearConv's k runs in (ky, kx, channel) order (channels-last). The
  depthwise kernel, VNNI, SSE2 and NEON sum exactly.

This script holds bit-exact Python models of each path. The one this machine's onnxruntime
runs is checked against onnxruntime on random and adversarial inputs before anything is
written (the script refuses to write if they disagree); the other paths come from the
models alone. Each case is a one-node model plus inputs and, per variant, the outputs:
  tests/data/ort-variants/<case>/{model.onnx, input_<i>.npy, <variant>.npy}
and manifest.toml records the variants, which were checked against onnxruntime, and the
onnxruntime version and CPU flags.

Usage: /work/venv/bin/python tools/ort_variants.py
"""

import os
import platform

import numpy as np
import onnxruntime as ort
from onnx import helper

from _common import DATA, make_model, finalize_outputs, reset_dir

OUT = os.path.join(DATA, "ort-variants")
VARIANTS = ["sse2", "avx2", "avx2-vnni", "neon"]
rng = np.random.default_rng(7)
F32 = np.float32


# --- exact float32 arithmetic -----------------------------------------------------------

def fma(a, b, c):
    """float32 a*b + c rounded once (vectorized): the product is exact in float64, TwoSum
    gives the exact sum as s + e, and a float64 sum lying exactly halfway between two
    float32 values is settled by the sign of e (else the float64 rounding is harmless)."""
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (F32(a), F32(b), F32(c)))
    p = a * b
    s = p + c
    bp = s - c
    e = (p - bp) + (c - (s - bp))
    r = s.astype(F32)
    lo = np.where(r.astype(np.float64) > s, np.nextafter(r, F32(-np.inf)), r)
    hi = np.nextafter(lo, F32(np.inf))
    mid = (lo.astype(np.float64) + hi.astype(np.float64)) / 2
    at_mid = (s == mid) & (e != 0)
    out = np.where(at_mid, np.where(e > 0, hi, lo), r)
    return out.astype(F32) if out.shape else F32(out)


def rne(v):
    return np.rint(np.asarray(v, dtype=np.float64)).astype(np.int64)


def sat(v, lo, hi):
    return np.clip(v, lo, hi)


# --- QLinearAdd -------------------------------------------------------------------------

def qladd_x86(a, b, sa, za, sb, zb, sc, zc, lo, hi, scalar_b, use_fma):
    """MLAS QLinearAdd (a: vector operand, b: second operand), vectorized over a, b."""
    a, b = np.asarray(a).astype(F32), np.asarray(b).astype(F32)
    ra, rb = F32(F32(sa) / F32(sc)), F32(F32(sb) / F32(sc))
    if use_fma:
        fixed = F32(F32(zc) - fma(ra, F32(za), F32(rb * F32(zb))))
        t = fma(a, ra, fma(b, rb, fixed))
    else:
        fixed = F32(F32(zc) - F32(F32(ra * F32(za)) + F32(rb * F32(zb))))
        if scalar_b:
            t = (fixed + b * rb).astype(F32) + (a * ra).astype(F32)
        else:
            t = (fixed + a * ra).astype(F32) + (b * rb).astype(F32)
    return sat(rne(np.asarray(t, F32)), lo, hi)


def neon_params(ra, rb):
    ok = lambda r: 2.0 ** -14 <= r < 2.0 ** 8
    if not (ok(ra) and ok(rb)):
        return None
    e = ((int(np.frombuffer(F32(max(ra, rb)).tobytes(), np.uint32)[0]) >> 23) & 0xFF) - 127
    shift = 21 - e
    if not 13 <= shift <= 31:
        return None
    ma, mb = int(rne(F32(ra * F32(2.0 ** shift)))), int(rne(F32(rb * F32(2.0 ** shift))))
    if ma >= 1 << 22 or mb >= 1 << 22 or max(ma, mb) < 1 << 21:
        return None
    return shift, ma, mb


def qladd_neon(a, b, sa, za, sb, zb, sc, zc, lo, hi):
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ra, rb = F32(F32(sa) / F32(sc)), F32(F32(sb) / F32(sc))
    p = neon_params(ra, rb)
    if p is not None:
        shift, ma, mb = p
        acc = (a - za) * ma + (b - zb) * mb
        acc = ((acc + 2 ** 31) % 2 ** 32) - 2 ** 31  # int32 wrap-around
        acc = np.where(acc < 0, acc - 1, acc)
        v = (acc + (1 << (shift - 1))) >> shift
        v = sat(v, -32768, 32767)
        v = sat(v + zc, -32768, 32767)
        return sat(v, lo, hi)
    va = (F32(sa) * (a - za).astype(F32)).astype(F32)
    vb = (F32(sb) * (b - zb).astype(F32)).astype(F32)
    vc = ((va + vb).astype(F32) / F32(sc)).astype(F32)
    vc = np.clip(vc, F32(lo - zc), F32(hi - zc))
    return rne((vc + F32(zc)).astype(F32))


def span_kind(ash, bsh, out):
    """'A' / 'B' when MLAS sees that operand as a scalar span, else 'G'."""
    if int(np.prod(ash)) == 1:
        return "A"
    if int(np.prod(bsh)) == 1:
        return "B"
    r = len(out)
    dim = lambda s, i: s[i + len(s) - r] if i + len(s) >= r else 1
    for i in reversed(range(r)):
        if out[i] > 1:
            if dim(ash, i) == 1:
                return "A"
            if dim(bsh, i) == 1:
                return "B"
            return "G"
    return "G"


def qladd_model(variant, a, b, sa, za, sb, zb, sc, zc, dt):
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    out = np.broadcast_shapes(a.shape, b.shape)
    ab = np.broadcast_to(a, out).ravel().astype(np.int64)
    bb = np.broadcast_to(b, out).ravel().astype(np.int64)
    kind = span_kind(a.shape, b.shape, out)
    if variant == "neon":
        res = qladd_neon(ab, bb, sa, za, sb, zb, sc, zc, lo, hi)
    elif kind == "A":  # onnxruntime swaps: the vector is MLAS's A
        res = qladd_x86(bb, ab, sb, zb, sa, za, sc, zc, lo, hi, True, variant != "sse2")
    else:
        res = qladd_x86(ab, bb, sa, za, sb, zb, sc, zc, lo, hi, kind == "B", variant != "sse2")
    return res.reshape(out).astype(dt)


# --- logistic and QLinearSigmoid --------------------------------------------------------

A = [F32(x) for x in (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
                      8.51377133304701e-03, 2.48287947061529e-01)]
B = [F32(x) for x in (6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
                      1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01)]


def logistic(x, use_fma):
    """MLAS logistic on a float32 array."""
    x = np.asarray(x, F32)
    v = np.clip(x, F32(-18.0), F32(18.0)).astype(F32)
    v2 = (v * v).astype(F32)
    madd = (lambda p, q, r: fma(p, q, r)) if use_fma else (lambda p, q, r: ((p * q).astype(F32) + r).astype(F32))
    p = madd(v2, A[0], A[1])
    for a in A[2:]:
        p = madd(p, v2, a)
    p = (p * v).astype(F32)
    q = madd(v2, B[0], B[1])
    for b in B[2:]:
        q = madd(q, v2, b)
    y = np.clip(((p / q).astype(F32) + F32(0.5)).astype(F32), F32(0.0), F32(1.0))
    return np.where(np.isnan(x), x, y).astype(F32)


def quantize(y, ys, yz, lo, hi):
    v = (np.asarray(y, F32) / F32(ys)).astype(F32)
    v = np.clip(v, F32(lo - yz), F32(hi - yz))
    return np.where(np.isnan(v), lo, rne(v) + yz)


def qlsigmoid_model(variant, x, xs, xz, ys, yz, dt):
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    codes = np.arange(lo, hi + 1)
    deq = (F32(xs) * (codes - xz).astype(F32)).astype(F32)
    table = quantize(logistic(deq, variant != "sse2"), ys, yz, lo, hi)
    return table[x.astype(np.int64) - lo].astype(dt)


# --- u8 x s8 products -------------------------------------------------------------------

def gemm_sums(a, w, saturate):
    """Raw sums sum_k a[i, k] * w[j, k] (a u8 rows, w s8 rows, both [*, K]); with
    `saturate`, pairs k = 2p, 2p + 1 are summed and clamped to int16 first."""
    a, w = a.astype(np.int64), w.astype(np.int64)
    if not saturate:
        return a @ w.T
    if a.shape[1] % 2:
        a, w = np.pad(a, ((0, 0), (0, 1))), np.pad(w, ((0, 0), (0, 1)))
    p = a[:, None, :] * w[None, :, :]
    return np.clip(p[..., 0::2] + p[..., 1::2], -32768, 32767).sum(-1)


def conv_cols(x, kh, kw, stride, pad, xz):
    """Channels-last im2col of x [C, H, W]: rows (oy, ox), columns (ky, kx, c)."""
    xp = np.pad(x.astype(np.int64), ((0, 0), (pad, pad), (pad, pad)), constant_values=xz)
    oh, ow = (xp.shape[1] - kh) // stride + 1, (xp.shape[2] - kw) // stride + 1
    rows = [xp[:, oy * stride:oy * stride + kh, ox * stride:ox * stride + kw].transpose(1, 2, 0).ravel()
            for oy in range(oh) for ox in range(ow)]
    return np.array(rows), (oh, ow)


def requant(acc, mult, yz):
    """Scales are powers of two, so f32(acc) * mult is exact but for the f32 rounding of
    acc (|acc| < 2^24 here: exact) and the result rounds half to even."""
    return np.clip(rne(acc.astype(np.float64) * mult) + yz, 0, 255).astype(np.uint8)


def big_u8(shape):
    return np.where(rng.random(shape) < 0.8, rng.integers(150, 256, shape), rng.integers(0, 256, shape)).astype(np.uint8)


def big_s8(shape):
    mag = np.where(rng.random(shape) < 0.7, rng.integers(100, 128, shape), rng.integers(0, 128, shape))
    return (mag * rng.choice([-1, 1], shape)).astype(np.int8)


def qconv_case(cases, name, c, m, k, hw, stride=1, pad=0, group=1, xz=0, one_d=False):
    x = big_u8((1, c, 1 if one_d else hw, hw))
    w = big_s8((m, c // group, 1 if one_d else k, k))
    kh = 1 if one_d else k
    ws = (2.0 ** rng.integers(-1, 2, m)).astype(F32)  # per channel, powers of two
    ys, yz = F32(2.0 ** 14), 128
    bias = rng.integers(-3000, 3000, m).astype(np.int32)
    cg, mg = c // group, m // group
    outs = {}
    for v in VARIANTS:
        sat = v == "avx2" and group != c
        y = None
        for g in range(group):
            xs_ = x[0, g * cg:(g + 1) * cg]
            if not one_d:
                cols, (oh, ow) = conv_cols(xs_, kh, k, stride, pad, xz)
            else:
                xp = np.pad(xs_.astype(np.int64), ((0, 0), (0, 0), (pad, pad)), constant_values=xz)
                ow, oh = (xp.shape[2] - k) // stride + 1, 1
                cols = np.array([xp[:, 0, ox * stride:ox * stride + k].T.ravel() for ox in range(ow)])
            wg = w[g * mg:(g + 1) * mg].transpose(0, 2, 3, 1).reshape(mg, -1) if not one_d else \
                w[g * mg:(g + 1) * mg, :, 0, :].transpose(0, 2, 1).reshape(mg, -1)
            acc = gemm_sums(cols, wg, sat).T  # [mg, positions]
            acc = acc - xz * wg.astype(np.int64).sum(1)[:, None] + bias[g * mg:(g + 1) * mg, None]
            mult = (ws[g * mg:(g + 1) * mg].astype(np.float64) / float(ys))[:, None]
            yg = requant(acc, mult, yz).reshape(mg, *((ow,) if one_d else (oh, ow)))
            y = yg if y is None else np.concatenate([y, yg])
        outs[v] = y[None]
    attrs = dict(kernel_shape=[k] if one_d else [k, k], strides=[stride] * (1 if one_d else 2),
                 pads=[pad] * (2 if one_d else 4), group=group)
    node = helper.make_node("QLinearConv", ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "b"],
                            ["y"], **attrs)
    if one_d:
        x = x[:, :, 0, :]
        w = w[:, :, 0, :]
    init = {"x_scale": F32(1.0), "x_zp": np.array(xz, np.uint8), "w": w, "w_scale": ws,
            "w_zp": np.zeros(m, np.int8), "y_scale": ys, "y_zp": np.array(yz, np.uint8), "b": bias}
    model = make_model([node], {"x": x}, init, [("y", np.uint8)])
    cases.append((name, model, [x], outs))


def qmatmul_case(cases, name, op, m, k, n, az=0):
    a = big_u8((m, k))
    b = big_s8((k, n))
    bz = rng.integers(-3, 4, n).astype(np.int8) if op != "QLinearMatMul" else np.zeros(n, np.int8)
    outs = {}
    for v in VARIANTS:
        acc = gemm_sums(a, b.T, v == "avx2")
        acc = (acc - az * b.astype(np.int64).sum(0)[None, :] - bz.astype(np.int64)[None, :] * a.astype(np.int64).sum(1)[:, None]
               + k * az * bz.astype(np.int64)[None, :])
        outs[v] = acc.astype(np.int32) if op == "MatMulInteger" else requant(acc, 2.0 ** -14, 128)
    if op == "MatMulInteger":
        node = helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"])
        init = {"b": b, "a_zp": np.array(az, np.uint8), "b_zp": bz}
        model = make_model([node], {"a": a}, init, [("y", np.int32)])
    elif op == "QGemm":
        node = helper.make_node("QGemm", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "", "y_scale", "y_zp"],
                                ["y"], domain="com.microsoft", transB=1)
        init = {"a_scale": F32(1.0), "a_zp": np.array(az, np.uint8), "b": np.ascontiguousarray(b.T),
                "b_scale": np.ones(n, F32), "b_zp": bz, "y_scale": F32(2.0 ** 14), "y_zp": np.array(128, np.uint8)}
        model = make_model([node], {"a": a}, init, [("y", np.uint8)], ms=True)
    else:
        node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"], ["y"])
        init = {"a_scale": F32(1.0), "a_zp": np.array(az, np.uint8), "b": b, "b_scale": F32(1.0),
                "b_zp": np.array(0, np.int8), "y_scale": F32(2.0 ** 14), "y_zp": np.array(128, np.uint8)}
        model = make_model([node], {"a": a}, init, [("y", np.uint8)])
    cases.append((name, model, [a], outs))


# --- cases ------------------------------------------------------------------------------

def host_variant():
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    if platform.machine() in ("aarch64", "arm64"):
        return "neon"
    if " avx2" in flags and " fma" in flags:
        return "avx2-vnni" if (" avx512_vnni" in flags or " avx_vnni" in flags) else "avx2"
    return "sse2"


def run_ort(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)[0]


def discriminating_add(dt, shape, b_shape, tries=400):
    """QLinearAdd parameters and inputs on which the variants disagree: for random scales
    and zero points, every (a, b) code pair is evaluated and the pairs where SSE2, AVX2
    and NEON differ are planted into otherwise random inputs."""
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    codes = np.arange(lo, hi + 1)
    ga, gb = [g.ravel() for g in np.meshgrid(codes, codes, indexing="ij")]
    for _ in range(tries):
        sa, sb = F32(rng.uniform(0.01, 0.2)), F32(rng.uniform(0.01, 0.2))
        sc = F32(rng.uniform(0.02, 0.3))
        zz = (lambda: int(rng.integers(-20, 21))) if dt == np.int8 else (lambda: int(rng.integers(100, 156)))
        za, zb, zc = zz(), zz(), zz()
        s = qladd_x86(ga, gb, sa, za, sb, zb, sc, zc, lo, hi, False, False)
        f = qladd_x86(ga, gb, sa, za, sb, zb, sc, zc, lo, hi, False, True)
        n = qladd_neon(ga, gb, sa, za, sb, zb, sc, zc, lo, hi)
        idx = np.nonzero((s != f) | (s != n))[0]
        if (s != f).any() and (f != n).any():
            break
    # Plant discriminating pairs: B's codes are chosen among those that have some, then
    # half of the A elements take a discriminating partner of their B element.
    by_b = {}
    for i in idx:
        by_b.setdefault(int(gb[i]), []).append(int(ga[i]))
    bcodes = np.array(sorted(by_b, key=lambda k: -len(by_b[k])))
    b = rng.choice(bcodes[: max(1, min(8, len(bcodes)))], size=b_shape).astype(dt)
    a = rng.integers(lo, hi + 1, size=shape).astype(dt)
    out = np.broadcast_shapes(shape, b_shape)
    a_idx = np.broadcast_to(np.arange(a.size).reshape(shape), out).ravel()
    b_idx = np.broadcast_to(np.arange(b.size).reshape(b_shape), out).ravel()
    flat_a, flat_b = a.ravel(), b.ravel()
    for k in rng.permutation(len(a_idx))[: len(a_idx) // 2]:
        partners = by_b.get(int(flat_b[b_idx[k]]))
        if partners:
            flat_a[a_idx[k]] = rng.choice(partners)
    a = flat_a.reshape(shape)
    return a, b, sa, za, sb, zb, sc, zc


def add_case(cases, name, dt, a_shape, b_shape):
    a, b, sa, za, sb, zb, sc, zc = discriminating_add(dt, a_shape, b_shape)
    node = helper.make_node("QLinearAdd", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"],
                            ["y"], domain="com.microsoft")
    init = {"a_scale": F32(sa), "a_zp": np.array(za, dt), "b_scale": F32(sb), "b_zp": np.array(zb, dt),
            "y_scale": F32(sc), "y_zp": np.array(zc, dt)}
    model = make_model([node], {"a": a, "b": b}, init, [("y", dt)], ms=True)
    outs = {v: qladd_model(v, a, b, sa, za, sb, zb, sc, zc, dt) for v in VARIANTS}
    cases.append((name, model, [a, b], outs))


def sigmoid_case(cases, name, dt):
    info = np.iinfo(dt)
    x = np.arange(info.min, info.max + 1).astype(dt)
    best = None
    for _ in range(4000):
        xs, ys = F32(rng.uniform(0.02, 0.12)), F32(1.0 / 256.0 * rng.uniform(0.9, 1.1))
        xz = int(rng.integers(-10, 11)) if dt == np.int8 else int(rng.integers(118, 139))
        yz = -128 if dt == np.int8 else 0
        d = int((qlsigmoid_model("avx2", x, xs, xz, ys, yz, dt) != qlsigmoid_model("sse2", x, xs, xz, ys, yz, dt)).sum())
        if best is None or d > best[0]:
            best = (d, xs, xz, ys, yz)
        if d > 0:
            break
    _, xs, xz, ys, yz = best
    node = helper.make_node("QLinearSigmoid", ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                            domain="com.microsoft")
    init = {"x_scale": F32(xs), "x_zp": np.array(xz, dt), "y_scale": F32(ys), "y_zp": np.array(yz, dt)}
    model = make_model([node], {"x": x}, init, [("y", dt)], ms=True)
    outs = {v: qlsigmoid_model(v, x, xs, xz, ys, yz, dt) for v in VARIANTS}
    cases.append((name, model, [x], outs))


def main():
    cases = []
    for dt, tag in ((np.uint8, "u8"), (np.int8, "s8")):
        add_case(cases, f"qladd_{tag}_general", dt, (2, 3, 16), (2, 3, 16))
        add_case(cases, f"qladd_{tag}_scalar_b", dt, (4, 32), (1,))
        add_case(cases, f"qladd_{tag}_channel_b", dt, (1, 8, 6, 6), (1, 8, 1, 1))
        add_case(cases, f"qladd_{tag}_scalar_a", dt, (1,), (3, 40))
        sigmoid_case(cases, f"qlsigmoid_{tag}", dt)
    qconv_case(cases, "u8s8_conv_3x3", 8, 16, 3, 6, pad=1)
    qconv_case(cases, "u8s8_conv_c3_stride2", 3, 8, 3, 9, stride=2, pad=1, xz=100)
    qconv_case(cases, "u8s8_conv_group2", 6, 8, 3, 6, pad=1, group=2)
    qconv_case(cases, "u8s8_conv_1x1", 8, 8, 1, 5)
    qconv_case(cases, "u8s8_conv_1d", 5, 6, 3, 12, pad=1, one_d=True)
    qconv_case(cases, "u8s8_conv_depthwise", 8, 8, 3, 6, pad=1, group=8)
    qmatmul_case(cases, "u8s8_qlinearmatmul_m1", "QLinearMatMul", 1, 40, 24)
    qmatmul_case(cases, "u8s8_qlinearmatmul_m5", "QLinearMatMul", 5, 41, 20, az=7)
    qmatmul_case(cases, "u8s8_qgemm_transb", "QGemm", 3, 40, 24, az=3)
    qmatmul_case(cases, "u8s8_matmulinteger", "MatMulInteger", 4, 40, 16, az=5)
    host = host_variant()
    reset_dir(OUT)
    rows = []
    for name, model, inputs, outs in cases:
        got = run_ort(model, {i.name: x for i, x in zip(model.graph.input, inputs)})
        if not np.array_equal(got, outs[host]):
            bad = int((got != outs[host]).sum())
            raise SystemExit(f"{name}: the {host} model disagrees with onnxruntime on {bad} elements; not writing")
        finalize_outputs(model, [got])
        d = os.path.join(OUT, name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(model.SerializeToString())
        for k, x in enumerate(inputs):
            np.save(os.path.join(d, f"input_{k}.npy"), np.ascontiguousarray(x))
        for v, o in outs.items():
            np.save(os.path.join(d, f"{v}.npy"), np.ascontiguousarray(o))
        differ = [v for v in VARIANTS if not np.array_equal(outs[v], outs[host])]
        rows.append((name, differ))
        print(f"{name}: variants whose outputs differ from {host} (checked against onnxruntime): {differ or 'none'}")
    flags = sorted(f for f in open("/proc/cpuinfo").read().split() if f.startswith(("avx", "fma", "sse4")))
    with open(os.path.join(OUT, "manifest.toml"), "w") as f:
        f.write("# Generated by tools/ort_variants.py; do not edit.\n")
        f.write(f'onnxruntime = "{ort.__version__}"\nchecked_variant = "{host}"\n')
        f.write(f'cpu_flags = "{" ".join(sorted(set(flags)))}"\n')
        f.write(f"variants = {VARIANTS}\n\n")
        for name, differ in rows:
            f.write(f'[case.{name}]\ndiffering = {differ}\n\n')


if __name__ == "__main__":
    main()
