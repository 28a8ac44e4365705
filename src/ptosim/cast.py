"""Bit-exact numerics of ``pypto.cast``: every ``CastMode`` and ``SaturationMode``.

Pure numerics: which src->dst pairs a platform offers is checked elsewhere (the platform's cast
matrix); here only pairs that make no sense at all (a float to or from BOOL) are refused.

Strategy (vectorised, no per-element Python): the round-to-nearest-even result comes from
numpy/ml_dtypes (correctly rounded from float32 and float64). For the other modes the exact input
is held in float64 (it holds every FP32/FP16/BF16/FP8 value, every int up to 2^53 and every
midpoint between neighbouring target values exactly), inexact elements are detected by
converting back, and the two neighbours are found by +-1 on the target's integer view (IEEE
encodings are monotone in magnitude). A per-mode ``np.where`` picks one.

Semantic choices (documented in the module's tests too):
- FP8E8M0 (unsigned power-of-two scale, no zero, no inf, NaN = 0xFF): inputs <= 0, -0.0, NaN and
  +-inf give NaN in every mode (as ml_dtypes). Inputs below the smallest scale 2^-127 give 2^-127 in
  every mode (there is nothing below it). RINT is what ml_dtypes does: nearest in linear value,
  and the tie 1.5*2^e rounds UP to 2^(e+1) whatever the exponent's parity, so RINT == ROUND on
  E8M0. FLOOR/TRUNC pick 2^floor(log2 x), CEIL 2^ceil(log2 x).
- SaturationMode.ON on a narrowing float target clamps finite overflow and +-inf to +-max finite
  (the same result as clipping before converting, which ml_dtypes does not do on its own); NaN
  stays NaN. Exact (widening) conversions keep +-inf.
- SaturationMode.OFF: RINT/ROUND overflow gives +-inf, or NaN on formats without inf (E4M3FN,
  E8M0); directed modes follow IEEE (TRUNC/ODD -> max finite, FLOOR of a large positive -> max).
- float -> int: NaN -> 0; +-inf clamp to the int range in both saturation modes; finite values
  wrap modulo 2^bits when OFF (300.0 -> INT8 gives 44, -129.0 -> 127) and clamp when ON.
"""

from __future__ import annotations

import enum
from functools import lru_cache

import numpy as np

from .dtypes import DataType
from .errors import DTypeError
from .vocabulary import CAST_MODES

__all__ = ["CastMode", "SaturationMode", "cast_array", "resolve_mode", "to_float32", "is_exact"]


#: Rounding mode of ``pypto.cast``: ``CAST_<mode>`` for each of ``vocabulary.CAST_MODES``, valued by
#: PyPTO 0.2.0's enum codes (their order)
CastMode = enum.Enum("CastMode", [(f"CAST_{m}", i) for i, m in enumerate(CAST_MODES)], module=__name__, qualname="CastMode")


class SaturationMode(enum.Enum):
    # PyPTO 0.2.0's codes: ON = 0, OFF = 1.
    ON = 0
    OFF = 1


_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32}
_E8M0 = DataType.DT_FP8E8M0


# --------------------------------------------------------------------------- mode resolution


@lru_cache(maxsize=None)
def _float_fmt(dt: DataType) -> tuple[int, float, float, bool]:
    """(mantissa bits, max finite, smallest positive value, signed) of a float format."""
    import ml_dtypes  # loaded with the dtype table, on the first cast (see dtypes._load_table)

    fi = ml_dtypes.finfo(dt.np_dtype)
    return int(fi.nmant), float(fi.max), float(fi.smallest_subnormal), dt is not _E8M0


@lru_cache(maxsize=None)
def _is_exact(src: DataType, dst: DataType) -> bool:
    """True when every finite src value is representable in dst, so no rounding can happen."""
    if src == dst:
        return True
    if src.is_float and dst.is_float:
        sm, smax, smin, ssigned = _float_fmt(src)
        dm, dmax, dmin, dsigned = _float_fmt(dst)
        return sm <= dm and smax <= dmax and smin >= dmin and (dsigned or not ssigned)
    if src.is_int and dst.is_float:
        ii = np.iinfo(src.np_dtype)
        dm, dmax, _, dsigned = _float_fmt(dst)
        span = max(abs(int(ii.min)), int(ii.max))
        return span <= min(2 ** (dm + 1), dmax) and (dsigned or ii.min == 0)
    return False  # int -> int and float -> int go through their own paths


