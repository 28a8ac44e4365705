"""``ptosim.testing.compare``: the upstream golden comparison rule."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ptosim.testing import assert_compare, compare, compare_rows, judge, tolerance_for

BF16 = ml_dtypes.bfloat16


def test_identical_arrays_pass():
    a = np.linspace(-1, 1, 1000).astype(BF16)
    r = compare(a, a.copy(), 1e-4, 2**-7, 0.005)
    assert r.passed and r.wrong == 0 and r.max_abs_error == 0


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_in_out_fails_even_within_the_ratio(bad):
    ref = np.ones(1000, np.float32)
    out = ref.copy()
    out[17] = bad
    r = compare(out, ref, 1e-4, 2**-7, 0.005)  # one element of 1000 would be within the ratio
    assert not r.passed and "NaN/Inf" in str(r) and "17" in str(r)


def test_nan_in_the_reference_counts_as_wrong():
    ref = np.ones(10, np.float32)
    ref[3] = np.nan
    r = compare(np.ones(10, np.float32), ref, 1e-4, 2**-7, 0.0)
    assert not r.passed and r.wrong == 1


def test_shape_and_dtype_must_match():
    a = np.zeros((4, 8), np.float32)
    assert not compare(a, np.zeros((8, 4), np.float32)).passed
    assert "shape" in compare(a, np.zeros((8, 4), np.float32)).reason
    r = compare(a.astype(BF16), a)
    assert not r.passed and "dtype" in r.reason


def test_element_rule_is_atol_plus_rtol_times_ref():
    ref = np.array([1.0, 64.0, 0.0, -8.0], np.float64)
    atol, rtol = 2.0**-10, 2.0**-7  # powers of two keep every sum below exact
    limit = atol + rtol * np.abs(ref)
    assert compare(ref + limit, ref, atol, rtol, 0.0).passed  # exactly on the limit is right
    assert compare(ref - limit, ref, atol, rtol, 0.0).passed
    r = compare(ref + limit + 2.0**-20, ref, atol, rtol, 0.0)
    assert r.wrong == 4 and len(r.worst) == 4


@pytest.mark.parametrize("numel,ratio", [(1000, 0.005), (300, 0.005), (100, 0.015), (500, 0.005), (7, 0.2)])
def test_allowance_is_round_of_ratio_times_numel(numel, ratio):
    allowed = round(ratio * numel)
    ref = np.zeros(numel)
    out = ref.copy()
    out[:allowed] = 1.0
    r = compare(out, ref, 1e-4, 2**-7, ratio)
    assert r.allowed == allowed and r.passed
    out[allowed] = 1.0
    r = compare(out, ref, 1e-4, 2**-7, ratio)
    assert not r.passed and r.wrong == allowed + 1


def test_failure_message_lists_count_ratio_and_the_worst_elements():
    ref = np.zeros((10, 10), np.float32)
    out = ref.copy()
    out[2, 3], out[7, 1], out[5, 5] = 5.0, -9.0, 0.5
    r = compare(out, ref, 1e-4, 2**-7, 0.0, name="y")
    text = str(r)
    assert not r.passed and r.wrong == 3 and r.ratio == pytest.approx(0.03)
    assert "3/100 wrong" in text
    assert text.index("[7, 1]") < text.index("[2, 3]") < text.index("[5, 5]")  # worst first
    assert len(r.worst) == 3  # right elements are never listed
    assert "got -9" in text and "want 0" in text
    with pytest.raises(AssertionError, match=r"\[7, 1\]"):
        assert_compare(out, ref, 1e-4, 2**-7, 0.0)


def test_default_tolerances_by_dtype():
    assert tolerance_for(BF16) == (1e-4, 2**-7, 0.005)
    # INT8 outputs: exact by default; one step only where a card says so (atol 1)
    assert tolerance_for(np.int8) == (0.0, 0.0, 0.0)
    a = np.array([1, 2, 3], np.int8)
    assert not compare(a + np.int8(1), a).passed
    assert compare(a + np.int8(1), a, 1.0, 0.0, 0.0).passed
    assert not compare(a + np.int8(2), a, 1.0, 0.0, 0.0).passed
    assert tolerance_for(np.int32) == (0.0, 0.0, 0.0)


def test_compare_rows_finds_a_row_hidden_under_the_global_ratio():
    # per row at most max(1, round(4 * ratio * row size)) wrong elements: here 2 of 100
    ref = np.ones((400, 100), np.float32)
    out = ref.copy()
    out[399, :3] = 2.0  # 3 of 40000 wrong: the whole tensor passes
    assert compare(out, ref, 1e-4, 2**-7, 0.005).passed
    assert compare_rows(out, ref, 1e-4, 2**-7, 0.005) == [399]
    out[399, 2] = 1.0
    assert compare_rows(out, ref, 1e-4, 2**-7, 0.005) == []  # rounding noise passes
    out[5] = 0.0  # a dropped row
    out[7, :3] = np.nan
    assert compare_rows(out, ref, 1e-4, 2**-7, 0.005) == [5, 7]
    assert compare_rows(out.T, ref.T, 1e-4, 2**-7, 0.005, axis=1) == [5, 7]
    assert compare_rows(out[:, :50], ref, 1e-4, 2**-7, 0.005) == list(range(400))
    assert compare_rows(out, ref, 1e-4, 2**-7, 0.0) == [5, 7, 399]  # ratio 0: exact rows


# --- one rounding step, the per-row verdict, chained outputs ------------------------------------


def _truncate_to_bf16(x: np.ndarray) -> np.ndarray:
    bits = np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(BF16)


def test_a_truncating_rounding_passes_the_error_rule_but_not_the_differ_rule():
    """One BF16 step is within rtol = 2^-7 everywhere, so only the share of elements that differ
    at all tells a truncating cast from rounding to nearest."""
    x = np.random.default_rng(0).uniform(-1, 1, 4096).astype(np.float32)
    ref, trunc = x.astype(BF16), _truncate_to_bf16(x)
    assert compare(trunc, ref, 1e-4, 2**-7, 0.005).passed
    verdict = compare(trunc, ref, 1e-4, 2**-7, 0.005, differ_ratio=0.05)
    assert not verdict.passed and "differ from the golden at all" in str(verdict)
    near = x + np.float32(1e-9)  # FP32 noise: the rounding to nearest moves nowhere
    assert compare(near.astype(BF16), ref, 1e-4, 2**-7, 0.005, differ_ratio=0.05).passed


def test_a_row_over_its_allowance_is_named_with_its_counts():
    ref = np.ones((10, 1000), np.float32).astype(BF16)
    out = ref.copy()
    out[3, :30] = 2.0  # 30 of 10000 overall (allowed 50); row 3 holds 30 (allowed 20)
    verdict = compare(out, ref, 1e-4, 2**-7, 0.005, rows=True)
    assert not verdict.passed and [(r.index, r.wrong, r.allowed) for r in verdict.bad_rows] == [(3, 30, 20)]
    text = str(verdict)
    assert text.startswith("out: FAIL — 1 row over the per-row allowance (row 3: 30 wrong (allowed 20)); overall 30/10000")
    assert "PASS" not in text and verdict.as_dict()["bad_rows"] == [{"row": 3, "wrong": 30, "allowed": 20}]


class _ChainedGolden:
    """b = 3·a: a is judged on its own, b against the golden recomputed from the kernel's a."""

    CHAINED = {"b": ("a",)}

    @staticmethod
    def golden(inputs, given=None):
        a = inputs["x"] * 2
        return {"a": a, "b": (given or {}).get("a", a) * 3}


def test_judge_recomputes_a_chained_output_from_the_kernels_upstream_value():
    x = np.linspace(1, 2, 64).astype(np.float32)
    tol = {"a": (0.0, 0.01, 0.0), "b": (0.0, 1e-6, 0.0)}
    a = x * 2 * np.float32(1.001)  # within a's rtol, off for b's tight one if b were judged alone
    verdicts = {v.name: v for v in judge({"a": a, "b": a * 3}, _ChainedGolden, {"x": x}, tol)}
    assert verdicts["a"].passed and verdicts["b"].passed and verdicts["b"].given == ("a",)
    broken = {v.name: v for v in judge({"a": a, "b": a * 3 + 1}, _ChainedGolden, {"x": x}, tol)}
    assert not broken["b"].passed and "recomputed from the kernel's a" in str(broken["b"])  # still bites
    missing = judge({"a": a}, _ChainedGolden, {"x": x}, tol)
    assert [(v.name, v.passed, v.reason) for v in missing] == [("b", False, "the kernel returned no such output")]
