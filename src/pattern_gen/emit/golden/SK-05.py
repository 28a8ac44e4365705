"""SK-05 Fused Pre-Attn, phase 1 (Qwen3): the hand-written composition of the golden.

x_add = x + residual (FP32; residual_out is its BF16 rounding) -> norm_linear (QKV) -> split ->
per-head RMSNorm of q (q_gamma) and k (k_gamma) -> RoPE (AT-04 variant A, rotary_dim = D) on q
and k; v passes through; k and v are written into the paged caches at the tokens' slots (AT-16).
"""

from functools import lru_cache  # noqa: F401
from typing import Mapping  # noqa: F401

import ml_dtypes  # noqa: F401
import numpy as np  # noqa: F401
from atoms import *  # noqa: F401,F403  (the per-atom references; the golden module inlines them)
from attention import *  # noqa: F401,F403  (the attention references, inlined after atoms.py)

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
    qkv = (d["NQ"] + 2 * d["NKV"]) * d["D"]
    weights = {}
    if p["has_gamma"]:
        weights["gamma"] = uniform(rng, (d["H"],), -1.0, 1.0)
    w, w_scale = make_weight(
        rng,
        qkv,
        d["H"],
        layout=p["weight_layout"],
        quant_mode=p["quant_mode"],
        quiet_rows=quiet_heads(0, d["NQ"], d["D"]) + quiet_heads(d["NQ"], d["NKV"], d["D"]),
    )  # QUIET q and k heads: q_norm and k_norm see eps
    weights["weight"] = w
    if w_scale is not None:
        weights["weight_scale"] = w_scale
    if p["has_bias"]:
        weights["bias"] = uniform(rng, (qkv,), -0.1, 0.1)
    if _stage("q_norm", "has_gamma", True):
        weights["q_gamma"] = uniform(rng, (d["D"],), -1.0, 1.0)
    if _stage("k_norm", "has_gamma", True):
        weights["k_gamma"] = uniform(rng, (d["D"],), -1.0, 1.0)
    return weights


def make_inputs(T: int, seed: int = 0) -> dict:
    rng = np.random.default_rng([seed, 1, T])
    x = activations(rng, T, DIMS["H"])
    residual = activations(rng, T, DIMS["H"])
    cos, sin = rope_angles(rng, T, DIMS["D"])
    width = DIMS["NKV"] * DIMS["D"]
    # phase 1 writes each token's k/v at its position's slot; phase 2 reads the sequences back
    table, lens, slots, owned = paged_sequences(rng, T, DIMS["NB"], DIMS["BS"], DIMS["MB"], padded=True)
    caches = {
        "slot_mapping": slots,
        "k_cache": loud_cache(rng, owned, width, key=True),  # earlier tokens' entries: must survive
        "v_cache": loud_cache(rng, owned, width, key=False),
        "block_table": table,
        "context_lens": lens,
    }
    return {"x": x, "residual": residual, "cos": cos, "sin": sin, **caches, **_weights(seed)}


# phase 2 is judged from what phase 1 of the kernel wrote: q and the caches are judged on their own,
# and a BF16 rounding of q or k that went the other way must not fail the attention that reads it.
CHAINED = {"attn": ("q", "k_cache", "v_cache")}


def golden(
    inputs: Mapping[str, np.ndarray], given: Mapping[str, np.ndarray] | None = None, ties: dict | None = None
) -> dict:
    """The outputs; ``given`` (kernel outputs) replaces q and the caches read by the attention;
    ``ties``: the INT8 codes' distances from a rounding boundary, and codes to round the other way
    (atoms.quant_int8)."""
    p, d = PARAMS, DIMS
    T = inputs["x"].shape[0]
    x_add = f32(inputs["x"]) + f32(inputs["residual"])
    out = {"residual_out": store(x_add, "BF16")}
    r = norm_linear(
        x_add, p, inputs.get("gamma"), inputs["weight"], inputs.get("weight_scale"), inputs.get("bias"), ties=ties
    )
    if p["output_rstd"]:
        out["rstd"] = r["rstd"]
    qkv = np.asarray(r["y"])
    nq, nkv, D = d["NQ"] * d["D"], d["NKV"] * d["D"], d["D"]
    q_gamma = inputs.get("q_gamma") if _stage("q_norm", "has_gamma", True) else None
    k_gamma = inputs.get("k_gamma") if _stage("k_norm", "has_gamma", True) else None
    q, _ = rmsnorm(
        qkv[:, :nq].reshape(T * d["NQ"], D),
        q_gamma,
        eps=_stage("q_norm", "eps", 1e-6),
        mode=_stage("q_norm", "rsqrt_mode", "rsqrt"),
    )
    k, _ = rmsnorm(
        qkv[:, nq : nq + nkv].reshape(T * d["NKV"], D),
        k_gamma,
        eps=_stage("k_norm", "eps", 1e-6),
        mode=_stage("k_norm", "rsqrt_mode", "rsqrt"),
    )
    out["q"] = store(rope(q.reshape(T, d["NQ"], D), inputs["cos"], inputs["sin"]), "BF16")
    k_rot = store(rope(k.reshape(T, d["NKV"], D), inputs["cos"], inputs["sin"]), "BF16")
    v = store(f32(qkv[:, nq + nkv :]), "BF16")
    out["k_cache"] = cache_scatter(inputs["k_cache"], inputs["slot_mapping"], k_rot)
    out["v_cache"] = cache_scatter(inputs["v_cache"], inputs["slot_mapping"], v)
    # phase 2 reads q as phase 1 stored it (BF16) and the caches as phase 1 left them
    read = {name: (given or {}).get(name, out[name]) for name in ("q", "k_cache", "v_cache")}
    out["attn"] = store(
        paged_attention(
            read["q"],
            read["k_cache"],
            read["v_cache"],
            inputs["block_table"],
            inputs["context_lens"],
            d["NKV"],
            D,
            d["BS"],
            _stage("attn_softmax", "scale", 1.0 / np.sqrt(D)),
        ),
        "BF16",
    )
    return out