def _default_mode(src: DataType, dst: DataType) -> CastMode:
    return CastMode.CAST_TRUNC if (src.is_float and dst.is_int) else CastMode.CAST_RINT


def resolve_mode(src: DataType, dst: DataType, mode: CastMode) -> CastMode:
    """The mode actually applied. CAST_NONE -> TRUNC for float->int, RINT otherwise; CAST_ODD is
    only meaningful FP32->FP16 and silently falls back to the default elsewhere (as PyPTO);
    exact (widening) and int->int conversions ignore the mode (reported as the default)."""
    default = _default_mode(src, dst)
    if mode is CastMode.CAST_NONE or _is_exact(src, dst) or (src.is_int and dst.is_int):
        return default
    if src == DataType.DT_BOOL or dst == DataType.DT_BOOL:
        return default
    if mode is CastMode.CAST_ODD and not (src == DataType.DT_FP32 and dst == DataType.DT_FP16):
        return default
    return mode


def is_exact(src: DataType, dst: DataType) -> bool:
    """True when every finite ``src`` value converts to ``dst`` without rounding (float or
    int -> float); int/float -> int conversions are never reported exact here."""
    return _is_exact(src, dst)


# --------------------------------------------------------------------------- float targets


def _round_directed(xd: np.ndarray, dst: DataType, mode: CastMode) -> np.ndarray:
    """Round the float64 array ``xd`` (exact input) to ``dst`` in a non-RNE ``mode``."""
    dt = dst.np_dtype
    ut = _UINT_OF_SIZE[dt.itemsize]
    with np.errstate(all="ignore"):
        rne = xd.astype(dt)
        bits = rne.view(ut)
        back = rne.astype(np.float64)
        inexact = np.isfinite(xd) & (back != xd)
        if dst is _E8M0:
            inexact &= xd > 0  # <= 0 is NaN in every mode
        if not inexact.any():
            return rne
        _, fmax, fmin, signed = _float_fmt(dst)
        neg = xd < 0
        sign = (neg.astype(ut) << (8 * dt.itemsize - 1)) if signed else np.zeros_like(bits)
        max_bits = ut(np.array(fmax, dt).view(ut))
        # t: neighbour toward zero; a: neighbour away from zero (bits + 1; past max finite this is
        # inf, or NaN on E4M3FN/E8M0, which is the IEEE overflow result of a directed mode).
        t = np.where(np.abs(back) > np.abs(xd), bits - ut(1), bits)
        t = np.where(np.abs(xd) > fmax, sign | max_bits, t)
        a = t + ut(1)
        if dst is _E8M0:  # nothing below 2^-127: both neighbours are the minimum
            under = xd < fmin
            t = np.where(under, ut(0), t)
            a = np.where(under, ut(0), a)
        if mode is CastMode.CAST_TRUNC:
            pick = t
        elif mode is CastMode.CAST_FLOOR:
            pick = np.where(neg, a, t)
        elif mode is CastMode.CAST_CEIL:
            pick = np.where(neg, t, a)
        elif mode is CastMode.CAST_ODD:
            pick = np.where((t & ut(1)) == 1, t, a)  # adjacent encodings: exactly one is odd
        elif mode is CastMode.CAST_ROUND:
            tv = t.view(dt).astype(np.float64)
            av = a.view(dt).astype(np.float64)
            # past max finite the away neighbour is the virtual next value max + ulp(max), so that
            # ROUND of the midpoint (e.g. 464 on E4M3FN) overflows like RNE's ties do
            nmant = _float_fmt(dst)[0]
            vnext = fmax + 2.0 ** (np.floor(np.log2(fmax)) - nmant)
            av = np.where(np.isfinite(av), av, np.where(neg, -vnext, vnext))
            tie = 2.0 * xd == tv + av  # exact in float64
            pick = np.where(tie, a, bits)
        else:  # pragma: no cover - RINT never reaches here
            raise AssertionError(mode)
        return np.where(inexact, pick, bits).view(dt)


