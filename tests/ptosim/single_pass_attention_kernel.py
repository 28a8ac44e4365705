"""A single-pass attention kernel over a reshaped q (NQ 16, NKV 8, D 128, 1024 keys), written against
ptosim's PyPTO API for the cost-rule tests. No ``from __future__ import annotations``: PyPTO (and so
ptosim) reads the parameters' annotations as objects."""

import ml_dtypes
import numpy as np

import ptosim as pypto

NQ, NKV, D, S = 16, 8, 128, 1024
BF16, FP32 = pypto.DT_BF16, pypto.DT_FP32


@pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128},
                    pass_options={"vec_nbuffer_setting": {-1: 4}, "cube_nbuffer_setting": {-1: 2}})
def attention(q: pypto.Tensor[[pypto.DYNAMIC, NQ, D], BF16], k: pypto.Tensor[[S, NKV * D], BF16],
              v: pypto.Tensor[[S, NKV * D], BF16], out: pypto.Tensor[[pypto.DYNAMIC, NQ, D], BF16]):
    pypto.experimental.set_operation_options(combine_axis=True)
    T = q.shape[0]
    q_rows = pypto.reshape(q, [T * NQ, D], inplace=True)  # a root of a reshape only: a sync task
    for t_off, _tile in pypto.loop_unroll(0, T, 1, name="Q_LOOP", idx_name="t_off", unroll_list=[1]):
        for h in pypto.loop(NKV, name="KVH_LOOP", idx_name="h"):
            pypto.set_vec_tile_shapes(2, 128)
            q_i = pypto.view(q_rows, [NQ // NKV, D], [t_off * NQ + h * (NQ // NKV), 0])
            pypto.set_semantic_label("qk")
            pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64])
            s = pypto.matmul(q_i, pypto.view(k, [S, D], [0, h * D]), FP32, b_trans=True)
            pypto.set_semantic_label("softmax")
            pypto.set_vec_tile_shapes(2, 1024)
            e = pypto.exp(pypto.sub(s, pypto.amax(s, -1, keepdim=True)))
            p = pypto.cast(pypto.div(e, pypto.sum(e, -1, keepdim=True)), BF16)
            pypto.set_semantic_label("pv")
            o = pypto.matmul(p, pypto.view(v, [S, D], [0, h * D]), FP32)
            pypto.set_semantic_label("out")
            pypto.set_vec_tile_shapes(1, 2, 128)
            o_bf = pypto.cast(pypto.reshape(o, [1, NQ // NKV, D]), BF16)
            pypto.assemble(o_bf, [t_off, h * (NQ // NKV), 0], out)


def inputs(T: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """q, k, v (BF16, standard normal) and the zeroed output for T tokens."""
    rng = np.random.default_rng(seed)
    bf = lambda *shape: rng.standard_normal(shape).astype(np.float32).astype(ml_dtypes.bfloat16)  # noqa: E731
    return bf(T, NQ, D), bf(S, NKV * D), bf(S, NKV * D), np.zeros((T, NQ, D), ml_dtypes.bfloat16)
