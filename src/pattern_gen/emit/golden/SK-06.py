"""SK-06 FFN / SwiGLU: the hand-written composition of the golden.

g = x·W_gate (+ b_gate) and u = x·W_up (+ b_up) as FP32 accumulators, h = BF16(swiglu(g, u)),
y = BF16(h·W_down) — the FFN of a decoder layer (Qwen3MLP), or h alone without the down projection
(FusedSwiGLU). INT8 W8A8: x quantised per token once (AT-05), g and u the dequantised INT32
products (AT-06), the FP32 activation quantised per token for the down projection, its INT32
product dequantised and rounded once to BF16. Uses PARAMS / DIMS set by the golden module.
"""

from functools import lru_cache  # noqa: F401
from typing import Mapping  # noqa: F401

import ml_dtypes  # noqa: F401
import numpy as np  # noqa: F401
from atoms import *  # noqa: F401,F403  (the per-atom references; the golden module inlines them)

# The golden module sets these per instance; defaults here keep the file importable on its own.
PARAMS: dict = {}
STAGE_PARAMS: dict = {}
DIMS: dict = {}
# --- end of header: everything below is inlined into golden.py ---


@lru_cache(maxsize=4)
def _ffn_weights(seed):
    p, H, I = PARAMS, DIMS["H"], DIMS["I"]
    rng = np.random.default_rng([seed, 0])
    layout, quant = p["weight_layout"], p["quant_mode"]
    weights: dict = {}

    def draw(name, n, k):
        weights[name], scale = make_weight(rng, n, k, layout=layout, quant_mode=quant)
        if quant == "int8_w8a8":
            weights[f"{name}_scale"] = scale

    draw("w_gate", I, H)
    draw("w_up", I, H)
    if p["has_bias"]:
        weights["b_gate"] = uniform(rng, (I,), -0.1, 0.1)
        weights["b_up"] = uniform(rng, (I,), -0.1, 0.1)
    if p["down_proj"]:
        # the down weight reads I = 6144 activations: U(-0.1, 0.1) keeps y in the BF16 range of x
        draw("w_down", H, I)
    return weights


def make_inputs(T: int, seed: int = 0) -> dict:
    """x ~ U(-4, 4) [T, H] BF16 (some rows QUIET): gate values reach both tails of the silu;
    weights ~ U(-0.1, 0.1), biases ~ U(-0.1, 0.1)."""
    rng = np.random.default_rng([seed, 1, T])
    return {"x": activations(rng, T, DIMS["H"], -4.0, 4.0), **_ffn_weights(seed)}


def _projections(inputs):
    p, layout = PARAMS, PARAMS["weight_layout"]
    if p["quant_mode"] == "int8_w8a8":  # exact: INT32 sums of the codes, a fixed FP32 dequant
        x_q, x_s = quant_int8(inputs["x"])
        g = dequant(matmul_int8(x_q, inputs["w_gate"], layout), x_s, inputs["w_gate_scale"])
        u = dequant(matmul_int8(x_q, inputs["w_up"], layout), x_s, inputs["w_up_scale"])
        return g, u
    g = matmul_acc(inputs["x"], inputs["w_gate"], layout)
    u = matmul_acc(inputs["x"], inputs["w_up"], layout)
    if p["has_bias"]:  # in the FP32 accumulator, before any rounding of the projection
        g = (g.astype(np.float64) + f32(inputs["b_gate"]).reshape(1, -1)).astype(np.float32)
        u = (u.astype(np.float64) + f32(inputs["b_up"]).reshape(1, -1)).astype(np.float32)
    return g, u


def golden(inputs: Mapping[str, np.ndarray], ties: dict | None = None) -> dict:
    """The outputs; ``ties``: the BF16 activation's distances from its rounding boundaries, and
    elements to round the other way (atoms.store_tied)."""
    g, u = _projections(inputs)
    if PARAMS["quant_mode"] == "int8_w8a8" and PARAMS["down_proj"]:
        a_q, a_s = quant_int8(swiglu(g, u), ties, site="a")
        acc = matmul_int8(a_q, inputs["w_down"], PARAMS["weight_layout"])
        return {"y": store(dequant(acc, a_s, inputs["w_down_scale"]), "BF16")}
    h = store_tied(swiglu(g, u), "BF16", ties, site="h")
    if not PARAMS["down_proj"]:
        return {"h": h}
    return {"y": store(matmul_acc(h, inputs["w_down"], PARAMS["weight_layout"]), "BF16")}


def tie_bands(inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], ulps: Mapping[str, float]) -> dict:
    """How far y may move when the activation elements within ``ulps`` row-scale units of a BF16
    rounding boundary round the other way (the gate/up sums in another FP32 order). y's accumulator
    is linear in h: the moves |dh| of all near elements, times |W_down|, bound every subset of them;
    the final rounding may then take y one BF16 step further."""
    if "y" not in ulps:
        return {}
    g, u = _projections(inputs)
    a = swiglu(g, u)
    w = np.asarray(inputs["w_down"]).astype(np.float64)
    w_abs = np.abs(w.T if PARAMS["weight_layout"] == "nk" else w)
    if PARAMS["quant_mode"] == "int8_w8a8":  # a near code moves by one step: a_s * |w_q| * w_s
        probe = {}
        _, a_s = quant_int8(a, probe, site="a")
        near = (probe["margin"]["a"] <= ulps["y"]).astype(np.float64)
        w_scale = f32(inputs["w_down_scale"]).astype(np.float64).reshape(1, -1)
        move = (near @ w_abs) * f32(a_s).astype(np.float64) * w_scale
    else:
        move = _bf16_moves(a, w_abs, ulps["y"])
    y = np.abs(np.asarray(expected["y"]).astype(np.float64)) + move
    step = np.exp2(np.floor(np.log2(np.maximum(y, 2.0**-126))) - 7)  # one BF16 ulp at |y| + move
    return {"y": np.where(move > 0, move + step, 0.0)}


def _bf16_moves(a, w_abs, ulps):
    """|dh| of the activation elements within ``ulps`` of a BF16 boundary, through |W_down|."""
    probe: dict = {}
    h = store_tied(a, "BF16", probe, site="h").astype(np.float64)
    near = probe["margin"]["h"] <= ulps
    flipped = store_tied(a, "BF16", {"flip": {"h": near}}, site="h").astype(np.float64)
    return np.abs(flipped - h) @ w_abs
