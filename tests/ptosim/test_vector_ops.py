"""Vector ops against exact references: float64 (or Python integer) math rounded once by ml_dtypes.

ptosim computes float ops in FP32 and rounds once to the storage dtype. For +, -, *, / and sqrt
on BF16/FP16 that equals rounding the exact result once (FP32 has >= 2p+2 bits for p <= 11), so
those tests demand bit equality. Functions FP32 cannot round correctly in one step (rsqrt, exp) are
evaluated in float64 and must equal that value rounded once to FP32.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto

BF16_NP, FP16_NP = ml_dtypes.bfloat16, np.float16
FLOAT_DTYPES = {"BF16": BF16_NP, "FP16": FP16_NP, "FP32": np.float32}
UINT = {2: np.uint16, 4: np.uint32}
RNG = np.random.default_rng(1234)


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(UINT[a.dtype.itemsize])


def assert_bits_equal(out: np.ndarray, ref: np.ndarray) -> None:
    assert out.dtype == ref.dtype and out.shape == ref.shape
    bad = bits(out) != bits(ref)
    assert not bad.any(), f"{int(bad.sum())} differ, first at {np.argwhere(bad)[:3].tolist()}: " \
        f"got {out[bad][:3]}, want {ref[bad][:3]}"


def random_floats(shape, np_dtype, lo_exp=-6, hi_exp=6, nonzero=False) -> np.ndarray:
    """Values over many binades, both signs, so rounding is exercised at every exponent."""
    mant = RNG.uniform(1.0, 2.0, shape)
    exp = RNG.integers(lo_exp, hi_exp, shape)
    sign = RNG.choice([-1.0, 1.0], shape)
    v = (sign * mant * np.exp2(exp)).astype(np_dtype)
    if not nonzero:
        v.flat[:: 7] = 0
    return v


def ref_round(x64: np.ndarray, np_dtype) -> np.ndarray:
    """Round float64 values once, to nearest-even, into the storage dtype."""
    return x64.astype(np_dtype)


# --- elementwise, tensor operands ---------------------------------------------------------------

BINARY = {
    "add": (pypto.add, np.add),
    "sub": (pypto.sub, np.subtract),
    "mul": (pypto.mul, np.multiply),
    "div": (pypto.div, np.divide),
}


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("op", BINARY)
def test_float_binary_ops_round_the_exact_result_once(run, op, dt):
    np_dtype = FLOAT_DTYPES[dt]
    a = random_floats((16, 64), np_dtype)
    b = random_floats((16, 64), np_dtype, nonzero=(op == "div"))
    sim_fn, ref_fn = BINARY[op]
    out = run(lambda x, y: sim_fn(x, y), a, b)
    assert_bits_equal(out, ref_round(ref_fn(a.astype(np.float64), b.astype(np.float64)), np_dtype))


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_python_operators_map_to_the_ops(run, dt):
    np_dtype = FLOAT_DTYPES[dt]
    a = random_floats((8, 64), np_dtype)
    b = random_floats((8, 64), np_dtype, nonzero=True)
    out = run(lambda x, y: (x + y) * y - x / y, a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    r = ref_round(ref_round(ref_round(a64 + b64, np_dtype).astype(np.float64) * b64, np_dtype).astype(np.float64)
                  - ref_round(a64 / b64, np_dtype).astype(np.float64), np_dtype)
    assert_bits_equal(out, r)


def test_fp16_overflow_gives_inf_like_ieee(run):
    a = np.array([[60000.0] * 16], FP16_NP)
    out = run(lambda x: pypto.add(x, x), a, tile=(1, 16))
    assert np.isinf(out).all() and (out > 0).all()


def _wrap32(v: np.ndarray) -> np.ndarray:
    """Python-integer style wrap of int64 values to two's-complement int32."""
    v = (v.astype(np.int64) + 2**31) % 2**32 - 2**31
    return v.astype(np.int32)


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_int32_ops_wrap_like_the_hardware(run, op):
    a = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64)
    b = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64)
    a[0, :4] = [2**31 - 1, -(2**31), 2**31 - 1, -(2**31)]
    b[0, :4] = [1, -1, 2**31 - 1, -(2**31)]
    sim_fn = BINARY[op][0]
    out = run(lambda x, y: sim_fn(x, y), a.astype(np.int32), b.astype(np.int32))
    exact = {"add": [int(x) + int(y) for x, y in zip(a.flat, b.flat)],
             "sub": [int(x) - int(y) for x, y in zip(a.flat, b.flat)],
             "mul": [int(x) * int(y) for x, y in zip(a.flat, b.flat)]}[op]
    ref = np.array([(v + 2**31) % 2**32 - 2**31 for v in exact], np.int64).astype(np.int32).reshape(a.shape)
    np.testing.assert_array_equal(out, ref)