def _saturate_float(out: np.ndarray, xd: np.ndarray, dst: DataType) -> np.ndarray:
    """Clamp overflowed results (and +-inf inputs) to +-max finite; NaN inputs stay NaN.
    Equivalent to clipping before converting, for every rounding mode."""
    fmax = dst.info.max_finite
    with np.errstate(all="ignore"):
        over = ~np.isnan(xd) & ~np.isfinite(out.astype(np.float32))
        if dst is _E8M0:
            over &= xd > 0
        if not over.any():
            return out
        clamped = np.where(xd < 0, -fmax, fmax).astype(dst.np_dtype)
        return np.where(over, clamped, out)


def _to_float(x: np.ndarray, xd: np.ndarray | None, exact: bool, dst: DataType, mode: CastMode,
              sat: bool) -> np.ndarray:
    """x: source array (already float64 for int sources); xd: its exact float64 value or None."""
    dt = dst.np_dtype
    with np.errstate(all="ignore"):
        if exact or mode is CastMode.CAST_RINT:
            out = x.astype(dt)  # numpy / ml_dtypes: correctly rounded RNE
        else:
            xd = x.astype(np.float64) if xd is None else xd
            out = _round_directed(xd, dst, mode)
    if sat and not exact:
        out = _saturate_float(out, x if xd is None else xd, dst)
    return out


def _int64_to_f64_odd(x: np.ndarray) -> np.ndarray:
    """INT64 -> float64 rounded to odd: exact up to 2^53, else the top bits with a sticky LSB.
    Rounding that value once more to <= 24 bits (any mode) equals rounding the integer itself."""
    big = (x > 2**53) | (x < -(2**53))
    if not big.any():
        return x.astype(np.float64)
    u = x.view(np.uint64)
    mag = np.where(x < 0, ~u + np.uint64(1), u)  # |x| as uint64 (handles -2^63)
    sticky = (mag & np.uint64(0x7FF)) != 0
    red = ((mag >> np.uint64(11)) | sticky.astype(np.uint64)).astype(np.float64) * 2.0**11
    red = np.where(x < 0, -red, red)
    return np.where(big, red, x.astype(np.float64))


# --------------------------------------------------------------------------- int targets


def _round_to_integral(xd: np.ndarray, mode: CastMode) -> np.ndarray:
    if mode is CastMode.CAST_TRUNC:
        return np.trunc(xd)
    if mode is CastMode.CAST_FLOOR:
        return np.floor(xd)
    if mode is CastMode.CAST_CEIL:
        return np.ceil(xd)
    if mode is CastMode.CAST_RINT:
        return np.rint(xd)  # ties to even
    # ROUND: ties away from zero; trunc and the fraction are exact, unlike floor(x + 0.5)
    tr = np.trunc(xd)
    return tr + np.where(np.abs(xd - tr) >= 0.5, np.sign(xd), 0.0)


def _float_to_int(x: np.ndarray, src: DataType, dst: DataType, mode: CastMode,
                  sat: bool) -> np.ndarray:
    ii = np.iinfo(dst.np_dtype)
    # float32 is enough and twice as fast as float64: it holds every FP32/FP16/BF16/FP8 value,
    # the int bounds (powers of two) and every step below exactly (fmod is exact, Sterbenz).
    lo, hi_excl = np.float32(ii.min), np.float32(float(ii.max) + 1.0)
    with np.errstate(all="ignore"):
        r = _round_to_integral(to_float32(x, src), mode)
        nan = np.isnan(r)
        over, under = r >= hi_excl, r < lo  # NaN compares False
        if sat:
            w = r
        else:  # wrap modulo 2^bits like the hardware; only +-inf clamp
            m = np.float32(2.0 ** (8 * dst.np_dtype.itemsize))
            w = np.fmod(r, m)  # in (-m, m)
            w = np.where(w >= hi_excl, w - m, w)
            w = np.where(w < lo, w + m, w)
            inf = np.isinf(r)
            over &= inf
            under &= inf
        special = over | under | nan
        has_special = bool(special.any())
        if has_special:
            w = np.where(special, np.float32(0), w)
        out = w.astype(dst.np_dtype)
        if has_special:
            out[over] = ii.max
            out[under] = ii.min
    return out


