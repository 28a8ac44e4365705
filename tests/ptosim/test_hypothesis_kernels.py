"""Property tests through whole kernels: random shapes, random cast inputs.

References are float64 NumPy math, ml_dtypes' round-to-nearest-even and plain integer wrap/clamp
arithmetic; ptosim's own ``cast_array`` is never the reference.
"""


from functools import lru_cache

import ml_dtypes
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptosim as pypto
from ptosim import CastMode, SaturationMode

BF16_NP = ml_dtypes.bfloat16
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@lru_cache(maxsize=None)
def square_share_kernel(cols: int):
    """y = x^2 / sum(x^2) per row, through cast, mul, sum and div, over a dynamic row count."""
    T = pypto.DYNAMIC

    @pypto.frontend.jit
    def square_share(x: pypto.Tensor[[T, cols], pypto.DT_BF16], y: pypto.Tensor[[T, cols], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, cols)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, unroll_list=[16, 4]):
            xf = pypto.cast(pypto.view(x, [tile, cols], [off, 0]), pypto.DT_FP32)
            sq = pypto.mul(xf, xf)
            pypto.assemble(pypto.div(sq, pypto.sum(sq, -1, keepdim=True)), [off, 0], y)

    return square_share


@SETTINGS
@given(rows=st.integers(1, 40), col_blocks=st.integers(1, 32), seed=st.integers(0, 2**32 - 1))
def test_random_shapes_through_cast_mul_sum_div(rows, col_blocks, seed):
    cols = 16 * col_blocks
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (rows, cols)).astype(BF16_NP)
    x[:, 0] = BF16_NP(0.5)  # no all-zero row
    y = np.full((rows, cols), np.nan, np.float32)
    square_share_kernel(cols)(x, y)
    x64 = x.astype(np.float64)
    ref = x64**2 / (x64**2).sum(-1, keepdims=True)
    # squares are exact in FP32; the FP32 row sum and the division add at most (cols + 1) roundings
    assert np.isfinite(y).all()
    assert (np.abs(y - ref) <= (cols + 2) * 2.0**-24 * ref + 1e-30).all()


# --- casts ------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def cast_kernel(src: str, dst: str, mode: CastMode, satmode: SaturationMode):
    s, d = getattr(pypto, f"DT_{src}"), getattr(pypto, f"DT_{dst}")

    @pypto.frontend.jit
    def cast_it(x: pypto.Tensor[[4, 64], s], y: pypto.Tensor[[4, 64], d]):
        pypto.set_vec_tile_shapes(4, 64)
        pypto.assemble(pypto.cast(pypto.view(x, [4, 64], [0, 0]), d, mode=mode, satmode=satmode), [0, 0], y)

    return cast_it


def run_cast(x, src, dst, np_dst, mode=CastMode.CAST_NONE, satmode=SaturationMode.OFF):
    y = np.zeros((4, 64), np_dst)
    cast_kernel(src, dst, mode, satmode)(x, y)
    return y


def same_bits_or_both_nan(out, ref, uint):
    o, r = out.view(uint), ref.view(uint)
    nan = np.isnan(out.astype(np.float32)) & np.isnan(ref.astype(np.float32))
    return bool(((o == r) | nan).all())


fp32_bits = st.lists(st.integers(0, 2**32 - 1), min_size=256, max_size=256)
fp16_bits = st.lists(st.integers(0, 2**16 - 1), min_size=256, max_size=256)


@SETTINGS
@given(bits=fp32_bits, mode=st.sampled_from([CastMode.CAST_NONE, CastMode.CAST_RINT]))
def test_fp32_to_bf16_rint_is_ml_dtypes_rne(bits, mode):
    x = np.array(bits, np.uint32).view(np.float32).reshape(4, 64)
    out = run_cast(x, "FP32", "BF16", BF16_NP, mode)
    with np.errstate(invalid="ignore"):
        ref = x.astype(BF16_NP)
    assert same_bits_or_both_nan(out, ref, np.uint16)


@SETTINGS
@given(bits=fp32_bits)
def test_fp32_to_fp16_rint_is_ieee_rne(bits):
    x = np.array(bits, np.uint32).view(np.float32).reshape(4, 64)
    out = run_cast(x, "FP32", "FP16", np.float16, CastMode.CAST_RINT)
    with np.errstate(over="ignore"):
        ref = x.astype(np.float16)
    assert same_bits_or_both_nan(out, ref, np.uint16)


def _round_to_integral(v: np.ndarray, mode: CastMode) -> np.ndarray:
    if mode in (CastMode.CAST_NONE, CastMode.CAST_TRUNC):  # float -> int defaults to TRUNC
        return np.trunc(v)
    if mode is CastMode.CAST_FLOOR:
        return np.floor(v)
    if mode is CastMode.CAST_CEIL:
        return np.ceil(v)
    if mode is CastMode.CAST_RINT:
        return np.rint(v)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)  # ROUND: ties away from zero (exact for FP16 inputs)


@SETTINGS
@given(bits=fp16_bits,
       mode=st.sampled_from([CastMode.CAST_NONE, CastMode.CAST_TRUNC, CastMode.CAST_RINT, CastMode.CAST_ROUND,
                             CastMode.CAST_FLOOR, CastMode.CAST_CEIL]),
       sat=st.sampled_from([SaturationMode.OFF, SaturationMode.ON]))
def test_fp16_to_int8_wraps_or_clamps(bits, mode, sat):
    x = np.array(bits, np.uint16).view(np.float16).reshape(4, 64)
    x[~np.isfinite(x)] = np.float16(300.0)  # NaN/inf handling is checked on its own below
    out = run_cast(x, "FP16", "INT8", np.int8, mode, sat)
    r = _round_to_integral(x.astype(np.float64), mode).astype(np.int64)
    ref = np.clip(r, -128, 127) if sat is SaturationMode.ON else (r + 128) % 256 - 128
    np.testing.assert_array_equal(out, ref.astype(np.int8))


def test_fp16_to_int8_examples_from_the_docs():
    x = np.zeros((4, 64), np.float16)
    x[0, :6] = [300.0, -129.0, 127.9, -128.5, 255.0, 65504.0]
    off = run_cast(x, "FP16", "INT8", np.int8)
    on = run_cast(x, "FP16", "INT8", np.int8, satmode=SaturationMode.ON)
    assert off[0, :6].tolist() == [44, 127, 127, -128, -1, -32]
    assert on[0, :6].tolist() == [127, -128, 127, -128, 127, 127]


def test_fp16_to_int8_specials():
    # ptosim's documented choice (cast.py): NaN -> 0, +-inf clamp in both saturation modes
    x = np.zeros((4, 64), np.float16)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    for sat in (SaturationMode.OFF, SaturationMode.ON):
        assert run_cast(x, "FP16", "INT8", np.int8, satmode=sat)[0, :3].tolist() == [0, 127, -128]