def test_int32_div_truncates_toward_zero_within_2_pow_24(run):
    a = RNG.integers(-(2**24), 2**24 + 1, (8, 64), dtype=np.int64)
    b = RNG.integers(1, 5000, (8, 64), dtype=np.int64) * RNG.choice([-1, 1], (8, 64))
    a[0, :3] = [2**24, -(2**24), 7]
    b[0, :3] = [3, 3, -2]
    out = run(lambda x, y: pypto.div(x, y), a.astype(np.int32), b.astype(np.int32))
    ref = np.array([(abs(int(x)) // abs(int(y))) * (1 if (x < 0) == (y < 0) else -1)
                    for x, y in zip(a.flat, b.flat)], np.int32).reshape(a.shape)
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("dt", ["BF16", "FP16", "FP32", "INT32"])
def test_abs(run, dt):
    if dt == "INT32":
        a = RNG.integers(-1000, 1000, (8, 64)).astype(np.int32)
        np.testing.assert_array_equal(run(pypto.abs, a), np.abs(a.astype(np.int64)).astype(np.int32))
        return
    a = random_floats((8, 64), FLOAT_DTYPES[dt])
    assert_bits_equal(run(pypto.abs, a), ref_round(np.abs(a.astype(np.float64)), FLOAT_DTYPES[dt]))


@pytest.mark.parametrize("dt", ["BF16", "FP16", "FP32", "INT32"])
def test_neg_flips_the_sign_exactly(run, dt):
    if dt == "INT32":
        a = RNG.integers(-(2**31) + 1, 2**31, (8, 64)).astype(np.int32)
        np.testing.assert_array_equal(run(pypto.neg, a), (-a.astype(np.int64)).astype(np.int32))
        return
    a = random_floats((8, 64), FLOAT_DTYPES[dt])
    assert_bits_equal(run(pypto.neg, a), ref_round(-a.astype(np.float64), FLOAT_DTYPES[dt]))


# --- scalar operands ----------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("op,scalar", [("add", 3.0), ("sub", 1.25), ("mul", 0.5), ("mul", -0.375), ("div", 4.0),
                                       ("div", -3.0)])
def test_scalar_operand_representable(run, op, scalar, dt):
    np_dtype = FLOAT_DTYPES[dt]
    a = random_floats((8, 64), np_dtype)
    out = run(lambda x: BINARY[op][0](x, scalar), a)
    assert_bits_equal(out, ref_round(BINARY[op][1](a.astype(np.float64), scalar), np_dtype))


def test_fp32_scalar_operand_is_an_fp32_value(run):
    a = random_floats((8, 64), np.float32)
    out = run(lambda x: pypto.mul(x, 0.1), a)
    # the product of two FP32 values is exact in float64, so this is one rounding
    assert_bits_equal(out, ref_round(a.astype(np.float64) * float(np.float32(0.1)), np.float32))


def test_bf16_times_inexact_scalar_follows_the_fp32_compute_model(run):
    a = random_floats((8, 64), BF16_NP)
    out = run(lambda x: pypto.mul(x, 0.1), a)
    exact = a.astype(np.float64) * float(np.float32(0.1))
    assert_bits_equal(out, ref_round(ref_round(exact, np.float32).astype(np.float64), BF16_NP))


