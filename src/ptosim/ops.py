"""Vector ops: elementwise, reductions, cast, full/zeros (data movement is in movement.py).

Numerics: each op runs over all of its tiles in one NumPy call. Floating-point ops are
computed in FP32 (BF16/FP16/FP8 operands widen exactly) and rounded once, ties-to-even, to the
result dtype; integer ops are computed in int64 and wrap to the result width like the hardware.
sqrt and div use NumPy's FP32 functions (IEEE, correctly rounded); exp and rsqrt are evaluated in
float64 and rounded once to FP32, since NumPy's FP32 exp is off by up to 1.4 ulp and depends on the
CPU's SIMD path, and 1/sqrt in FP32 rounds twice (the hardware's approximations are not published).
Every op checks the platform's dtype rules and the vec tile in force, then records itself.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Sequence

import numpy as np

from .cast import CastMode, SaturationMode, cast_array, is_exact, to_float32
from .dtypes import DataType, dtype_from_name
from .errors import DTypeError, ShapeError
from .machine import Machine, current_machine
from .operands import check_dtype, new_tile, require_tensor, static_shape, valid_arg, valid_of
from .platform import OpKind
from .symbolic import SymbolicScalar
from .tensor import Tensor
from .tiles import check_vec_op
from .vocabulary import ops_of

__all__ = list(ops_of(module="ops"))  # the table names what this module defines

_FP32 = DataType.DT_FP32


# --- helpers ---------------------------------------------------------------------------------


def compute_view(t: Tensor) -> np.ndarray:
    """The tensor's values in its compute type: float32 for floats, int64 for integers."""
    if t.dtype.is_float:
        return to_float32(t.data, t.dtype)
    return t.data.astype(np.int64, copy=False)


