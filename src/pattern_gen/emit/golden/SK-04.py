"""SK-04 Multi-Stage Fused Prolog (DeepSeek-V4 MLA prolog): the hand-written composition.

q path: q_a = x @ wq_a -> norm_linear (RMSNorm * gamma_cq -> qr; qr @ wq_b) -> per-head RMSNorm
(no gamma) -> q; kv path: kv = RMSNorm(x @ wkv) * gamma_ckv (v3: of the first DKV columns, the last R
columns rotated into kr). Fixed stages honour STAGE_PARAMS.
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


def _stage(name, key, default):
    return STAGE_PARAMS.get(name, {}).get(key, default)


@lru_cache(maxsize=4)
def _weights(seed):
    p, d = PARAMS, DIMS
    rng = np.random.default_rng([seed, 0])
    weights = {}
    weights["wq_a"], _ = make_weight(rng, d["Q"], d["H"], layout=_stage("q_a_proj", "weight_layout", "kn"))
    if p["has_gamma"]:
        weights["gamma_cq"] = uniform(rng, (d["Q"],), -1.0, 1.0)
    wq_b, wq_b_scale = make_weight(
        rng,
        d["NH"] * d["D"],
        d["Q"],
        layout=p["weight_layout"],
        quant_mode=p["quant_mode"],
        quiet_rows=quiet_heads(0, d["NH"], d["D"]),
    )  # QUIET heads: q_head_norm sees eps
    weights["wq_b"] = wq_b
    if wq_b_scale is not None:
        weights["wq_b_scale"] = wq_b_scale
    if p["has_bias"]:
        weights["bias"] = uniform(rng, (d["NH"] * d["D"],), -0.1, 0.1)
    kv_width = d["DKV"] + (d["R"] if p.get("kv_layout", "v4") == "v3" else 0)  # v3: latent + k_pe columns
    weights["wkv"], _ = make_weight(rng, kv_width, d["H"], layout=_stage("kv_proj", "weight_layout", "kn"))
    if _stage("kv_norm", "has_gamma", True):
        weights["gamma_ckv"] = uniform(rng, (d["DKV"],), -1.0, 1.0)
    return weights


def make_inputs(T: int, seed: int = 0) -> dict:
    rng = np.random.default_rng([seed, 1, T])
    x = activations(rng, T, DIMS["H"])
    cos, sin = rope_angles(rng, T, DIMS["R"])
    return {"x": x, "cos": cos, "sin": sin, **_weights(seed)}


# q is judged from the kernel's own qr: qr is a BF16 (or INT8) rounding of an FP32 norm of an FP32
# sum, and one element landing on the other side of a rounding boundary spreads over the whole row of
# q through the K = Q dot product. qr itself is judged against the independent golden.
CHAINED = {"q": ("qr", "qr_scale")}


def _q_flat(qr, qr_scale, inputs):
    """qr @ wq_b from a given qr (AT-11: its INT8 codes and per-token scale)."""
    p = PARAMS
    bias = inputs.get("bias") if p["has_bias"] else None
    if p["atom"] == "AT-11":
        y, _, _ = linear(
            None,
            inputs["wq_b"],
            layout=p["weight_layout"],
            out_dtype=p["out_dtype"],
            weight_scale=inputs.get("wq_b_scale"),
            bias=bias,
            codes=(qr, qr_scale),
        )
    else:
        y, _, _ = linear(
            qr,
            inputs["wq_b"],
            layout=p["weight_layout"],
            quant_mode=p["quant_mode"],
            out_dtype=p["out_dtype"],
            weight_scale=inputs.get("wq_b_scale"),
            bias=bias,
            k_split=p.get("k_split", False),
        )
    return y


def golden(
    inputs: Mapping[str, np.ndarray], given: Mapping[str, np.ndarray] | None = None, ties: dict | None = None
) -> dict:
    """The outputs; ``given`` (kernel outputs) replaces qr (and qr_scale) upstream of q; ``ties``:
    the distances of qr's codes and of q_a's BF16 values from a rounding boundary, and codes to round
    the other way (atoms.quant_int8)."""
    p, d = PARAMS, DIMS
    x = inputs["x"]
    T = x.shape[0]
    # q_a's BF16 rounding is a tie site too: the quantiser reads it (through the norm)
    q_a, _, _ = linear(
        x,
        inputs["wq_a"],
        layout=_stage("q_a_proj", "weight_layout", "kn"),
        ties=ties,
        site="q_a",
        k_split=_stage("q_a_proj", "k_split", False),
    )
    r = norm_linear(
        q_a, p, inputs.get("gamma_cq"), inputs["wq_b"], inputs.get("wq_b_scale"), inputs.get("bias"), ties=ties
    )
    out = {"qr": r["h"]}
    if p["atom"] == "AT-11":
        out["qr_scale"] = r["h_scale"]
    if p["output_rstd"]:
        out["qr_rstd"] = r["rstd"]
    q_flat = r["y"]
    if given is not None and "qr" in given:
        q_flat = _q_flat(given["qr"], given.get("qr_scale"), inputs)
    q_heads = np.asarray(q_flat).reshape(T, d["NH"], d["D"])
    if p.get("kv_layout", "v4") == "v4":  # V4 normalises each head of q; DeepSeek-V2/V3 do not
        q_rows = q_heads.reshape(T * d["NH"], d["D"])
        q_normed, _ = rmsnorm(
            q_rows, None, eps=_stage("q_head_norm", "eps", 1e-6), mode=_stage("q_head_norm", "rsqrt_mode", "rsqrt")
        )
        q_heads = q_normed.reshape(T, d["NH"], d["D"])
    out["q"] = store(rope(q_heads, inputs["cos"], inputs["sin"], partial=True, interleaved=True), "BF16")
    kv_a, _, _ = linear(
        x, inputs["wkv"], layout=_stage("kv_proj", "weight_layout", "kn"), k_split=_stage("kv_proj", "k_split", False)
    )
    gamma_ckv = inputs.get("gamma_ckv") if _stage("kv_norm", "has_gamma", True) else None
    kv_norm = {"eps": _stage("kv_norm", "eps", 1e-6), "mode": _stage("kv_norm", "rsqrt_mode", "rsqrt")}
    if p.get("kv_layout", "v4") == "v3":  # DeepSeek-V2/V3: norm the latent, rotate k_pe apart
        kv_a = np.asarray(kv_a)
        kv, _ = rmsnorm(kv_a[:, : d["DKV"]], gamma_ckv, **kv_norm)
        out["kv"] = store(kv, "BF16")
        k_pe = f32(kv_a[:, d["DKV"] :]).reshape(T, 1, d["R"])
        out["kr"] = store(rope(k_pe, inputs["cos"], inputs["sin"], interleaved=True), "BF16").reshape(T, d["R"])
        return out
    kv, _ = rmsnorm(kv_a, gamma_ckv, **kv_norm)
    kv_rot = rope(kv.reshape(T, 1, d["DKV"]), inputs["cos"], inputs["sin"], partial=True, interleaved=True)
    out["kv"] = store(kv_rot, "BF16").reshape(T, d["DKV"])
    return out