@pytest.mark.parametrize("op,scalar", [("add", 7), ("sub", -9), ("mul", -3)])
def test_int32_scalar_operand(run, op, scalar):
    a = RNG.integers(-10**6, 10**6, (8, 64)).astype(np.int32)
    out = run(lambda x: BINARY[op][0](x, scalar), a)
    ref = {"add": a.astype(np.int64) + scalar, "sub": a.astype(np.int64) - scalar,
           "mul": a.astype(np.int64) * scalar}[op]
    np.testing.assert_array_equal(out, ref.astype(np.int32))


# --- broadcasting --------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ["BF16", "FP32"])
@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("col_first", [False, True])
def test_broadcast_column_against_matrix(run, op, dt, col_first):
    np_dtype = FLOAT_DTYPES[dt]
    m = random_floats((16, 64), np_dtype, nonzero=True)
    c = random_floats((16, 1), np_dtype, nonzero=True)
    x, y = (c, m) if col_first else (m, c)
    out = run(lambda p, q: BINARY[op][0](p, q), x, y)
    assert out.shape == (16, 64)
    assert_bits_equal(out, ref_round(BINARY[op][1](x.astype(np.float64), y.astype(np.float64)), np_dtype))


def test_broadcast_row_against_matrix(run):
    m = random_floats((16, 64), np.float32)
    r = random_floats((1, 64), np.float32)
    out = run(lambda p, q: pypto.mul(p, q), m, r)
    assert_bits_equal(out, ref_round(m.astype(np.float64) * r.astype(np.float64), np.float32))


# --- reductions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [-1, 1, 0, -2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_fp32_exact_when_the_sum_is_representable(run, dim, keepdim):
    a = RNG.integers(-100, 101, (16, 512)).astype(np.float32)  # every partial sum is exact in FP32
    out = run(lambda x: pypto.sum(x, dim, keepdim=keepdim), a, tile=(16, 512))
    ref = a.astype(np.int64).sum(axis=dim, keepdims=keepdim).astype(np.float32)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)


def test_sum_fp32_of_random_values_is_within_the_fp32_accumulation_bound(run):
    a = RNG.uniform(-1, 1, (8, 1024)).astype(np.float32)
    out = run(lambda x: pypto.sum(x, -1), a, tile=(2, 1024))
    exact = a.astype(np.float64).sum(-1)
    bound = a.shape[1] * 2.0**-24 * np.abs(a.astype(np.float64)).sum(-1)
    assert (np.abs(out.astype(np.float64) - exact) <= bound).all()


def test_sum_3d_negative_dims(run):
    a = RNG.integers(-50, 51, (2, 8, 64)).astype(np.float32)
    for dim in (-1, -2, -3):
        out = run(lambda x: pypto.sum(x, dim, keepdim=True), a, tile=(2, 8, 64))
        np.testing.assert_array_equal(out, a.astype(np.int64).sum(axis=dim, keepdims=True).astype(np.float32))


@pytest.mark.parametrize("dt", ["BF16", "FP16", "FP32", "INT32"])
@pytest.mark.parametrize("dim,keepdim", [(-1, True), (-1, False), (0, True), (-2, False)])
def test_amax_is_exact(run, dt, dim, keepdim):
    if dt == "INT32":
        a = RNG.integers(-(2**31), 2**31, (8, 64), dtype=np.int64).astype(np.int32)
    else:
        a = random_floats((8, 64), FLOAT_DTYPES[dt])
    out = run(lambda x: pypto.amax(x, dim, keepdim=keepdim), a)
    np.testing.assert_array_equal(out, np.max(a, axis=dim, keepdims=keepdim))
    assert out.dtype == a.dtype


def test_amax_over_an_empty_valid_extent_is_a_clear_error(run):
    a = random_floats((8, 64), np.float32)
    with pytest.raises(pypto.PtoSimError, match="valid extent is 0"):
        run(lambda x: pypto.amax(pypto.view(x, [8, 64], [0, 0], valid_shape=[8, 0]), -1), a)


