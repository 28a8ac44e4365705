"""SK-03 Linear Projection (Norm -> MatMul): the hand-written composition of the golden.

y = norm_linear(x) per token; inputs as upstream. Uses PARAMS / DIMS set by the golden module.
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
def _weights(seed):
    p, K, N = PARAMS, DIMS["K"], DIMS["N"]
    rng = np.random.default_rng([seed, 0])
    weights = {}
    if p["has_gamma"]:
        weights["gamma"] = uniform(rng, (K,), -1.0, 1.0)
    w, w_scale = make_weight(rng, N, K, layout=p["weight_layout"], quant_mode=p["quant_mode"])
    weights["weight"] = w
    if w_scale is not None:
        weights["weight_scale"] = w_scale
    if p["has_bias"]:
        weights["bias"] = uniform(rng, (N,), -0.1, 0.1)
    return weights


def make_inputs(T: int, seed: int = 0) -> dict:
    """x ~ U(-1, 1) [T, K] BF16 (some rows QUIET); gamma ~ U(-1, 1); weight ~ U(-0.1, 0.1) (quantised
    per quant_mode)."""
    rng = np.random.default_rng([seed, 1, T])
    return {"x": activations(rng, T, DIMS["K"]), **_weights(seed)}


def golden(inputs: Mapping[str, np.ndarray], ties: dict | None = None) -> dict:
    """The outputs; ``ties``: the INT8 codes' distances from a rounding boundary, and codes to
    round the other way (atoms.quant_int8)."""
    p = PARAMS
    r = norm_linear(
        inputs["x"], p, inputs.get("gamma"), inputs["weight"], inputs.get("weight_scale"), inputs.get("bias"), ties=ties
    )
    out = {"y": r["y"]}
    if p["output_rstd"]:
        out["rstd"] = r["rstd"]
    return out
