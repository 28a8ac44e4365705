"""The upstream golden comparison rule (SPEC §3.6), for generated and hand-written tests.

``compare(out, ref, atol, rtol, max_error_ratio)``: any NaN/Inf in ``out`` fails; shape and dtype
must match; an element is wrong when ``|out - ref| > atol + rtol * |ref|``; the comparison passes
when the wrong elements are at most ``round(max_error_ratio * numel)``. Failure messages give the
count, the ratio, the allowance and the worst elements with their indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["compare", "compare_rows", "CompareResult", "TOLERANCES", "tolerance_for", "assert_compare"]

#: (atol, rtol, max_error_ratio) per output dtype; INT8 is exact.
TOLERANCES: dict[str, tuple[float, float, float]] = {
    "bfloat16": (1e-4, 2.0**-7, 0.005),
    "float16": (1e-4, 2.0**-10, 0.005),
    "float32": (1e-5, 2.0**-13, 0.001),
    # INT8 outputs are exact (SPEC §3.6). A card allows one step where its quantiser reads an
    # FP32-accumulated value whose order is free (SK-04's qr: see its `tolerance`).
    "int8": (0.0, 0.0, 0.0),
    "int32": (0.0, 0.0, 0.0),
    "float8_e4m3fn": (1e-4, 2.0**-3, 0.005),
    "float8_e8m0fnu": (0.0, 0.0, 0.0),
}


def tolerance_for(dtype: Any) -> tuple[float, float, float]:
    """Default ``(atol, rtol, max_error_ratio)`` for an output dtype."""
    name = np.dtype(dtype).name
    return TOLERANCES.get(name, TOLERANCES["float32"])


@dataclass
class CompareResult:
    name: str
    passed: bool
    numel: int
    wrong: int
    allowed: int
    max_abs_error: float
    reason: str = ""
    worst: list[tuple[tuple[int, ...], float, float]] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.wrong / self.numel if self.numel else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "numel": self.numel,
            "wrong": self.wrong,
            "allowed": self.allowed,
            "ratio": self.ratio,
            "max_abs_error": self.max_abs_error,
            "reason": self.reason,
        }

    def __str__(self) -> str:
        if self.reason:
            return f"{self.name}: FAIL ({self.reason})"
        head = (
            f"{self.name}: {'PASS' if self.passed else 'FAIL'} — {self.wrong}/{self.numel} wrong "
            f"(ratio {self.ratio:.5f}, allowed {self.allowed}), max |err| {self.max_abs_error:.3g}"
        )
        if not self.passed and self.worst:
            rows = "; ".join(f"{list(i)}: got {o:.6g}, want {r:.6g}" for i, o, r in self.worst)
            head += f"; worst: {rows}"
        return head


def _as_f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).astype(np.float64)


def compare(
    out: np.ndarray,
    ref: np.ndarray,
    atol: float | None = None,
    rtol: float | None = None,
    max_error_ratio: float | None = None,
    *,
    name: str = "out",
    show: int = 5,
) -> CompareResult:
    """Apply the upstream rule; tolerances default to ``tolerance_for(ref.dtype)``."""
    out = np.asarray(out)
    ref = np.asarray(ref)
    d_atol, d_rtol, d_ratio = tolerance_for(ref.dtype)
    atol = d_atol if atol is None else atol
    rtol = d_rtol if rtol is None else rtol
    max_error_ratio = d_ratio if max_error_ratio is None else max_error_ratio
    numel = int(ref.size)
    allowed = int(round(max_error_ratio * numel))
    if out.shape != ref.shape:
        return CompareResult(name, False, numel, numel, allowed, float("inf"), f"shape {out.shape} != {ref.shape}")
    if out.dtype != ref.dtype:
        return CompareResult(name, False, numel, numel, allowed, float("inf"), f"dtype {out.dtype} != {ref.dtype}")
    o = _as_f64(out)
    r = _as_f64(ref)
    bad = ~np.isfinite(o)
    if bad.any():
        idx = [tuple(int(v) for v in i) for i in np.argwhere(bad)[:show]]
        return CompareResult(
            name, False, numel, int(bad.sum()), allowed, float("inf"), f"{int(bad.sum())} NaN/Inf values, first at {idx}"
        )
    with np.errstate(invalid="ignore"):
        err = np.abs(o - r)
        # `not <=` rather than `>`: a NaN/Inf in the reference makes the element wrong, not right
        wrong_mask = ~(err <= atol + rtol * np.abs(r))
    wrong = int(wrong_mask.sum())
    worst: list[tuple[tuple[int, ...], float, float]] = []
    if wrong:
        key = np.where(wrong_mask, np.nan_to_num(err, nan=np.inf), -1.0)
        flat = np.argsort(key, axis=None, kind="stable")[::-1][: min(show, wrong)]  # wrong ones only
        for f in flat:
            i = np.unravel_index(int(f), ref.shape)
            worst.append((tuple(int(v) for v in i), float(o[i]), float(r[i])))
    return CompareResult(name, wrong <= allowed, numel, wrong, allowed, float(err.max()) if numel else 0.0, "", worst)


def assert_compare(out: np.ndarray, ref: np.ndarray, *args: Any, **kwargs: Any) -> CompareResult:
    """``compare`` that raises AssertionError with the full message on failure."""
    result = compare(out, ref, *args, **kwargs)
    if not result.passed:
        raise AssertionError(str(result))
    return result


def compare_rows(
    out: np.ndarray,
    ref: np.ndarray,
    atol: float | None = None,
    rtol: float | None = None,
    max_error_ratio: float | None = None,
    *,
    axis: int = 0,
) -> list[int]:
    """Indices along ``axis`` (the token axis) whose slice fails the rule on its own.

    A row may hold at most ``max(1, round(4 * ratio * row_numel))`` wrong elements (none when the
    ratio is 0): four times the global density, so natural rounding noise passes while a broken
    row (a dropped tail, a skipped iteration) cannot hide under the global allowance.
    """
    out = np.moveaxis(np.asarray(out), axis, 0)
    ref = np.moveaxis(np.asarray(ref), axis, 0)
    d_atol, d_rtol, d_ratio = tolerance_for(ref.dtype)
    atol = d_atol if atol is None else atol
    rtol = d_rtol if rtol is None else rtol
    ratio = d_ratio if max_error_ratio is None else max_error_ratio
    if out.shape != ref.shape or ref.ndim == 0:
        return list(range(ref.shape[0] if ref.ndim else 1))
    o = _as_f64(out).reshape(ref.shape[0], -1)
    r = _as_f64(ref).reshape(ref.shape[0], -1)
    with np.errstate(invalid="ignore"):
        wrong = ~np.isfinite(o) | (np.abs(o - r) > atol + rtol * np.abs(r))
    row_numel = r.shape[1]
    allowed = max(1, int(round(4 * ratio * row_numel))) if ratio > 0 else 0
    return [int(i) for i in np.nonzero(wrong.sum(axis=1) > allowed)[0]]
