"""SK-02 Single-Pass Attention: the hand-written composition of the golden.

For each query token and kv head h: the scores of the group's query heads against all S keys of
head h, s = q·kᵀ (exact products of the BF16 inputs, rounded once to FP32 as the Cube leaves them),
scaled in FP32, the softmax of whole rows (AT-02's reference), p rounded once to BF16 (the P·V
operand), o = p·v in float64, stored as BF16. GQA: query head g reads kv head g // (NQ / NKV).
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


def make_inputs(T: int, seed: int = 0) -> dict:
    """q ~ U(-1, 1) [T, NQ, D]; k ~ U(-3, 3) so the scaled scores spread over a few units (a
    softmax that is neither flat nor one-hot); v ~ U(-1, 1), one kv head's values shifted by +1 so
    a read of the wrong head's values moves the output's mean."""
    d = DIMS
    rng = np.random.default_rng([seed, 1, T])
    width = d["NKV"] * d["D"]
    v = rng.uniform(-1.0, 1.0, size=(d["S"], width)).astype(np.float32)
    v[:, : d["D"]] = v[:, : d["D"]] * 0.5 + 0.5
    return {
        "q": uniform(rng, (T, d["NQ"], d["D"]), -1.0, 1.0),
        "k": uniform(rng, (d["S"], width), -3.0, 3.0),
        "v": store(v, "BF16"),
    }


def golden(inputs: Mapping[str, np.ndarray]) -> dict:
    d = DIMS
    nq, nkv, hd, S = d["NQ"], d["NKV"], d["D"], d["S"]
    group = nq // nkv
    q = np.asarray(inputs["q"]).astype(np.float64)
    T = q.shape[0]
    q = q.reshape(T, nkv, group, hd)
    k = np.asarray(inputs["k"]).astype(np.float64).reshape(S, nkv, hd)
    v = np.asarray(inputs["v"]).astype(np.float64).reshape(S, nkv, hd)
    s = np.einsum("thgd,shd->thgs", q, k).astype(np.float32)  # the Cube's FP32 scores
    ss = (s * np.float32(PARAMS["scale"])).astype(np.float32)  # scaled in FP32
    p = store(softmax(ss), "BF16").astype(np.float64)  # AT-02, then the one rounding of the weights
    o = np.einsum("thgs,shd->thgd", p, v)
    return {"out": store(o.reshape(T, nq, hd), "BF16")}
