"""Comparisons and selection by mask, for an MoE router (issue #32): ``gt``, ``ge``, ``eq``,
``ne``, ``lt``, ``le`` (BOOL masks) and ``where`` (pick by mask).

Numerics: a comparison is exact (floats widen exactly to FP32, integers to int64; IEEE rules:
NaN compares unequal to everything, -0.0 == 0.0); ``where`` moves values, bit for bit.

Measured on PyPTO 0.2.0's CPU verify ([8, 64] tiles); every case equalled torch exactly:

* gt/ge/eq/ne/lt/le take FP32, FP16, BF16, INT32, INT16 and INT8 tensors and return BOOL; a NaN
  operand gives False (ne: True); -0.0 == 0.0. SIM lowers a tensor pair to one ``CMP``.
* ``other`` may be a tensor of another dtype (FP32 vs BF16 compared as torch promotes: by value),
  a broadcastable tensor ([8, 64] vs [8, 1]), or a Python float. The float becomes
  ``Element(input.dtype, other)``: it is rounded to the input's dtype (BF16 ``x > 0.1`` is
  ``x > bf16(0.1)``, 512 of 512 straddling values) and truncated toward zero for integer inputs
  (``Element(DT_INT32, -1.5)`` holds -1). A Python int is refused ("Compare(): incompatible
  function arguments"): write ``0.0``, not ``0``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .cast import to_float32
from .dtypes import DataType
from .errors import DTypeError, ShapeError
from .machine import Machine, current_machine
from .operands import check_dtype, new_tile, require_tensor
from .ops import broadcast_valid, compute_view, store
from .platform import OpKind
from .symbolic import SymbolicScalar
from .tensor import Tensor
from .tiles import check_vec_op
from .vocabulary import ops_of

__all__ = list(ops_of(module="comparison"))  # the table names what this module defines

_BOOL = DataType.DT_BOOL


def broadcast_operands(machine: Machine, op: str, tensors: Sequence[Tensor]) -> tuple[tuple[int, ...], OpKind]:
    """The broadcast shape of same-rank ``tensors`` and the UB rule's kind for it."""
    first = tensors[0]
    for t in tensors[1:]:
        if t.dim != first.dim:
            machine.fail(ShapeError, f"operand ranks differ: {list(first.dims)} vs {list(t.dims)}",
                         code="rank-mismatch", op=op, constraint="C-API-06", hint="reshape to the same rank first")
    try:
        shape = tuple(np.broadcast_shapes(*(t.dims for t in tensors)))
    except ValueError:
        machine.fail(ShapeError, f"shapes {[list(t.dims) for t in tensors]} do not broadcast",
                     code="shape-mismatch", op=op, constraint="C-API-06")
    return shape, ("binary" if all(t.dims == shape for t in tensors) else "broadcast")


def element(value: float, dtype: DataType) -> np.ndarray:
    """PyPTO's ``Element(dtype, value)`` in ``dtype``'s compute type: a float rounded (RNE) to FP32
    and then to ``dtype`` (as torch's scalar conversion), an integer dtype's value truncated toward 0."""
    if dtype.is_float:
        return to_float32(store(np.asarray([value], np.float32), dtype), dtype)[0]
    return np.asarray(int(np.trunc(value)), np.int64)


