"""ptosim.cast against independent exact references.

The reference decodes every bit pattern of the narrow formats by hand (sign/exponent/mantissa
formulas, no numpy or ml_dtypes), holds values as ``fractions.Fraction``, finds the two
representable neighbours of the exact input by bisection and picks one per mode. Results are
compared as bit patterns; NaN matches any NaN.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_left
from dataclasses import dataclass, field
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptosim.cast import CastMode, SaturationMode, cast_array, resolve_mode, to_float32
from ptosim.dtypes import DataType as D
from ptosim.errors import DTypeError

M = CastMode
ROUNDING = [M.CAST_RINT, M.CAST_ROUND, M.CAST_FLOOR, M.CAST_CEIL, M.CAST_TRUNC, M.CAST_ODD]
SAT = [SaturationMode.OFF, SaturationMode.ON]
HYP = settings(max_examples=300, deadline=None)

# --------------------------------------------------------------------------- reference formats


@dataclass
class Fmt:
    dt: D
    width: int
    signed: bool
    has_inf: bool
    pos: list[Fraction] = field(default_factory=list)  # sorted non-negative finite values
    code: dict[Fraction, int] = field(default_factory=dict)  # magnitude -> positive bit pattern
    max: Fraction = Fraction(0)
    vnext: Fraction = Fraction(0)  # the value the pattern after max would have (overflow)
    inf_code: int | None = None


def _decode_ieee(bits: int, ebits: int, mbits: int, fn: bool) -> Fraction | None | str:
    """Magnitude of a positive pattern: Fraction, 'inf', or None for NaN."""
    bias = (1 << (ebits - 1)) - 1
    e, m = bits >> mbits, bits & ((1 << mbits) - 1)
    if fn:  # E4M3FN: only S.1111.111 is NaN, no inf
        if e == (1 << ebits) - 1 and m == (1 << mbits) - 1:
            return None
    elif e == (1 << ebits) - 1:
        return "inf" if m == 0 else None
    if e == 0:
        return Fraction(m, 1 << mbits) * Fraction(2) ** (1 - bias)
    return (1 + Fraction(m, 1 << mbits)) * Fraction(2) ** (e - bias)


def _make_fmt(dt: D) -> Fmt:
    if dt == D.DT_FP8E8M0:
        f = Fmt(dt, 8, False, False)
        for c in range(255):
            v = Fraction(2) ** (c - 127)
            f.pos.append(v)
            f.code[v] = c
        f.max, f.vnext = f.pos[-1], 2 * f.pos[-1]
        return f
    ebits, mbits, fn = {
        D.DT_FP16: (5, 10, False),
        D.DT_BF16: (8, 7, False),
        D.DT_FP8E5M2: (5, 2, False),
        D.DT_FP8E4M3: (4, 3, True),
    }[dt]
    width = 1 + ebits + mbits
    f = Fmt(dt, width, True, not fn)
    for b in range(1 << (width - 1)):
        v = _decode_ieee(b, ebits, mbits, fn)
        if v == "inf":
            f.inf_code = b
        elif v is not None:
            f.pos.append(v)
            f.code[v] = b
    f.pos.sort()
    f.max = f.pos[-1]
    f.vnext = f.max + (f.max - f.pos[-2])
    return f


FMTS = {dt: _make_fmt(dt) for dt in (D.DT_FP16, D.DT_BF16, D.DT_FP8E5M2, D.DT_FP8E4M3, D.DT_FP8E8M0)}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _choose(A: Fraction, lo: Fraction, hi: Fraction, lo_c: int, hi_c: int, mode: CastMode,
            neg: bool, tie_up: bool) -> int:
    """Magnitude code for |x| = A strictly between lo and hi."""
    if mode is M.CAST_TRUNC:
        return lo_c
    if mode is M.CAST_FLOOR:
        return hi_c if neg else lo_c
    if mode is M.CAST_CEIL:
        return lo_c if neg else hi_c
    if mode is M.CAST_ODD:
        return lo_c if lo_c % 2 else hi_c
    d_lo, d_hi = A - lo, hi - A
    if d_lo != d_hi:
        return lo_c if d_lo < d_hi else hi_c
    if mode is M.CAST_ROUND or tie_up:
        return hi_c
    return lo_c if lo_c % 2 == 0 else hi_c  # RINT: ties to even pattern


def ref_float(x, f: Fmt, mode: CastMode, sat: bool) -> int | None:
    """Expected bit pattern (None = NaN) of rounding x (float, int or Fraction) into f."""
    if isinstance(x, float):
        if math.isnan(x):
            return None
        neg = math.copysign(1.0, x) < 0
        if math.isinf(x):
            if not f.signed and neg:
                return None
            if sat:
                X = -f.max if neg else f.max
            else:
                return None if f.inf_code is None else f.inf_code | (neg << (f.width - 1))
        else:
            X = Fraction(x)
    else:
        X = Fraction(x)
        neg = X < 0
    if not f.signed and X <= 0:
        return None  # E8M0 has no zero and no negatives
    if sat:
        X = max(-f.max, min(f.max, X))  # clip before converting
    A = abs(X)
    sign = (neg << (f.width - 1)) if f.signed else 0
    if not f.signed and A < f.pos[0]:
        return f.code[f.pos[0]]  # E8M0: nothing below 2^-127
    i = bisect_left(f.pos, A)
    if i < len(f.pos) and f.pos[i] == A:
        return f.code[A] | sign
    max_c = f.code[f.max]
    if i == len(f.pos):  # beyond max finite: between max and the overflow value
        lo, hi, lo_c, hi_c = f.max, max(f.vnext, A), max_c, max_c + 1  # hi: "overflow"
    else:
        lo, hi = f.pos[i - 1], f.pos[i]
        lo_c, hi_c = f.code[lo], f.code[hi]
    c = _choose(A, lo, hi, lo_c, hi_c, mode, neg, tie_up=not f.signed)
    if c == max_c + 1:  # overflow
        return None if f.inf_code is None else f.inf_code | sign
    return c | sign


def check_float(xs, src: D, dst: D, modes=ROUNDING, sats=SAT, ref_src=None) -> None:
    f = FMTS[dst]
    with np.errstate(over="ignore"):  # inputs beyond a 16-bit source's range become inf
        arr = np.asarray(xs).astype(src.np_dtype)
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when widening NaN
        vals = ref_src if ref_src is not None else [float(v) for v in arr.astype(np.float64)]
    for sat in sats:
        for mode in modes:
            got = cast_array(arr, src, dst, mode, sat)
            assert got.dtype == dst.np_dtype
            if mode is M.CAST_ODD and (src, dst) != (D.DT_FP32, D.DT_FP16):
                mode = M.CAST_RINT  # ODD exists only FP32 -> FP16; elsewhere the default applies
            gbits = got.view(UINT[got.dtype.itemsize])
            gnan = np.isnan(got.astype(np.float32))
            for k, v in enumerate(vals):
                exp = ref_float(v, f, mode, sat is SaturationMode.ON)
                if exp is None:
                    ok = bool(gnan[k])
                else:
                    ok = int(gbits[k]) == exp
                assert ok, (f"{src.short}->{dst.short} {mode.name} {sat.name} x={v!r}: "
                            f"got {int(gbits[k]):#x} want {exp if exp is None else hex(exp)}")


# --------------------------------------------------------------------------- decoder sanity


@pytest.mark.parametrize("dt", list(FMTS))
def test_reference_decoder_matches_ml_dtypes(dt):
    f = FMTS[dt]
    for v, c in f.code.items():
        assert Fraction(float(np.array([c], UINT[dt.nbytes]).view(dt.np_dtype).astype(np.float64)[0])) == v
    assert float(f.max) == dt.info.max_finite


# --------------------------------------------------------------------------- float -> float

f32_finite = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)
FP32_TARGETS = [D.DT_BF16, D.DT_FP16, D.DT_FP8E4M3, D.DT_FP8E5M2, D.DT_FP8E8M0]


@pytest.mark.parametrize("dst", FP32_TARGETS, ids=lambda d: d.short)
@HYP
@given(xs=st.lists(f32_finite, min_size=1, max_size=5))
def test_fp32_narrowing_random(dst, xs):
    check_float(xs, D.DT_FP32, dst)


def _midpoints(dt: D, rng: np.random.Generator, n: int) -> list[float]:
    """Exact midpoints between neighbours of dt (and past max), each with +-1 FP32 ulp."""
    f = FMTS[dt]
    pos = f.pos + [f.vnext]
    idx = rng.integers(0, len(pos) - 1, n)
    out: list[float] = []
    for i in idx:
        mid = np.float32((pos[i] + pos[i + 1]) / 2)
        assert Fraction(float(mid)) == (pos[i] + pos[i + 1]) / 2  # midpoints are FP32 values
        for v in (mid, np.nextafter(mid, np.float32(0)), np.nextafter(mid, np.float32(np.inf))):
            out += [float(v), -float(v)]
    return out


@pytest.mark.parametrize("dst", FP32_TARGETS, ids=lambda d: d.short)
def test_fp32_narrowing_ties_and_edges(dst):
    rng = np.random.default_rng(7)
    f = FMTS[dst]
    edges = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), float(f.max), float(f.vnext),
             float(f.vnext) * 4, 3.4e38, -3.4e38, 1e-45, -1e-45, float(f.pos[1]) / 2, 2.0**-130,
             1.5, 3.0, 2.5, 6.0, float(np.finfo(np.float32).max)]
    check_float(edges + _midpoints(dst, rng, 300), D.DT_FP32, dst)


@pytest.mark.parametrize("src,dst", [(D.DT_BF16, D.DT_FP16), (D.DT_FP16, D.DT_BF16),
                                     (D.DT_FP16, D.DT_FP8E4M3), (D.DT_BF16, D.DT_FP8E5M2)],
                         ids=lambda d: d.short)
def test_16bit_sources_sampled_patterns(src, dst):
    rng = np.random.default_rng(1)
    pats = np.concatenate([rng.integers(0, 65536, 3000), np.arange(0, 64), np.arange(0x8000, 0x8040),
                           np.arange(0x7F70, 0x7F82), np.arange(0x7BF0, 0x7C02)]).astype(np.uint16)
    check_float(pats.view(src.np_dtype), src, dst)


@HYP
@given(xs=st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=16))
def test_bf16_to_fp16_random_patterns(xs):
    check_float(np.array(xs, np.uint16).view(ml_dtypes.bfloat16), D.DT_BF16, D.DT_FP16)


def test_saturation_examples():
    x = np.array([465.0, -465.0, 1e30, np.inf, -np.inf, np.nan], np.float32)
    off = cast_array(x, D.DT_FP32, D.DT_FP8E4M3, M.CAST_RINT, SaturationMode.OFF)
    on = cast_array(x, D.DT_FP32, D.DT_FP8E4M3, M.CAST_RINT, SaturationMode.ON)
    assert np.isnan(off.astype(np.float32)).all()
    assert on.astype(np.float32)[:5].tolist() == [448, -448, 448, 448, -448] and np.isnan(on[5])
    h = cast_array(np.array([7e4, -7e4], np.float32), D.DT_FP32, D.DT_FP16)
    assert h.tolist() == [np.inf, -np.inf]
    t = cast_array(np.array([7e4, -7e4], np.float32), D.DT_FP32, D.DT_FP16, M.CAST_TRUNC)
    assert t.tolist() == [65504, -65504]


def test_e8m0_documented_choices():
    x = np.array([3.0, 1.5, 6.0, 0.0, -1.0, 2.0**-130, np.inf], np.float32)
    def e(mode, sat=SaturationMode.OFF):
        return cast_array(x, D.DT_FP32, D.DT_FP8E8M0, mode, sat).view(np.uint8).tolist()
    assert e(M.CAST_FLOOR)[:3] == [128, 127, 129]  # 3 -> 2, 1.5 -> 1, 6 -> 4
    assert e(M.CAST_CEIL)[:3] == [129, 128, 130]
    assert e(M.CAST_RINT)[:3] == [129, 128, 130]  # ties 1.5*2^e round up, as ml_dtypes
    assert e(M.CAST_RINT) == x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).tolist()
    for mode in ROUNDING:
        assert e(mode)[3:] == [255, 255, 0, 255]  # <=0 -> NaN, tiny -> 2^-127, inf -> NaN
    assert e(M.CAST_RINT, SaturationMode.ON)[3:] == [255, 255, 0, 254]


def test_ml_dtypes_rne_agrees_with_rint_path():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(100_000).astype(np.float32) * 1e3,
                        rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)])
    got = cast_array(x, D.DT_FP32, D.DT_BF16, M.CAST_RINT)
    with np.errstate(invalid="ignore"):
        want = x.astype(ml_dtypes.bfloat16)
    same = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))
    assert same.all()
    check_float(x[:2000:7], D.DT_FP32, D.DT_BF16, modes=[M.CAST_RINT], sats=[SaturationMode.OFF])


def _ref_int_round(X: Fraction, mode: CastMode) -> int:
    if mode is M.CAST_FLOOR:
        return math.floor(X)
    if mode is M.CAST_CEIL:
        return math.ceil(X)
    if mode is M.CAST_RINT:
        return round(X)  # Fraction.__round__: ties to even
    if mode is M.CAST_ROUND:
        r = math.floor(abs(X) + Fraction(1, 2))
        return -r if X < 0 else r
    return math.trunc(X)  # TRUNC (and the fallbacks)


def ref_int(x, dst: D, mode: CastMode, sat: bool) -> int:
    ii = np.iinfo(dst.np_dtype)
    lo, hi = int(ii.min), int(ii.max)
    if isinstance(x, float) and math.isnan(x):
        return 0
    if isinstance(x, float) and math.isinf(x):
        return hi if x > 0 else lo
    v = _ref_int_round(Fraction(x), mode) if isinstance(x, float) else int(x)
    if sat:
        return max(lo, min(hi, v))
    return (v - lo) % (hi - lo + 1) + lo


INT_TARGETS = [D.DT_INT8, D.DT_INT16, D.DT_INT32, D.DT_INT64, D.DT_UINT8]


def check_int(xs, src: D, dst: D, modes=ROUNDING) -> None:
    with np.errstate(over="ignore"):  # inputs beyond a 16-bit source's range become inf
        arr = np.asarray(xs).astype(src.np_dtype)
    vals = [float(v) for v in arr.astype(np.float64)] if src.is_float else [int(v) for v in arr]
    for sat in SAT:
        for mode in modes:
            got = cast_array(arr, src, dst, mode, sat)
            assert got.dtype == dst.np_dtype
            eff = M.CAST_TRUNC if mode in (M.CAST_ODD, M.CAST_NONE) else mode
            for k, v in enumerate(vals):
                exp = ref_int(v, dst, eff, sat is SaturationMode.ON)
                assert int(got[k]) == exp, f"{src.short}->{dst.short} {mode.name} {sat.name} x={v!r}"


def test_float_to_int_examples():
    x = np.array([300.0, -129.0], np.float32)
    assert cast_array(x, D.DT_FP32, D.DT_INT8).tolist() == [44, 127]
    assert cast_array(x, D.DT_FP32, D.DT_INT8, satmode=SaturationMode.ON).tolist() == [127, -128]
    t = np.array([2.5, -2.5, 3.5, -3.5, 0.5, -0.5], np.float32)
    want = {
        M.CAST_RINT: [2, -2, 4, -4, 0, 0], M.CAST_ROUND: [3, -3, 4, -4, 1, -1],
        M.CAST_FLOOR: [2, -3, 3, -4, 0, -1], M.CAST_CEIL: [3, -2, 4, -3, 1, 0],
        M.CAST_TRUNC: [2, -2, 3, -3, 0, 0], M.CAST_NONE: [2, -2, 3, -3, 0, 0],
        M.CAST_ODD: [2, -2, 3, -3, 0, 0],
    }
    for mode, w in want.items():
        for dst in (D.DT_INT8, D.DT_INT16, D.DT_INT32):
            assert cast_array(t, D.DT_FP32, dst, mode).tolist() == w, (mode, dst)


@pytest.mark.parametrize("dst", INT_TARGETS, ids=lambda d: d.short)
@pytest.mark.parametrize("src", [D.DT_FP32, D.DT_FP16, D.DT_BF16], ids=lambda d: d.short)
def test_float_to_int_edges(src, dst):
    xs = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, 128.0, -128.5, 255.5, 256.0, 300.0, -129.0,
          32767.5, 65504.0, -65504.0, 2.0**31, -(2.0**31) - 256, 2.0**63, -(2.0**63), 3e38, -3e38,
          float("inf"), float("-inf"), float("nan"), 1e-40]
    check_int(xs, src, dst)


@pytest.mark.parametrize("dst", INT_TARGETS, ids=lambda d: d.short)
@HYP
@given(xs=st.lists(st.floats(-1e6, 1e6, width=32) | f32_finite | st.integers(-300, 300).map(lambda i: i / 2),
                   min_size=1, max_size=5))
def test_fp32_to_int_random(dst, xs):
    check_int(xs, D.DT_FP32, dst)


# --------------------------------------------------------------------------- int -> float / int


@pytest.mark.parametrize("src,dst", [(D.DT_INT32, D.DT_FP16), (D.DT_INT32, D.DT_BF16),
                                     (D.DT_INT16, D.DT_FP16), (D.DT_INT8, D.DT_FP8E4M3),
                                     (D.DT_INT32, D.DT_FP8E8M0)], ids=lambda d: d.short)
@HYP
@given(data=st.data())
def test_int_to_narrow_float(src, dst, data):
    ii = np.iinfo(src.np_dtype)
    near = st.integers(max(-70000, int(ii.min)), min(70000, int(ii.max)))
    xs = data.draw(st.lists(st.integers(int(ii.min), int(ii.max)) | near, min_size=1, max_size=5))
    check_float(xs, src, dst, ref_src=[int(v) for v in xs])


def test_int32_to_fp16_overflow():
    x = np.array([70000, -70000, 65519, 65520, 2049, 2051], np.int32)
    off = cast_array(x, D.DT_INT32, D.DT_FP16)
    on = cast_array(x, D.DT_INT32, D.DT_FP16, satmode=SaturationMode.ON)
    assert off.tolist() == [np.inf, -np.inf, 65504, np.inf, 2048, 2052]
    assert on.tolist() == [65504, -65504, 65504, 65504, 2048, 2052]
    tr = cast_array(x, D.DT_INT32, D.DT_FP16, M.CAST_TRUNC)
    assert tr.tolist() == [65504, -65504, 65504, 65504, 2048, 2050]


def _fp32_ref(n: int, mode: CastMode) -> float:
    """Exact int -> FP32 rounding by integer arithmetic (no float involved)."""
    if n == 0:
        return 0.0
    A, neg = abs(n), n < 0
    shift = max(A.bit_length() - 24, 0)
    lo = (A >> shift) << shift
    if lo == A:
        return float(n)
    hi = lo + (1 << shift)

    def code(v: object) -> int:
        return struct.unpack("<I", struct.pack("<f", float(v)))[0]

    c = _choose(Fraction(A), Fraction(lo), Fraction(hi), code(lo), code(hi), mode, neg, False)
    v = struct.unpack("<f", struct.pack("<I", c))[0]
    return -v if neg else v


@pytest.mark.parametrize("src", [D.DT_INT32, D.DT_INT64], ids=lambda d: d.short)
@HYP
@given(data=st.data())
def test_int_to_fp32_all_modes(src, data):
    ii = np.iinfo(src.np_dtype)
    n = data.draw(st.integers(int(ii.min), int(ii.max)) |
                  st.builds(lambda m, s: (2 * m + 1) << (s - 1),  # exact midpoints
                            st.integers(2**23, 2**24 - 1), st.integers(1, 39)) |
                  st.sampled_from([2**53 + 1, 2**63 - 1, -(2**63), 2**24 + 1, -(2**25) - 3]))
    if not ii.min <= n <= ii.max:
        n = int(ii.max)
    for mode in ROUNDING:
        eff = M.CAST_RINT if mode is M.CAST_ODD else mode
        got = cast_array(np.array([n], src.np_dtype), src, D.DT_FP32, mode)
        assert got.dtype == np.float32
        assert float(got[0]) == _fp32_ref(n, eff), (n, mode)


@pytest.mark.parametrize("src,dst", [(D.DT_INT32, D.DT_INT8), (D.DT_INT32, D.DT_INT16),
                                     (D.DT_INT64, D.DT_INT32), (D.DT_INT8, D.DT_UINT8),
                                     (D.DT_UINT8, D.DT_INT8), (D.DT_INT16, D.DT_UINT8),
                                     (D.DT_INT64, D.DT_UINT8), (D.DT_INT8, D.DT_INT64),
                                     (D.DT_UINT8, D.DT_INT16)], ids=lambda d: d.short)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_int_to_int(src, dst, data):
    ii = np.iinfo(src.np_dtype)
    xs = data.draw(st.lists(st.integers(int(ii.min), int(ii.max)), min_size=1, max_size=16))
    xs += [int(ii.min), int(ii.max), 0]
    check_int(xs, src, dst, modes=[M.CAST_NONE])
    assert cast_array(np.array([300, -129], np.int32), D.DT_INT32, D.DT_INT8).tolist() == [44, 127]


# --------------------------------------------------------------------------- misc behaviour


def test_resolve_mode_defaults_and_fallbacks():
    assert resolve_mode(D.DT_FP32, D.DT_INT8, M.CAST_NONE) is M.CAST_TRUNC
    assert resolve_mode(D.DT_FP32, D.DT_BF16, M.CAST_NONE) is M.CAST_RINT
    assert resolve_mode(D.DT_INT32, D.DT_FP16, M.CAST_NONE) is M.CAST_RINT
    assert resolve_mode(D.DT_FP32, D.DT_FP16, M.CAST_ODD) is M.CAST_ODD
    assert resolve_mode(D.DT_FP32, D.DT_BF16, M.CAST_ODD) is M.CAST_RINT
    assert resolve_mode(D.DT_FP16, D.DT_INT8, M.CAST_ODD) is M.CAST_TRUNC
    assert resolve_mode(D.DT_BF16, D.DT_FP32, M.CAST_FLOOR) is M.CAST_RINT  # widening
    assert resolve_mode(D.DT_FP32, D.DT_BF16, M.CAST_FLOOR) is M.CAST_FLOOR
    assert [m.value for m in CastMode] == list(range(7))
    assert SaturationMode.OFF.value == 1 and SaturationMode.ON.value == 0  # PyPTO 0.2.0 codes


def test_cast_none_and_odd_fallback_results():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(5000) * 100).astype(np.float32)
    for dst in (D.DT_BF16, D.DT_FP8E4M3, D.DT_FP8E5M2, D.DT_FP8E8M0):
        rint = cast_array(np.abs(x), D.DT_FP32, dst, M.CAST_RINT).view(UINT[dst.nbytes])
        for mode in (M.CAST_NONE, M.CAST_ODD):
            assert np.array_equal(cast_array(np.abs(x), D.DT_FP32, dst, mode).view(UINT[dst.nbytes]), rint)
    trunc = cast_array(x, D.DT_FP32, D.DT_INT16, M.CAST_TRUNC)
    assert np.array_equal(cast_array(x, D.DT_FP32, D.DT_INT16), trunc)
    assert np.array_equal(cast_array(x, D.DT_FP32, D.DT_INT16, M.CAST_ODD), trunc)
    # ODD does act on FP32 -> FP16: 1 + 2^-12 is between 1 and 1 + 2^-10; the odd one is the upper
    assert cast_array(np.array([1 + 2.0**-12], np.float32), D.DT_FP32, D.DT_FP16, M.CAST_ODD)[0] == 1 + 2.0**-10


def test_nan_handling():
    x = np.array([np.nan, -np.nan], np.float32)
    for dst in FP32_TARGETS:
        for mode in ROUNDING:
            for sat in SAT:
                assert np.isnan(cast_array(x, D.DT_FP32, dst, mode, sat).astype(np.float32)).all()
    for dst in INT_TARGETS:
        for sat in SAT:
            assert cast_array(x, D.DT_FP32, dst, satmode=sat).tolist() == [0, 0]


def test_same_dtype_copy_bool_and_errors():
    x = np.array([1.5, -2.0], np.float32)
    y = cast_array(x, D.DT_FP32, D.DT_FP32)
    assert y is not x and np.array_equal(x, y)
    assert cast_array(np.array([0, 3, -1], np.int32), D.DT_INT32, D.DT_BOOL).tolist() == [False, True, True]
    assert cast_array(np.array([True, False]), D.DT_BOOL, D.DT_INT8).tolist() == [1, 0]
    for a, b in [(D.DT_FP32, D.DT_BOOL), (D.DT_BOOL, D.DT_FP16)]:
        with pytest.raises(DTypeError) as ei:
            cast_array(np.zeros(2, a.np_dtype), a, b)
        assert ei.value.code == "cast-unsupported"


@pytest.mark.parametrize("dt", [D.DT_BF16, D.DT_FP16, D.DT_FP8E4M3, D.DT_FP8E5M2, D.DT_FP8E8M0],
                         ids=lambda d: d.short)
def test_widening_to_fp32_exact_all_patterns(dt):
    pats = np.arange(1 << (8 * dt.nbytes), dtype=np.uint64).astype(UINT[dt.nbytes])
    x = pats.view(dt.np_dtype)
    want = x.astype(np.float32)
    for got in (to_float32(x, dt), cast_array(x, dt, D.DT_FP32, M.CAST_FLOOR)):
        assert got.dtype == np.float32
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all()
    f = FMTS[dt]
    for v, c in list(f.code.items())[:: max(1, len(f.code) // 500)]:
        assert Fraction(float(to_float32(pats[c : c + 1].view(dt.np_dtype), dt)[0])) == v
    assert to_float32(np.array([-7, 100], np.int8), D.DT_INT8).tolist() == [-7.0, 100.0]
