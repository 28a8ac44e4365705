"""SK-01 Online Flash Attention over a paged KV cache: the hand-written composition of the golden.

For each query token and query head: the keys and values its sequence has in the cache, gathered
through the token's block-table row (AT-17), then plain softmax attention in float64 (AT-12,
AT-01, AT-13 as one softmax over all keys — not the online formulation the kernel uses), stored
as BF16. GQA: query head g reads kv head g // (NQ / NKV).
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


def make_inputs(T: int, seed: int = 0) -> dict:
    d = DIMS
    rng = np.random.default_rng([seed, 1, T])
    table, lens, _, owned = paged_sequences(rng, T, d["NB"], d["BS"], d["MB"])
    width = d["NKV"] * d["D"]
    return {
        "q": uniform(rng, (T, d["NQ"], d["D"]), -1.0, 1.0),
        "k_cache": loud_cache(rng, owned, width, key=True),
        "v_cache": loud_cache(rng, owned, width, key=False),
        "block_table": table,
        "context_lens": lens,
    }


def golden(inputs: Mapping[str, np.ndarray]) -> dict:
    d = DIMS
    out = paged_attention(
        inputs["q"],
        inputs["k_cache"],
        inputs["v_cache"],
        inputs["block_table"],
        inputs["context_lens"],
        d["NKV"],
        d["D"],
        d["BS"],
        PARAMS["scale"],
    )
    return {"out": store(out, "BF16")}
