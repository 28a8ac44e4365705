"""A hand-written paged decode attention in PyPTO's API (GQA, block table, context lengths), as
upstream's incremental flash attention writes it: one kv block per iteration of a dynamic
``pypto.loop``, FP32 accumulators in named buffers updated with ``buf[:] = ...`` under
``is_loop_begin`` / ``is_loop_end``, the tail block cut by ``valid_shape``.

The same text runs on ptosim (``import ptosim as pypto``) and on real PyPTO (the slow test writes
it with ``import pypto``); ``golden`` is float64 attention over the gathered keys.
"""

import ml_dtypes
import numpy as np

import ptosim as pypto

B, NQ, NKV, D, NB, BS, MB = 2, 4, 2, 64, 8, 32, 4
G = NQ // NKV
SCALE = 1.0 / float(np.sqrt(D))


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128, "device_sched_mode": 1})
def paged_attention(
    q: pypto.Tensor[[pypto.DYNAMIC, NQ, D], pypto.DT_BF16],
    k_cache: pypto.Tensor[[NB * BS, NKV * D], pypto.DT_BF16],
    v_cache: pypto.Tensor[[NB * BS, NKV * D], pypto.DT_BF16],
    block_table: pypto.Tensor[[pypto.DYNAMIC, MB], pypto.DT_INT32],
    context_lens: pypto.Tensor[[pypto.DYNAMIC], pypto.DT_INT32],
    out: pypto.Tensor[[pypto.DYNAMIC, NQ, D], pypto.DT_BF16],
):
    pypto.experimental.set_operation_options(combine_axis=True)
    nb = q.shape[0]
    q_2d = pypto.reshape(q, [nb * NQ, D], inplace=True)
    for b in pypto.loop(nb, name="B_LOOP", idx_name="b"):
        ctx = context_lens[b]
        nblk = (ctx + BS - 1) // BS
        for n in pypto.loop(NKV, name="N_LOOP", idx_name="n"):
            oi = pypto.tensor([G, D], pypto.DT_FP32, "oi")
            li = pypto.tensor([G, 1], pypto.DT_FP32, "li")
            mi = pypto.tensor([G, 1], pypto.DT_FP32, "mi")
            for j in pypto.loop(nblk, name="KV_LOOP", idx_name="j"):
                blk = block_table[b, j].max(0)
                valid = (ctx - j * BS).min(BS)
                pypto.set_vec_tile_shapes(G, BS)
                qi = pypto.view(q_2d, [G, D], [b * NQ + n * G, 0])
                kj = pypto.view(k_cache, [BS, D], [blk * BS, n * D])
                vj = pypto.view(v_cache, [BS, D], [blk * BS, n * D], valid_shape=[valid, D])
                pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64])
                s = pypto.matmul(qi, kj, pypto.DT_FP32, b_trans=True)
                s = pypto.view(s, [G, BS], [0, 0], valid_shape=[G, valid])
                pypto.set_vec_tile_shapes(G, BS)
                if pypto.is_loop_begin(j):
                    ss = pypto.mul(s, SCALE)
                    mb = pypto.amax(ss, dim=-1, keepdim=True)
                    p = pypto.exp(pypto.sub(ss, mb))
                    pb = pypto.cast(p, pypto.DT_BF16)
                    li[:] = pypto.sum(p, dim=-1, keepdim=True)
                    mi[:] = mb
                    pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64])
                    o = pypto.matmul(pb, vj, pypto.DT_FP32)
                    pypto.set_vec_tile_shapes(G, D)
                    oi[:] = o
                else:
                    ss = pypto.mul(s, SCALE)
                    mb = pypto.amax(ss, dim=-1, keepdim=True)
                    mnew = pypto.maximum(mi, mb)
                    p = pypto.exp(pypto.sub(ss, mnew))
                    pb = pypto.cast(p, pypto.DT_BF16)
                    lb = pypto.sum(p, dim=-1, keepdim=True)
                    t2 = pypto.sub(mi, mnew)
                    mi[:] = mnew
                    alpha = pypto.exp(t2)
                    li[:] = li * alpha + lb
                    pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64])
                    o = pypto.matmul(pb, vj, pypto.DT_FP32)
                    pypto.set_vec_tile_shapes(G, D)
                    oi[:] = oi * alpha + o
                if pypto.is_loop_end(j):
                    res = pypto.div(oi, li)
                    pypto.set_vec_tile_shapes(1, G, D)
                    r3 = pypto.cast(pypto.reshape(res, [1, G, D]), pypto.DT_BF16)
                    pypto.assemble(r3, [b, n * G, 0], out)


def inputs(context_lens, seed=0):
    rng = np.random.default_rng(seed)
    bf = ml_dtypes.bfloat16
    return [
        rng.standard_normal((B, NQ, D)).astype(bf),
        rng.standard_normal((NB * BS, NKV * D)).astype(bf),
        rng.standard_normal((NB * BS, NKV * D)).astype(bf),
        np.array([[3, 1, 6, 0], [5, 2, 7, 4]], np.int32),
        np.array(context_lens, np.int32),
        np.full((B, NQ, D), np.nan, bf),
    ]


def golden(q, k_cache, v_cache, block_table, context_lens):
    """Plain softmax attention in float64 over each sequence's keys, gathered slot by slot."""
    q, kc, vc = (np.asarray(a, np.float64) for a in (q, k_cache, v_cache))
    out = np.zeros(q.shape)
    for b in range(q.shape[0]):
        n_ctx = int(context_lens[b])
        slots = [int(block_table[b, p // BS]) * BS + p % BS for p in range(n_ctx)]
        for h in range(NQ):
            kv = h // G  # GQA: query heads h*G..h*G+G-1 share kv head h // G
            k = kc[slots, kv * D:(kv + 1) * D]
            v = vc[slots, kv * D:(kv + 1) * D]
            s = k @ q[b, h] * SCALE
            w = np.exp(s - s.max())
            out[b, h] = (w / w.sum()) @ v
    return out
