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

# The golden module sets these per instance; defaults here keep the file importable on its own.
PARAMS: dict = {}
STAGE_PARAMS: dict = {}
DIMS: dict = {}
# --- end of header: everything below is inlined into golden.py ---


def _sequences(T):
    """How T query tokens split into sequences: T <= 4 decodes T sequences (one new token each);
    a larger T prefills two sequences (causal, the second one with a long history)."""
    if T <= 4:
        return [1] * T
    return [T // 2, T - T // 2]


def make_inputs(T: int, seed: int = 0) -> dict:
    d = DIMS
    rng = np.random.default_rng([seed, 1, T])
    nq, nkv, D, nb, bs, mb = d["NQ"], d["NKV"], d["D"], d["NB"], d["BS"], d["MB"]
    seqs = _sequences(T)
    # each sequence gets at most its share of the cache's blocks (and at most a table row)
    width = min(mb, nb // len(seqs)) * bs
    # Loud stale entries: every cache row no sequence owns holds large values, so a key read past a
    # token's count, through a wrong block or from the other cache dominates the softmax and fails.
    k_cache = uniform(rng, (nb * bs, nkv * D), -4.0, 4.0)
    v_cache = uniform(rng, (nb * bs, nkv * D), 3.0, 4.0)
    owned = np.zeros(nb * bs, bool)
    blocks = rng.permutation(nb)
    table = np.full((T, mb), -1, np.int32)
    lens = np.zeros(T, np.int32)
    t, used = 0, 0
    for i, s1 in enumerate(seqs):
        # history: a long one for the last sequence (several blocks, a partial last block)
        room = max(width - s1, 0)
        hist = int(rng.integers(0, room + 1)) if i < len(seqs) - 1 else room - int(rng.integers(0, min(bs, room) + 1))
        total = hist + s1
        need = -(-total // bs)
        row = blocks[used:used + need]
        used += need
        for p in range(total):
            r = int(row[p // bs]) * bs + p % bs
            owned[r] = True
        for s in range(s1):  # causal: query s of the sequence sees keys 0 .. hist + s
            table[t, :need] = row
            lens[t] = hist + s + 1
            t += 1
    k_cache[owned] = uniform(rng, (int(owned.sum()), nkv * D), -1.0, 1.0)
    v_cache[owned] = uniform(rng, (int(owned.sum()), nkv * D), -1.0, 1.0)
    q = uniform(rng, (T, nq, D), -1.0, 1.0)
    return {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": table, "context_lens": lens}


def golden(inputs: Mapping[str, np.ndarray]) -> dict:
    d, p = DIMS, PARAMS
    nq, nkv, D, bs = d["NQ"], d["NKV"], d["D"], d["BS"]
    group = nq // nkv
    q = inputs["q"]
    T = q.shape[0]
    out = np.zeros((T, nq, D))
    for t in range(T):
        n = int(inputs["context_lens"][t])
        for h in range(nkv):
            k = block_gather(inputs["k_cache"], inputs["block_table"][t], n, bs, h, D)
            v = block_gather(inputs["v_cache"], inputs["block_table"][t], n, bs, h, D)
            out[t, h * group:(h + 1) * group] = attention(q[t, h * group:(h + 1) * group], k, v, p["scale"])
    return {"out": store(out, "BF16")}