# --- FP32 functions --------------------------------------------------------------------------------


def _ulps(out: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    """Distance from the float64 value in units of the FP32 spacing at the rounded reference."""
    r32 = ref64.astype(np.float32)
    return np.abs(out.astype(np.float64) - ref64) / np.spacing(np.abs(r32)).astype(np.float64)


def test_sqrt_fp32_is_correctly_rounded(run):
    a = np.abs(random_floats((8, 64), np.float32, -20, 20))
    assert_bits_equal(run(pypto.sqrt, a), ref_round(np.sqrt(a.astype(np.float64)), np.float32))


def test_div_fp32_is_correctly_rounded(run):
    a = random_floats((8, 64), np.float32, -20, 20)
    b = random_floats((8, 64), np.float32, -20, 20, nonzero=True)
    out = run(lambda x, y: pypto.div(x, y), a, b)
    assert_bits_equal(out, ref_round(a.astype(np.float64) / b.astype(np.float64), np.float32))


def test_rsqrt_fp32_is_the_float64_value_rounded_once(run):
    a = np.abs(random_floats((8, 64), np.float32, -20, 20, nonzero=True))
    out = run(pypto.rsqrt, a)
    assert (_ulps(out, 1.0 / np.sqrt(a.astype(np.float64))) <= 0.5).all()


def test_exp_fp32_is_the_float64_value_rounded_once(run):
    a = RNG.uniform(-20, 20, (8, 64)).astype(np.float32)
    a[0, :4] = [0.0, -0.0, 88.5, -104.0]  # exact 1, exact 1, overflow to inf, underflow to a subnormal
    out = run(pypto.exp, a)
    ref = np.exp(a.astype(np.float64))
    with np.errstate(over="ignore"):
        assert_bits_equal(out, ref.astype(np.float32))
    assert (_ulps(out[1:], ref[1:]) <= 0.5).all()


@pytest.mark.parametrize("dt", ["BF16", "FP16"])
def test_sqrt_narrow_is_correctly_rounded(run, dt):
    a = np.abs(random_floats((8, 64), FLOAT_DTYPES[dt], -6, 6))
    assert_bits_equal(run(pypto.sqrt, a), ref_round(np.sqrt(a.astype(np.float64)), FLOAT_DTYPES[dt]))


def test_exp_bf16_within_one_bf16_ulp(run):
    a = RNG.uniform(-8, 8, (8, 64)).astype(BF16_NP)
    out = run(pypto.exp, a).astype(np.float64)
    ref = np.exp(a.astype(np.float64))
    spacing = np.abs(ref.astype(BF16_NP).astype(np.float64)) * 2.0**-7
    assert (np.abs(out - ref) <= spacing).all()


# --- creation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dt,np_dtype", [("BF16", BF16_NP), ("FP32", np.float32), ("INT32", np.int32)])
def test_full_and_zeros(run, dt, np_dtype):
    dtype = getattr(pypto, f"DT_{dt}")
    dummy = np.zeros((1, 16), np.float32)
    full, zeros, zeros2 = run(lambda _: (pypto.full([4, 64], 3, dtype), pypto.zeros([4, 64], dtype=dtype),
                                         pypto.zeros(4, 64, dtype=dtype)), dummy)
    np.testing.assert_array_equal(full, np.full((4, 64), 3, np_dtype))
    np.testing.assert_array_equal(zeros, np.zeros((4, 64), np_dtype))
    np.testing.assert_array_equal(zeros2, np.zeros((4, 64), np_dtype))
    assert full.dtype == np_dtype


def test_full_rounds_its_value_once(run):
    out = run(lambda _: pypto.full([2, 64], 0.1, pypto.DT_BF16), np.zeros((1, 16), np.float32))
    assert (bits(out) == bits(np.array(0.1, BF16_NP).reshape(1, 1))).all()
