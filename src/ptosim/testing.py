"""The upstream golden comparison rule, for generated and hand-written tests.

``compare(out, ref, atol, rtol, max_error_ratio)``: any NaN/Inf in ``out`` fails; shape and dtype
must match; an element is wrong when ``|out - ref| > atol + rtol * |ref|``; the comparison passes
when the wrong elements are at most ``round(max_error_ratio * numel)``. Failure messages give the
count, the ratio, the allowance and the worst elements with their indices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["compare", "compare_rows", "judge", "DIFFER_RATIO", "differ_ratio_for", "CompareResult", "RowFailure", "TOLERANCES", "tolerance_for", "assert_compare", "tie_bands"]

#: (atol, rtol, max_error_ratio) per output dtype; INT8 is exact.
TOLERANCES: dict[str, tuple[float, float, float]] = {
    "bfloat16": (1e-4, 2.0**-7, 0.005),
    "float16": (1e-4, 2.0**-10, 0.005),
    "float32": (1e-5, 2.0**-13, 0.001),
    # INT8 outputs are exact. A card allows one step where its quantiser reads an
    # FP32-accumulated value whose order is free (the MLA prolog's qr: see its card's `tolerance`).
    "int8": (0.0, 0.0, 0.0),
    "int32": (0.0, 0.0, 0.0),
    "float8_e4m3fn": (1e-4, 2.0**-3, 0.005),
    "float8_e8m0fnu": (0.0, 0.0, 0.0),
}


#: the share of elements of a 16-bit float output that may differ from the golden at all. The
#: golden reproduces the FP32 value before the output's rounding to within the arithmetic's
#: reordering noise, so a rounding to nearest disagrees only where that value lies next to a tie
#: (measured on the shipped instances: at most 0.8 %, the RMSNorm + linear projection's y at K = 256); a truncating or
#: otherwise wrong rounding mode disagrees in about half the elements, and one step of a 16-bit
#: float is within rtol = 2^-7, so the error rule alone cannot see it. Other dtypes: no such check.
DIFFER_RATIO: dict[str, float] = {"bfloat16": 0.05, "float16": 0.05}


def differ_ratio_for(dtype: Any) -> float:
    """Default share of elements of an output that may differ from the golden (1.0: unchecked)."""
    return DIFFER_RATIO.get(np.dtype(dtype).name, 1.0)


def tolerance_for(dtype: Any) -> tuple[float, float, float]:
    """Default ``(atol, rtol, max_error_ratio)`` for an output dtype."""
    name = np.dtype(dtype).name
    return TOLERANCES.get(name, TOLERANCES["float32"])


@dataclass(frozen=True)
class RowFailure:
    """A slice along the token axis over its own allowance."""

    index: int
    wrong: int
    allowed: int


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
    #: rows over their own allowance (``compare(..., rows=True)``); any fails the comparison
    bad_rows: list[RowFailure] = field(default_factory=list)
    #: the kernel outputs the reference was recomputed from (``judge``: a chained output)
    given: tuple[str, ...] = ()
    #: elements outside (atol, rtol) that the tie band excused: an integer code upstream on a
    #: rounding boundary rounded the other way (``compare(band=...)``)
    ties: int = 0

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
            "bad_rows": [{"row": r.index, "wrong": r.wrong, "allowed": r.allowed} for r in self.bad_rows],
            "given": list(self.given),
            "ties": self.ties,
        }

    def __str__(self) -> str:
        against = f" (against the golden recomputed from the kernel's {', '.join(self.given)})" if self.given else ""
        if self.reason:
            return f"{self.name}: FAIL ({self.reason}){against}"
        overall = f"{self.wrong}/{self.numel} wrong (ratio {self.ratio:.5f}, allowed {self.allowed})"
        if self.bad_rows:
            shown = "; ".join(f"row {r.index}: {r.wrong} wrong (allowed {r.allowed})" for r in self.bad_rows[:4])
            more = f" and {len(self.bad_rows) - 4} more" if len(self.bad_rows) > 4 else ""
            n = len(self.bad_rows)
            head = f"{self.name}: FAIL — {n} row{'s' if n != 1 else ''} over the per-row allowance ({shown}{more}); overall {overall}"
        else:
            head = f"{self.name}: {'PASS' if self.passed else 'FAIL'} — {overall}"
        head += f", max |err| {self.max_abs_error:.3g}"
        if self.ties:
            head += f", {self.ties} at a rounding tie upstream"
        head += against
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
    rows: bool = False,
    given: tuple[str, ...] = (),
    differ_ratio: float = 1.0,
    band: np.ndarray | None = None,
) -> CompareResult:
    """Apply the upstream rule; tolerances default to ``tolerance_for(ref.dtype)``.

    ``rows``: also hold every slice along the first (token) axis to its own allowance
    (``compare_rows``); a row over it fails the comparison, and the message names it.
    ``differ_ratio``: at most this share of elements may differ from ``ref`` at all (``DIFFER_RATIO``).
    ``band``: a further allowance per element (``tie_bands``: how far the output may move when the
    integer codes upstream of it that sit on a rounding boundary round the other way); elements
    with a band are left out of the ``differ_ratio`` count."""
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
    banded = np.zeros(r.shape, bool) if band is None else np.broadcast_to(np.asarray(band, np.float64) > 0, r.shape)
    with np.errstate(invalid="ignore"):
        err = np.abs(o - r)
        # `not <=` rather than `>`: a NaN/Inf in the reference makes the element wrong, not right
        strict = ~(err <= atol + rtol * np.abs(r))
        wrong_mask = strict if band is None else ~(err <= atol + rtol * np.abs(r) + band)
    wrong = int(wrong_mask.sum())
    excused = int((strict & ~wrong_mask).sum())
    worst: list[tuple[tuple[int, ...], float, float]] = []
    if wrong:
        key = np.where(wrong_mask, np.nan_to_num(err, nan=np.inf), -1.0)
        flat = np.argsort(key, axis=None, kind="stable")[::-1][: min(show, wrong)]  # wrong ones only
        for f in flat:
            i = np.unravel_index(int(f), ref.shape)
            worst.append((tuple(int(v) for v in i), float(o[i]), float(r[i])))
    bad_rows = _row_failures(wrong_mask, max_error_ratio) if rows and ref.ndim else []
    differ = int(np.count_nonzero((o != r) & ~banded)) if differ_ratio < 1.0 else 0
    reason = ""
    if differ > round(differ_ratio * numel):
        reason = (
            f"{differ} of {numel} elements differ from the golden at all ({differ / numel:.1%}; allowed {differ_ratio:.0%}): "
            "rounding to nearest disagrees only next to a tie — is a rounding mode wrong (a truncating cast)?"
        )
    passed = wrong <= allowed and not bad_rows and not reason
    return CompareResult(name, passed, numel, wrong, allowed, float(err.max()) if numel else 0.0, reason, worst, bad_rows, tuple(given), excused)


def _row_allowance(row_numel: int, ratio: float) -> int:
    """Four times the global density (at least one element): natural rounding noise passes while a
    broken row (a dropped tail, a skipped iteration) cannot hide under the global allowance."""
    return max(1, int(round(4 * ratio * row_numel))) if ratio > 0 else 0


def _row_failures(wrong_mask: np.ndarray, ratio: float) -> list[RowFailure]:
    per_row = wrong_mask.reshape(wrong_mask.shape[0], -1)
    allowed = _row_allowance(per_row.shape[1], ratio)
    counts = per_row.sum(axis=1)
    return [RowFailure(int(i), int(counts[i]), allowed) for i in np.nonzero(counts > allowed)[0]]


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
    allowed = _row_allowance(r.shape[1], ratio)
    return [int(i) for i in np.nonzero(wrong.sum(axis=1) > allowed)[0]]


def judge(
    outputs: Mapping[str, np.ndarray],
    golden: Any,
    inputs: Mapping[str, np.ndarray],
    tolerances: Mapping[str, Sequence[float]],
) -> list[CompareResult]:
    """Every output of a kernel run against an instance's golden module, row by row.

    ``tolerances``: output -> (atol, rtol, ratio[, differ[, ties]]).

    An output the golden lists in ``CHAINED`` (``{output: (upstream outputs, ...)}``) is judged
    against ``golden.golden(inputs, given=outputs)``: the reference recomputed from the kernel's own
    values of those upstream outputs, which are judged on their own. A rounding of an intermediate
    that may legitimately go either way (an FP32 sum in another order landing on the other side of a
    BF16 or INT8 rounding boundary) then cannot spread through a long dot product into a downstream
    output and fail it, while a wrong computation downstream still fails (it is compared exactly as
    before, from correct inputs). Outputs not listed are judged against the independent golden.

    An output with a ``ties`` allowance (FP32 ulps, see ``tie_bands``) is downstream of an integer
    rounding the kernel does not return (or is that rounding's codes): it may move as far as the
    codes within that distance of a rounding boundary rounding the other way moves it, and no
    further."""
    expected = golden.golden(inputs)
    chained: Mapping[str, Sequence[str]] = getattr(golden, "CHAINED", {}) or {}
    results = [
        CompareResult(name, False, 0, 0, 0, float("inf"), why)
        for names, why in ((set(expected) - set(outputs), "the kernel returned no such output"), (set(outputs) - set(expected), "the golden has no such output"))
        for name in sorted(names)
    ]
    if results:
        return results
    forced = golden.golden(inputs, given=outputs) if chained else expected
    upstream = {name: tuple(u for u in chained.get(name, ()) if u in outputs) for name in expected}
    ulps = {name: float(tol[4]) for name, tol in tolerances.items() if len(tol) > 4 and tol[4] and name in expected and not upstream[name]}
    bands = tie_bands(golden, inputs, expected, ulps)
    for name, ref in expected.items():
        atol, rtol, ratio, differ = (*tolerances.get(name, ()), None, None, None, None)[:4]
        source = forced if upstream[name] else expected
        results.append(compare(outputs[name], source[name], atol, rtol, ratio, name=name, rows=True, given=upstream[name],
                               differ_ratio=1.0 if differ is None else differ, band=bands.get(name)))
    return results


def tie_bands(golden: Any, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], ulps: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Per output in ``ulps``, how far it moves (element-wise, float64) when the roundings on its way
    whose value before the rounding lies within that many row-scale FP32 ulps of a rounding
    boundary go to the other neighbour: an INT8 quantiser's codes, and the BF16 intermediates a
    quantiser reads. The golden reports, per rounding site, each element's distance
    (``golden(inputs, ties=d)`` sets ``d["margin"][site]``, rows along the last axis) and recomputes
    with ``d["flip"][site]`` masks. Rows are independent (per-token quantisation feeding per-token
    math), so one recomputation flips the r-th near element of every row of one site; an output's
    band is the sum of the moves of the near elements, each taken alone — whichever subset the
    kernel flipped, its output lies within. A golden module may define its own
    ``tie_bands(inputs, expected, ulps)`` with the same meaning (the SwiGLU FFN's: the down projection is
    linear in the BF16 activation, so one matmul of the moves replaces a recomputation per element)."""
    if not ulps:
        return {}
    own = getattr(golden, "tie_bands", None)
    if callable(own):  # a golden whose outputs move linearly with the rounding gives its bands in closed form
        return own(inputs, expected, ulps)
    probe: dict[str, Any] = {}
    golden.golden(inputs, ties=probe)
    margins: Mapping[str, Any] = probe.get("margin") or {}
    bands: dict[str, np.ndarray] = {name: np.zeros(np.shape(expected[name])) for name in ulps}
    for limit in sorted(set(ulps.values())):
        names = [n for n, u in ulps.items() if u == limit]
        for site, margin in margins.items():
            margin = np.asarray(margin, np.float64)
            rows = margin.reshape(-1, margin.shape[-1]) if margin.ndim else margin.reshape(1, 1)
            near = rows <= limit
            rank = np.cumsum(near, axis=-1) * near  # 1, 2, ... along each row; 0 where not near
            for r in range(1, int(rank.max(initial=0)) + 1):
                flipped = golden.golden(inputs, ties={"flip": {site: (rank == r).reshape(margin.shape)}})
                for name in names:
                    bands[name] += np.abs(np.asarray(flipped[name]).astype(np.float64) - np.asarray(expected[name]).astype(np.float64))
    return bands