def _int_to_int(x: np.ndarray, src: DataType, dst: DataType, sat: bool) -> np.ndarray:
    if sat:
        si, di = np.iinfo(src.np_dtype), np.iinfo(dst.np_dtype)
        if si.min < di.min or si.max > di.max:
            # clip in the source type with bounds that fit it (no overflow in the bounds)
            x = np.clip(x, max(int(si.min), int(di.min)), min(int(si.max), int(di.max)))
    return x.astype(dst.np_dtype)  # numpy integer casts wrap modulo 2^bits


# --------------------------------------------------------------------------- public API


def cast_array(
    x: np.ndarray,
    src: DataType,
    dst: DataType,
    mode: CastMode = CastMode.CAST_NONE,
    satmode: SaturationMode = SaturationMode.OFF,
) -> np.ndarray:
    """Cast ``x`` (stored as ``src``) to a new array of ``dst.np_dtype``, bit-exactly.

    ``x`` of another dtype is first stored as ``src``. Raises DTypeError ("cast-unsupported") for
    a float to or from BOOL."""
    x = np.asarray(x)
    if x.dtype != src.np_dtype:
        x = x.astype(src.np_dtype)
    boolean = DataType.DT_BOOL
    if (src == boolean and dst.is_float) or (dst == boolean and src.is_float):
        raise DTypeError(
            f"cast {src.short} -> {dst.short} is not a conversion (BOOL only to/from ints)",
            code="cast-unsupported", op="cast",
        )
    if src == dst:
        return x.copy()
    if dst == boolean:
        return x != 0
    if src == boolean:
        return x.astype(dst.np_dtype)
    mode = resolve_mode(src, dst, mode)
    sat = satmode is SaturationMode.ON
    if src.is_int and dst.is_int:
        return _int_to_int(x, src, dst, sat)
    if src.is_float and dst.is_int:
        return _float_to_int(x, src, dst, mode, sat)
    exact = _is_exact(src, dst)
    if src.is_float:
        if exact and dst == DataType.DT_FP32:
            return to_float32(x, src)
        xd = None
    else:  # int -> float: float64 holds the value exactly (INT64: rounded to odd, see above)
        xd = _int64_to_f64_odd(x) if src == DataType.DT_INT64 else x.astype(np.float64)
        x = xd
    return _to_float(x, xd, exact, dst, mode, sat)


_LUT8: dict[DataType, np.ndarray] = {}


def to_float32(x: np.ndarray, src: DataType) -> np.ndarray:
    """Fastest widening to float32 for the simulator's hot paths.

    Exact for BF16, FP16, FP8 and INT8/INT16/UINT8/BOOL; INT32/INT64 round to nearest-even beyond
    2^24. FP32 input is returned as is (no copy)."""
    x = np.asarray(x)
    if src == DataType.DT_FP32:
        return x if x.dtype == np.float32 else x.astype(np.float32)
    if src == DataType.DT_BF16:  # bf16 is the top half of an fp32: shift the bits, exact
        return np.asarray(np.left_shift(x.view(np.uint16), 16, dtype=np.uint32)).view(np.float32)
    if src.is_float and src.nbytes == 1:  # 256-entry table beats ml_dtypes' scalar loop
        lut = _LUT8.get(src)
        if lut is None:
            lut = np.arange(256, dtype=np.uint8).view(src.np_dtype).astype(np.float32)
            _LUT8[src] = lut
        return np.asarray(lut[x.view(np.uint8)])
    return x.astype(np.float32)
