"""Per-atom NumPy references of the attention atoms (AT-17 block gather, AT-12/AT-01/AT-13 the
score, softmax and value products) and the paged-cache inputs — hand-written, independent of ptosim
and of the cards. Inlined into every instance's ``golden.py`` after ``atoms.py``, whose helpers it uses.
"""

import numpy as np
from atoms import *  # noqa: F401,F403  (f32, store, QUIET, …: inlined before this file)


# AT-17 Block-table gather, AT-12/AT-01/AT-13 attention -----------------------------------------------
def block_gather(cache, table_row, n_keys, block_size, head, head_dim):
    """AT-17: the first ``n_keys`` keys (or values) of a sequence, head ``head``: token p lives in
    cache row table_row[p // block_size] * block_size + p % block_size (vLLM's paged layout)."""
    p = np.arange(int(n_keys))
    rows = np.asarray(table_row, np.int64)[p // block_size] * block_size + p % block_size
    return np.asarray(cache)[rows, head * head_dim : (head + 1) * head_dim]


def attention(q, k, v, scale):
    """AT-12 + AT-01 + AT-13 as plain softmax attention in float64 — independent of the online
    formulation: softmax(q·kᵀ·scale) over all keys at once, then ·v. q [M, D], k/v [N, D] -> [M, D]."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q @ k.T * float(scale)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def paged_sequences(rng, T, nb, bs, mb, padded=False):
    """T query tokens as sequences in a paged cache (vLLM's layout): T <= 4 decodes T sequences (one
    new token each), a larger T prefills two (causal rows). Each sequence gets distinct random blocks
    (at most its share of the cache, at most a table row) and a random history before its new
    tokens; the last sequence a long one ending in a partial block. Returns (table [T, mb] INT32,
    -1 past the blocks a row needs; lens [T] INT32, keys each token sees, its own included; slots
    [T] INT32, the cache row of each token's own key; owned [nb*bs] bool, the rows holding a key of
    some sequence). ``padded``: for T >= 3 the last token is padding (slot -1; it sees key 0 of the
    first sequence)."""
    real = T - 1 if padded and T >= 3 else T
    seqs = [1] * real if real <= 4 else [real // 2, real - real // 2]
    width = min(mb, nb // len(seqs)) * bs
    blocks = rng.permutation(nb)
    table = np.full((T, mb), -1, np.int32)
    lens = np.zeros(T, np.int32)
    slots = np.full(T, -1, np.int32)
    owned = np.zeros(nb * bs, bool)
    t, used = 0, 0
    for i, s1 in enumerate(seqs):
        room = max(width - s1, 0)
        hist = int(rng.integers(0, room + 1)) if i < len(seqs) - 1 else room - int(rng.integers(0, min(bs, room) + 1))
        need = -(-(hist + s1) // bs)
        row = blocks[used : used + need]
        used += need
        where = row[np.arange(hist + s1) // bs] * bs + np.arange(hist + s1) % bs
        owned[where] = True
        for s in range(s1):
            table[t, :need] = row
            lens[t] = hist + s + 1
            slots[t] = where[hist + s]
            t += 1
    if real < T:
        table[T - 1] = table[0]
        lens[T - 1] = 1
    return table, lens, slots, owned


def loud_cache(rng, owned, width, key):
    """A cache whose rows no sequence owns hold loud values (keys ±4, values 3..4): a read past a
    token's count, through a wrong block or from the other cache dominates its softmax."""
    cache = uniform(rng, (owned.size, width), -4.0, 4.0) if key else uniform(rng, (owned.size, width), 3.0, 4.0)
    cache[owned] = uniform(rng, (int(owned.sum()), width), -1.0, 1.0)
    return cache


def paged_attention(q, k_cache, v_cache, table, lens, nkv, head_dim, block_size, scale):
    """Every token's attention over its sequence's keys (AT-17 gather, then ``attention``), float64:
    q [T, NQ, D] -> [T, NQ, D]; query head g reads kv head g // (NQ / NKV)."""
    T, nq = q.shape[0], q.shape[1]
    group = nq // nkv
    out = np.zeros((T, nq, head_dim))
    for t in range(T):
        for h in range(nkv):
            k = block_gather(k_cache, table[t], int(lens[t]), block_size, h, head_dim)
            v = block_gather(v_cache, table[t], int(lens[t]), block_size, h, head_dim)
            out[t, h * group : (h + 1) * group] = attention(q[t, h * group : (h + 1) * group], k, v, scale)
    return out
