"""Fault injection for AT-08 (per-token FP8 E4M3 quant) inside AT-09's ``fp8_w8a8``: break ptosim
where the FP8 path runs and check that the *generated* golden test of SK-03 + AT-10 on ascend950
fails. Each fault counts how often it fired, so one that no longer reaches the kernel fails here.

- FP8 cast truncates: the FP32 -> E4M3 cast rounds toward zero instead of to nearest (ties to even);
- FP8 codes one step off: every E4M3 code the cast produces moves one step up (a wrong rounding
  boundary, a mantissa bit lost);
- token scale dropped: the dequant ignores the per-token scale [M, 1] (AT-06's first product);
- channel scale dropped: the dequant ignores the per-channel weight scale [1, N];
- the generic faults that reach it: BF16 accumulation on the Cube, one bad output row.

Not a fault that can bite: dropping the cast's saturation. The kernel scales each row so its
largest magnitude maps to 448 (FP32 rounding can lift it to 448 * (1 + 2^-23) at most), and the
unsaturated cast turns only magnitudes past 464 into NaN — so the codes are the same; the
ptosim tests of the cast (tests/ptosim/test_fp8_quant_cast.py) cover saturation itself. Nor is
scaling to 127 instead of 448: E4M3 keeps 3 mantissa bits at every magnitude, so only values
below 2^-6 of the row scale change (the subnormals), which U(-1, 1) rows barely reach.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptosim
from pattern_gen.plan.test_points import FAST_LANE_MAX_T
from ptosim.cast import CastMode
from ptosim.dtypes import DataType

from .test_fault_injection import Fault, _current_label, bad_last_row, bf16_accumulation, failing_T, load_generated_test


@pytest.fixture(scope="module")
def folder(instance_factory, small):
    return instance_factory("SK-03", "AT-10", dims=small["SK-03"], params={"quant_mode": "fp8_w8a8"}, platform="ascend950")


def _fp8_cast(monkeypatch: pytest.MonkeyPatch, change) -> Fault:
    fault = Fault()
    original = ptosim.cast

    def cast(input, dtype, mode=CastMode.CAST_NONE, satmode=ptosim.SaturationMode.OFF):
        dst = ptosim.DataType[dtype] if isinstance(dtype, str) else dtype
        if input.dtype == DataType.DT_FP32 and dst == DataType.DT_FP8E4M3:
            fault.fired += 1
            return change(original, input, dtype, mode, satmode)
        return original(input, dtype, mode, satmode)

    monkeypatch.setattr(ptosim, "cast", cast)
    return fault


def fp8_cast_truncates(monkeypatch: pytest.MonkeyPatch) -> Fault:
    return _fp8_cast(monkeypatch, lambda cast, x, dtype, mode, sat: cast(x, dtype, CastMode.CAST_TRUNC, sat))


def fp8_codes_one_step_up(monkeypatch: pytest.MonkeyPatch) -> Fault:
    def change(cast, x, dtype, mode, sat):
        out = cast(x, dtype, mode, sat)
        bits = out.data.view(np.uint8)
        nonzero = (bits & 0x7F) != 0  # +-0 stays
        top = (bits & 0x7F) >= 0x7E  # 448 has no finite step above it
        bits[...] = np.where(nonzero & ~top, bits + 1, bits).astype(np.uint8)
        return out

    return _fp8_cast(monkeypatch, change)


def _scale_dropped(monkeypatch: pytest.MonkeyPatch, rows: bool) -> Fault:
    """In the epilogue, ``mul`` by a [M, 1] (``rows``) or [1, N] FP32 operand returns its input."""
    fault = Fault()
    original = ptosim.mul
    label = _current_label(monkeypatch)

    def mul(input, other):
        hit = "epilogue" in label[0] and isinstance(other, ptosim.Tensor) and other.dim == 2 and other.dtype == DataType.DT_FP32
        if hit and ((other.dims[1] == 1) if rows else (other.dims[0] == 1 and other.dims[1] > 1)):
            fault.fired += 1
            return input
        return original(input, other)

    monkeypatch.setattr(ptosim, "mul", mul)
    return fault


FAULTS = {
    "fp8-cast-truncates": fp8_cast_truncates,
    "fp8-codes-one-step-up": fp8_codes_one_step_up,
    "token-scale-dropped": lambda mp: _scale_dropped(mp, rows=True),
    "channel-scale-dropped": lambda mp: _scale_dropped(mp, rows=False),
    "bf16-accumulation": bf16_accumulation,
    "bad-last-row": bad_last_row,
}


def test_unpatched_generated_test_passes(folder):
    module = load_generated_test(folder)
    assert len(module.T_VALUES) >= 3 and len(module.SEEDS) >= 2
    for T in [t for t in module.T_VALUES if t <= FAST_LANE_MAX_T]:
        for seed in module.SEEDS:
            module.test_matches_golden(T, seed)


@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_fp8_fault_makes_the_generated_test_fail(folder, monkeypatch, fault_name):
    fault = FAULTS[fault_name](monkeypatch)
    failed = failing_T(folder)
    assert fault.fired, f"the {fault_name} fault never reached the FP8 kernel"
    assert failed, f"the FP8 kernel's generated golden test passes with {fault_name} injected"


def test_unsaturated_cast_gives_the_same_codes_here(folder, monkeypatch):
    """The saturation is a guard the kernel's own scaling never needs: without it the test passes."""
    fault = _fp8_cast(monkeypatch, lambda cast, x, dtype, mode, sat: cast(x, dtype, mode, ptosim.SaturationMode.OFF))
    assert not failing_T(folder) and fault.fired


def test_golden_kernel_codes_agree_with_ml_dtypes(folder):
    """The golden's quant_fp8 is NumPy + ml_dtypes: its codes are E4M3 values within 448."""
    module = load_generated_test(folder)
    x = np.random.default_rng(0).uniform(-3, 3, size=(5, 64)).astype(np.float32)
    q, scale = module.golden.quant_fp8(x)
    assert q.dtype == ml_dtypes.float8_e4m3fn and not np.isnan(q.astype(np.float32)).any()
    assert np.abs(q.astype(np.float32)).max() == 448.0
    np.testing.assert_allclose(q.astype(np.float32) * scale, x, rtol=2.0**-4, atol=float(scale.max()) * 2.0**-9)