def _compare(op: str, input: Any, other: Any, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Tensor:
    machine = current_machine(op)
    a = require_tensor(input, op, "input")
    check_dtype(machine, op, a.dtype)
    if isinstance(other, Tensor):
        check_dtype(machine, op, other.dtype)
        if other.dtype != a.dtype and not (a.dtype.is_float and other.dtype.is_float):
            machine.fail(DTypeError, f"operands are {a.dtype.short} and {other.dtype.short}; mixed dtypes are "
                         "compared only between floats", code="dtype-unsupported", op=op, hint="cast one operand")
        shape, kind = broadcast_operands(machine, op, [a, other])
        tile = check_vec_op(machine, op, kind, shape, [a.dtype, other.dtype])
        mask = fn(compute_view(a), compute_view(other))
        out = new_tile(machine, np.ascontiguousarray(np.broadcast_to(mask, shape)), _BOOL, broadcast_valid(shape, [a, other]))
        machine.emit(op, "V", [a.ref(), other.ref()], out.ref(), tile=tile, flops=int(np.prod(shape)))
        return out
    if not isinstance(other, float):  # PyPTO 0.2.0 wraps a float only; an int reaches Compare() and is refused
        raise ShapeError(f"other must be a Tensor or a Python float, got {other!r}", code="argument", op=op,
                         hint="write the scalar as a float (0.0, not 0): PyPTO 0.2.0 refuses an int")
    tile = check_vec_op(machine, op, "unary", a.dims, [a.dtype])
    with np.errstate(invalid="ignore"):
        mask = fn(compute_view(a), element(other, a.dtype))
    out = new_tile(machine, mask, _BOOL, a.valid)
    machine.emit(op, "V", [a.ref()], out.ref(), tile=tile, flops=a.size, scalar=float(other))
    return out


def gt(input: Tensor, other: Tensor | float) -> Tensor:
    """``input > other`` elementwise, a BOOL tensor (see the module docstring)."""
    return _compare("gt", input, other, np.greater)


def ge(input: Tensor, other: Tensor | float) -> Tensor:
    """``input >= other`` elementwise, a BOOL tensor."""
    return _compare("ge", input, other, np.greater_equal)


def eq(input: Tensor, other: Tensor | float) -> Tensor:
    """``input == other`` elementwise, a BOOL tensor."""
    return _compare("eq", input, other, np.equal)


def ne(input: Tensor, other: Tensor | float) -> Tensor:
    """``input != other`` elementwise, a BOOL tensor (True where either is NaN)."""
    return _compare("ne", input, other, np.not_equal)


def lt(input: Tensor, other: Tensor | float) -> Tensor:
    """``input < other`` elementwise, a BOOL tensor."""
    return _compare("lt", input, other, np.less)


def le(input: Tensor, other: Tensor | float) -> Tensor:
    """``input <= other`` elementwise, a BOOL tensor."""
    return _compare("le", input, other, np.less_equal)


def _where_dtype(machine: Machine, tensors: Sequence[Tensor]) -> DataType:
    """The result dtype: the tensors' own; FP32 when an FP32 tensor meets another float tensor
    (the narrower widens, exactly) or when both values are scalars."""
    dtypes = {t.dtype for t in tensors}
    if not dtypes:
        return DataType.DT_FP32
    if len(dtypes) == 1:
        return dtypes.pop()
    if DataType.DT_FP32 in dtypes and all(d.is_float for d in dtypes):
        return DataType.DT_FP32
    a, b = tensors
    machine.fail(DTypeError, f"input is {a.dtype.short} and other is {b.dtype.short}; where mixes only FP32 with "
                 "a narrower float", code="dtype-unsupported", op="where", hint="cast one of them")


def where(condition: Tensor, input: Tensor | float, other: Tensor | float) -> Tensor:
    """``input`` where ``condition`` (BOOL) holds, else ``other``; the three broadcast together.

    Measured on PyPTO 0.2.0's CPU verify ([8, 64] tiles), equal to torch.where bit for bit:
    FP32, FP16, BF16 and INT32 values; a condition of another dtype (FP32, INT8) is refused
    (FC0001); [8, 1] and [1, 64] values and an [8, 1] condition broadcast; a Python number is
    ``Element(DT_FP32, value)``, rounded to the other value's dtype (BF16 x with 0.1 gives
    bf16(0.1) = 0.10009765625, a BF16 result); two numbers give FP32; an INT32 tensor with a
    number is refused (WHERE_TS: "Expected out type to be Float but got Int"). SIM: WHERE_TT (38 cycles, [8, 64] FP32), WHERE_TS / WHERE_ST
    with a scalar, WHERE_SS for two; BF16 and FP16 values are CAST to FP32 around it.
    """
    op = "where"
    machine = current_machine(op)
    cond = require_tensor(condition, op, "condition")
    if cond.dtype != _BOOL:
        machine.fail(DTypeError, f"condition is {cond.dtype.short}; it must be BOOL", code="dtype-unsupported", op=op,
                     hint="make the mask with a comparison (gt, eq, ...)")
    for name, value in (("input", input), ("other", other)):
        if not isinstance(value, Tensor) and (isinstance(value, (bool, SymbolicScalar)) or not isinstance(value, (int, float))):
            raise ShapeError(f"{name} must be a Tensor or a Python number, got {value!r}", code="argument", op=op)
    tensors = [v for v in (input, other) if isinstance(v, Tensor)]
    dtype = _where_dtype(machine, tensors)
    if len(tensors) < 2 and not dtype.is_float:  # PyPTO 0.2.0: WHERE_TS "Expected out type to be Float but got Int"
        machine.fail(DTypeError, f"a Python number next to a {dtype.short} tensor: where with a scalar takes float values",
                     code="dtype-unsupported", op=op, hint="pass the scalar as a full() tensor of the same dtype")
    for d in {t.dtype for t in tensors} or {dtype}:
        check_dtype(machine, op, d)
    shape, kind = broadcast_operands(machine, op, [cond, *tensors])
    tile = check_vec_op(machine, op, kind, shape, [dtype])

    def stored(value: Any) -> np.ndarray:
        if isinstance(value, Tensor):
            return np.asarray(value.data) if value.dtype == dtype else store(compute_view(value), dtype)
        return store(np.asarray(element(float(value), DataType.DT_FP32), np.float64), dtype)

    picked = np.where(np.asarray(cond.data, np.bool_), stored(input), stored(other))
    out = new_tile(machine, np.ascontiguousarray(np.broadcast_to(picked, shape)), dtype,
                   broadcast_valid(shape, [cond, *tensors]))
    machine.emit(op, "V", [t.ref() for t in (cond, *tensors)], out.ref(), tile=tile, flops=int(np.prod(shape)))
    return out
