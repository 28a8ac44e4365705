"""AT-10 (RMSNorm + BF16 linear) written as PyPTO 0.2 code; only the import line is ptosim's.

    y[T, N] = cast_bf16(RMSNorm(x[T, K]) * gamma) @ weight[N, K]^T      (BF16 out)

Variant "A" normalises with ``rsqrt(mean(x^2) + eps)``; variant "B" with ``ones / sqrt(...)``,
the ones made by ``pypto.full``. ``gamma=False`` builds the kernel without the gamma argument.
Shared by the AT-10 golden tests and ``benchmarks/sim_vs_numpy.py``.
"""

from typing import Sequence

import ptosim as pypto

BF16, FP32 = pypto.DT_BF16, pypto.DT_FP32
EPS = 1e-6


def _rms_norm(xt, gf, k: int, tile: int, variant: str):
    """RMSNorm of one [tile, K] block in FP32, times gamma (when given), cast to BF16."""
    xf = pypto.cast(xt, FP32)
    sq = pypto.mul(xf, xf)
    ss = pypto.sum(sq, -1, keepdim=True)
    ms = pypto.add(pypto.mul(ss, 1.0 / k), EPS)
    if variant == "A":
        rstd = pypto.rsqrt(ms)
    else:
        ones = pypto.full([tile, 1], 1.0, FP32)
        rstd = pypto.div(ones, pypto.sqrt(ms))
    yn = pypto.mul(xf, rstd)
    if gf is not None:
        yn = pypto.mul(yn, gf)
    return pypto.cast(yn, BF16)


def build_at10(
    k: int,
    n: int,
    unroll: int,
    *,
    variant: str = "A",
    gamma: bool = True,
    rows: int = 2,
    cube: Sequence[Sequence[int]] = ([16, 16], [256, 512], [128, 256]),
):
    """A jit kernel ``(x, [gamma,] weight, y)`` for fixed K and N; T is dynamic."""
    if variant not in ("A", "B"):
        raise ValueError(f"variant must be 'A' or 'B', got {variant!r}")
    T = pypto.DYNAMIC
    cube_m, cube_k, cube_n = (list(v) for v in cube)
    options = dict(
        runtime_options={"stitch_function_max_num": 128},
        pass_options={"cube_l1_reuse_setting": {-1: 2, 1: 1}, "vec_nbuffer_setting": {0: 2}},
    )

    @pypto.frontend.jit(**options)
    def at10_rmsnorm_linear(
        x: pypto.Tensor[[T, k], BF16],
        gamma: pypto.Tensor[[k], BF16],
        weight: pypto.Tensor[[n, k], BF16],
        y: pypto.Tensor[[T, n], BF16],
    ):
        pypto.experimental.set_operation_options(combine_axis=True)
        pypto.set_vec_tile_shapes(1, k)
        gf = pypto.cast(pypto.reshape(gamma, [1, k], inplace=True), FP32)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[unroll]):
            xt = pypto.view(x, [tile, k], [off, 0])
            pypto.set_semantic_label("rmsnorm")
            pypto.set_vec_tile_shapes(rows, k)
            xn = _rms_norm(xt, gf, k, tile, variant)
            pypto.set_semantic_label("linear")
            pypto.set_cube_tile_shapes(cube_m, cube_k, cube_n)
            out = pypto.matmul(xn, weight, BF16, b_trans=True)
            pypto.assemble(out, [off, 0], y)

    @pypto.frontend.jit(**options)
    def at10_rmsnorm_linear_nogamma(
        x: pypto.Tensor[[T, k], BF16],
        weight: pypto.Tensor[[n, k], BF16],
        y: pypto.Tensor[[T, n], BF16],
    ):
        pypto.experimental.set_operation_options(combine_axis=True)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[unroll]):
            xt = pypto.view(x, [tile, k], [off, 0])
            pypto.set_semantic_label("rmsnorm")
            pypto.set_vec_tile_shapes(rows, k)
            xn = _rms_norm(xt, None, k, tile, variant)
            pypto.set_semantic_label("linear")
            pypto.set_cube_tile_shapes(cube_m, cube_k, cube_n)
            out = pypto.matmul(xn, weight, BF16, b_trans=True)
            pypto.assemble(out, [off, 0], y)

    return at10_rmsnorm_linear if gamma else at10_rmsnorm_linear_nogamma