def store(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """Round FP32 results to ``dtype`` (RNE) or wrap int64 results to the integer width."""
    if dtype.is_float:
        if dtype == _FP32:
            return values.astype(np.float32, copy=False)
        return cast_array(values.astype(np.float32, copy=False), _FP32, dtype, CastMode.CAST_RINT)
    return values.astype(dtype.np_dtype)  # two's-complement wrap, as the hardware's int ALU


def broadcast_valid(out_shape: Sequence[int], tensors: Sequence[Tensor]) -> tuple[int, ...] | None:
    """Valid extent of an elementwise result: the smallest valid extent of the full-size operands."""
    if all(t.valid is None for t in tensors):
        return None
    valid = []
    for axis, n in enumerate(out_shape):
        extents = [valid_of(t)[axis] for t in tensors if t.dims[axis] == n]
        valid.append(min(extents) if extents else n)
    out = tuple(valid)
    return None if out == tuple(out_shape) else out


def _record(machine: Machine, op: str, inputs: Sequence[Tensor], out: Tensor | None, tile, flops: int, **attrs):
    machine.emit(op, "V", [t.ref() for t in inputs], out.ref() if out is not None else None, tile=tile, flops=flops, **attrs)


# --- elementwise -----------------------------------------------------------------------------


def _binary(op: str, input: Any, other: Any, fn: Callable[[np.ndarray, Any], np.ndarray]) -> Tensor:
    machine = current_machine(op)
    a = require_tensor(input, op)
    check_dtype(machine, op, a.dtype)
    if isinstance(other, Tensor):
        if other.dtype != a.dtype:
            machine.fail(
                DTypeError,
                f"operands are {a.dtype.short} and {other.dtype.short}; both must have the same dtype",
                code="dtype-unsupported",
                op=op,
                hint="cast one operand explicitly (C-API-02)",
            )
        if other.dim != a.dim:
            machine.fail(
                ShapeError,
                f"operand ranks differ: {list(a.dims)} vs {list(other.dims)}",
                code="rank-mismatch",
                op=op,
                constraint="C-API-06",
                hint="reshape to the same rank first",
            )
        try:
            out_shape = np.broadcast_shapes(a.dims, other.dims)
        except ValueError:
            machine.fail(
                ShapeError,
                f"shapes {list(a.dims)} and {list(other.dims)} do not broadcast",
                code="shape-mismatch",
                op=op,
                constraint="C-API-06",
            )
        kind: OpKind = "binary" if a.dims == other.dims else "broadcast"
        tile = check_vec_op(machine, op, kind, out_shape, [a.dtype])
        values = fn(compute_view(a), compute_view(other))
        out = new_tile(machine, store(values, a.dtype), a.dtype, broadcast_valid(out_shape, [a, other]))
        _record(machine, op, [a, other], out, tile, int(np.prod(out_shape)))
        return out
    if isinstance(other, SymbolicScalar) or isinstance(other, bool) or not isinstance(other, (int, float, np.number)):
        raise ShapeError(
            f"second operand must be a Tensor or a Python number, got {other!r}", code="argument", op=op
        )
    if a.dtype.is_int and isinstance(other, float) and op == "div":
        machine.fail(DTypeError, "an integer tensor divided by a float scalar", op=op)
    tile = check_vec_op(machine, op, "unary", a.dims, [a.dtype])
    scalar = np.float32(other) if a.dtype.is_float else np.int64(other)
    out = new_tile(machine, store(fn(compute_view(a), scalar), a.dtype), a.dtype, a.valid)
    _record(machine, op, [a], out, tile, a.size, scalar=float(other))
    return out


def _int_div(x: np.ndarray, y: Any) -> np.ndarray:
    # Integer division is computed in FP32 on the hardware (exact only within +-2^24).
    return np.trunc(np.asarray(x, np.float32) / np.asarray(y, np.float32)).astype(np.int64)


def add(input: Tensor, other: Tensor | float | int) -> Tensor:
    return _binary("add", input, other, np.add)


def sub(input: Tensor, other: Tensor | float | int) -> Tensor:
    return _binary("sub", input, other, np.subtract)


def mul(input: Tensor, other: Tensor | float | int) -> Tensor:
    return _binary("mul", input, other, np.multiply)


def div(input: Tensor, other: Tensor | float | int, precision_type: Any = None) -> Tensor:
    fn = _int_div if isinstance(input, Tensor) and input.dtype.is_int else np.divide
    with np.errstate(divide="ignore", invalid="ignore"):
        return _binary("div", input, other, fn)


def maximum(input: Tensor, other: Tensor | float | int) -> Tensor:
    """Elementwise max (NumPy's: a NaN operand gives NaN)."""
    return _binary("maximum", input, other, np.maximum)


def minimum(input: Tensor, other: Tensor | float | int) -> Tensor:
    return _binary("minimum", input, other, np.minimum)


def _unary(op: str, input: Any, fn: Callable[[np.ndarray], np.ndarray]) -> Tensor:
    machine = current_machine(op)
    a = require_tensor(input, op, "input")
    check_dtype(machine, op, a.dtype)
    tile = check_vec_op(machine, op, "unary", a.dims, [a.dtype])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        values = fn(compute_view(a))
    out = new_tile(machine, store(values, a.dtype), a.dtype, a.valid)
    _record(machine, op, [a], out, tile, a.size)
    return out


def abs(input: Tensor) -> Tensor:  # noqa: A001 - PyPTO name
    return _unary("abs", input, np.abs)


def neg(input: Tensor) -> Tensor:
    return _unary("neg", input, np.negative)


def _via_float64(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """``fn`` evaluated in float64 and rounded once to FP32: reproducible on every CPU."""
    return lambda x: fn(x.astype(np.float64)).astype(np.float32)


def exp(input: Tensor, precision_type: Any = None) -> Tensor:
    return _unary("exp", input, _via_float64(np.exp))


def _sigmoid_fp32(x: np.ndarray) -> np.ndarray:
    # PyPTO's own steps, each rounded to FP32: MULS(-1), EXP, ADDS(1), DIV(VEC_DUP(1), .)
    e = _via_float64(np.exp)(np.negative(x, dtype=np.float32))
    return np.float32(1.0) / (e + np.float32(1.0))


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-x)), elementwise.

    Measured on PyPTO 0.2.0 (verify and SIM, [8, 64] tiles): it lowers to MULS(-1), EXP, ADDS(1),
    VEC_DUP(1), DIV in FP32 (a BF16/FP16 input is CAST to FP32 first and the result CAST back),
    and its CPU verify output equals torch's FP32 ``1 / (1 + exp(-x))`` bit for bit. Its docstring
    names DT_FP32 only, yet FP16 and BF16 compile and verify. ptosim takes the same steps with
    the exp rounded once from float64 (as ``exp``), so it can differ from the verify path by an
    ulp where torch's FP32 exp is not correctly rounded.
    """
    return _unary("sigmoid", input, _sigmoid_fp32)


def sqrt(input: Tensor, precision_type: Any = None) -> Tensor:
    return _unary("sqrt", input, np.sqrt)


def rsqrt(input: Tensor, precision_type: Any = None) -> Tensor:
    return _unary("rsqrt", input, _via_float64(lambda x: 1.0 / np.sqrt(x)))


# --- reductions ------------------------------------------------------------------------------


def _reduce(op: str, input: Any, dim: int, keepdim: bool, fn: Callable[..., np.ndarray]) -> Tensor:
    machine = current_machine(op)
    a = require_tensor(input, op, "input")
    if isinstance(dim, SymbolicScalar) or isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise ShapeError(f"dim must be an int, got {dim!r}", code="argument", op=op)
    if not -a.dim <= dim < a.dim:
        machine.fail(ShapeError, f"dim {dim} out of range for rank {a.dim}", code="argument", op=op)
    axis = dim % a.dim
    check_dtype(machine, op, a.dtype)
    tile = check_vec_op(machine, op, "reduce", a.dims, [a.dtype], tile_shape=a.dims)
    values = compute_view(a)
    if a.valid is not None and a.valid[axis] < a.dims[axis]:
        # Padding past the valid extent takes no part in the reduction.
        values = values[(slice(None),) * axis + (slice(0, a.valid[axis]),)]
    if values.shape[axis] == 0 and op == "amax":  # a max of nothing has no value; sum of nothing is 0
        machine.fail(
            ShapeError,
            f"amax over dim {dim} of {list(a.dims)} whose valid extent is 0",
            code="valid-shape", op=op, hint="reduce only a view with at least one valid element",
        )
    result = fn(values, axis=axis, keepdims=True)
    valid = None
    if a.valid is not None:
        valid = list(a.valid)
        valid[axis] = 1
    out_data = store(result, a.dtype)
    if not keepdim:
        out_data = np.squeeze(out_data, axis=axis)
        if valid is not None:
            del valid[axis]
    out = new_tile(machine, out_data, a.dtype, tuple(valid) if valid is not None else None)
    _record(machine, op, [a], out, tile, a.size, dim=axis)
    return out


def sum(input: Tensor, dim: int, keepdim: bool = False) -> Tensor:  # noqa: A001 - PyPTO name
    return _reduce("sum", input, dim, keepdim, np.sum)


def amax(input: Tensor, dim: int, keepdim: bool = False) -> Tensor:
    return _reduce("amax", input, dim, keepdim, np.max)


# --- cast --------------------------------------------------------------------------------------


def _lossless(src: DataType, dst: DataType) -> bool:
    """True when every value of ``src`` survives the conversion to ``dst``."""
    if src.is_int and dst.is_int:
        si, di = np.iinfo(src.np_dtype), np.iinfo(dst.np_dtype)
        return di.min <= si.min and si.max <= di.max
    return is_exact(src, dst)


def cast_route(machine: Machine, src: DataType, dst: DataType) -> list[DataType] | None:
    """The chain of direct conversions src -> ... -> dst on the platform that loses the least
    (fewest lossy steps, then fewest steps), e.g. BF16 -> FP32 -> FP16 rather than via INT32."""
    casts = machine.profile.casts
    best: dict[DataType, tuple[int, int]] = {src: (0, 0)}
    heap: list[tuple[int, int, int, list[DataType]]] = [(0, 0, src.value, [src])]
    while heap:
        lossy, steps, _, path = heapq.heappop(heap)
        cur = path[-1]
        if cur == dst:
            return path
        if best.get(cur, (lossy, steps)) < (lossy, steps):
            continue
        for nxt in casts.get(cur, ()):
            if nxt == cur or nxt in path:
                continue
            cost = (lossy + (not _lossless(cur, nxt)), steps + 1)
            if cost < best.get(nxt, (1 << 30, 0)):
                best[nxt] = cost
                heapq.heappush(heap, (*cost, nxt.value, path + [nxt]))
    return None


def cast(
    input: Tensor,
    dtype: DataType | str,
    mode: CastMode = CastMode.CAST_NONE,
    satmode: SaturationMode = SaturationMode.OFF,
) -> Tensor:
    op = "cast"
    machine = current_machine(op)
    a = require_tensor(input, op, "input")
    dst = dtype_from_name(dtype)
    if not isinstance(mode, CastMode) or not isinstance(satmode, SaturationMode):
        raise DTypeError(f"mode/satmode must be CastMode/SaturationMode, got {mode!r}/{satmode!r}", code="argument", op=op)
    profile = machine.profile
    for dt in (a.dtype, dst):
        if not profile.supports_dtype(dt):
            machine.fail(DTypeError, f"{dt.short} is not supported on {profile.name}", op=op)
    if not profile.can_cast(a.dtype, dst):
        route = cast_route(machine, a.dtype, dst)
        hint = (
            "cast through " + " -> ".join(d.short for d in route)
            if route
            else f"{a.dtype.short} converts directly to: {', '.join(sorted(d.short for d in profile.casts.get(a.dtype, ())))}"
        )
        machine.fail(
            DTypeError,
            f"no direct {a.dtype.short} -> {dst.short} conversion on {profile.name}",
            code="cast-unsupported",
            op=op,
            constraint="C-API-02",
            hint=hint,
        )
    tile = check_vec_op(machine, op, "unary", a.dims, [a.dtype, dst])
    out = new_tile(machine, cast_array(a.data, a.dtype, dst, mode, satmode), dst, a.valid)
    _record(machine, op, [a], out, tile, a.size, to=dst.short, mode=mode.name, satmode=satmode.name)
    return out


# --- creation ----------------------------------------------------------------------------------


def full(shape: Sequence[int], value: float | int, dtype: DataType | str, *, valid_shape: Sequence[Any] | None = None) -> Tensor:
    op = "full"
    machine = current_machine(op)
    dims = static_shape(shape, op)
    dt = dtype_from_name(dtype)
    check_dtype(machine, op, dt)
    tile = check_vec_op(machine, op, "unary", dims, [dt])
    data = np.full(dims, value, dtype=np.float32 if dt.is_float else np.int64)
    valid = valid_arg(valid_shape, dims, op, machine)
    out = new_tile(machine, store(data, dt), dt, valid)
    _record(machine, op, [], out, tile, int(np.prod(dims)), value=float(value))
    return out


def zeros(
    *size: int | Sequence[int],
    dtype: DataType | str = DataType.DT_FP32,
    valid_shape: Sequence[Any] | None = None,
) -> Tensor:
    """``zeros([4, 128], dtype=...)`` or ``zeros(4, 128, dtype=...)`` as in PyPTO 0.2.0."""
    shape = list(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else list(size)
    return full(shape, 0, dtype, valid_shape=valid_shape)
