"""The FP32 -> FP8E4M3 cast AT-08 relies on (``cast(xs, FP8E4M3, RINT, sat)``) against ml_dtypes'
``float8_e4m3fn`` rounding: round to nearest with ties to even, the subnormals (step 2^-9), and the
saturation AT-08's golden writes as a clip to +-448 before ml_dtypes' cast (which itself turns a
magnitude past 464 into NaN). Compared as bit patterns."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ptosim.cast import CastMode, SaturationMode, cast_array
from ptosim.dtypes import DataType as D

E4M3 = ml_dtypes.float8_e4m3fn


def kernel_cast(x, sat=SaturationMode.ON):
    return cast_array(np.asarray(x, np.float32), D.DT_FP32, D.DT_FP8E4M3, CastMode.CAST_RINT, sat)


def golden_cast(x):
    """AT-08's golden: the clip is the saturation."""
    return np.clip(np.asarray(x, np.float32), -448.0, 448.0).astype(E4M3)


def bits(a):
    return np.asarray(a).view(np.uint8)


def _finite_e4m3() -> np.ndarray:
    v = np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float32)
    return np.unique(v[np.isfinite(v)])


def test_ml_dtypes_unsaturated_gives_nan_past_the_last_midpoint():
    """Why the golden clips: 448 < |x| <= 464 rounds back to 448 (464, the midpoint to the absent
    480, ties to 448's even mantissa), but anything past 464 becomes NaN."""
    x = np.array([448.0, 449.0, 463.99, 464.0, np.nextafter(np.float32(464), np.float32(np.inf)), 465.0, 1e6, np.inf], np.float32)
    got = x.astype(E4M3).astype(np.float32)
    assert got[:4].tolist() == [448.0] * 4 and np.isnan(got[4:]).all()


def test_saturation_matches_the_clip():
    x = np.array([448.0, 449.0, 464.0, 465.0, 1e6, 3.4e38, np.inf, -449.0, -1e6, -np.inf], np.float32)
    got = kernel_cast(x)
    assert np.array_equal(bits(got), bits(golden_cast(x)))
    assert got.astype(np.float32).tolist() == [448.0] * 7 + [-448.0] * 3
    assert np.isnan(kernel_cast(x[3:5], SaturationMode.OFF).astype(np.float32)).all()


def test_round_to_nearest_even_at_every_midpoint():
    """Each midpoint between neighbouring E4M3 values goes to the even mantissa; one FP32 ulp either
    side goes to the nearer neighbour — subnormal midpoints included."""
    v = _finite_e4m3()
    v = v[v >= 0]
    mid = ((v[:-1].astype(np.float64) + v[1:]) / 2).astype(np.float32)
    assert np.array_equal(mid.astype(np.float64), (v[:-1].astype(np.float64) + v[1:]) / 2), "midpoints exact in FP32"
    for x in (mid, -mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(np.inf))):
        assert np.array_equal(bits(kernel_cast(x)), bits(golden_cast(x)))
    got = kernel_cast(mid)
    assert (bits(got) & 1 == 0).all(), "every tie lands on an even code"


def test_subnormals():
    step = 2.0**-9  # E4M3's smallest subnormal; 2^-6 is the smallest normal
    x = np.array(
        [
            step,
            step / 2,
            step * 0.75,
            step * 1.5,
            step * 2.5,
            7 * step,
            7.5 * step,
            2.0**-6,
            np.nextafter(np.float32(step / 2), np.float32(1)),
        ],
        np.float32,
    )
    want = [step, 0.0, step, 2 * step, 2 * step, 7 * step, 8 * step, 2.0**-6, step]
    got = kernel_cast(x)
    assert got.astype(np.float32).tolist() == want
    assert np.array_equal(bits(got), bits(golden_cast(x)))
    assert np.array_equal(bits(kernel_cast(-x)), bits(golden_cast(-x)))  # -0 for the negative tie to zero


@pytest.mark.parametrize("scale", [1e-3, 1.0, 448.0, 1e4])
def test_random_values_bit_exact(scale):
    rng = np.random.default_rng(int(scale * 7) + 1)
    x = (rng.standard_normal(200_000) * scale).astype(np.float32)
    assert np.array_equal(bits(kernel_cast(x)), bits(golden_cast(x)))


def test_random_bit_patterns_bit_exact():
    rng = np.random.default_rng(11)
    x = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[~np.isnan(x)]
    assert np.array_equal(bits(kernel_cast(x)), bits(golden_cast(x)))


def test_every_e4m3_value_is_a_fixed_point():
    v = _finite_e4m3()
    assert np.array_equal(kernel_cast(v).astype(np.float32), v)
