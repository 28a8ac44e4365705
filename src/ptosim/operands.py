"""Operand checks and tile results shared by the vector (ops.py), cube (cube.py) and data-movement
(movement.py) ops: tensor arguments, static shapes, ``valid_shape`` arguments, the platform's dtype
rules, and the making of a new tile result.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .dtypes import DataType
from .errors import DTypeError, ShapeError
from .machine import Machine
from .symbolic import SymbolicScalar, concrete
from .tensor import Tensor

__all__ = [
    "OP_CONSTRAINT",
    "new_tile",
    "valid_of",
    "check_dtype",
    "require_tensor",
    "static_shape",
    "valid_arg",
]

#: catalogue constraint named when an op refuses a dtype its profile does not list for it
OP_CONSTRAINT = {"sum": "C-API-01", "amax": "C-API-03", "exp": "C-API-04"}


def new_tile(
    machine: Machine,
    data: np.ndarray | None,
    dtype: DataType,
    valid: tuple[int, ...] | None,
    dims: tuple[int, ...] | None = None,
) -> Tensor:
    """A new tile result (``data=None`` with ``dims``: a deferred one, see lazy.py)."""
    uid = machine.next_uid()
    return Tensor.wrap(data, dtype, name=f"t{uid}", kind="tile", uid=uid, valid=valid, dims=dims)


def valid_of(t: Tensor) -> tuple[int, ...]:
    """The valid extent of ``t`` (its dims when it has no ``valid_shape``)."""
    return t.valid if t.valid is not None else t.dims


def check_dtype(machine: Machine, op: str, dtype: DataType, constraint: str | None = None) -> None:
    """``dtype`` must be a platform dtype and one that ``op`` accepts (the profile's ``op_dtypes``)."""
    profile = machine.profile
    if not profile.supports_dtype(dtype):
        machine.fail(
            DTypeError,
            f"{dtype.short} is not supported on {profile.name}",
            code="dtype-unsupported",
            op=op,
            hint=f"supported: {', '.join(sorted(d.short for d in profile.dtypes))}",
        )
    if not profile.op_accepts(op, dtype):
        allowed = ", ".join(sorted(d.short for d in profile.op_dtypes[op]))
        machine.fail(
            DTypeError,
            f"{op} does not take {dtype.short} inputs on {profile.name} (accepts {allowed})",
            code="dtype-unsupported",
            op=op,
            constraint=constraint or OP_CONSTRAINT.get(op),
            hint="cast to FP32 first" if DataType.DT_FP32 in profile.op_dtypes[op] else None,
        )


def require_tensor(value: Any, op: str, what: str = "first argument") -> Tensor:
    if not isinstance(value, Tensor):
        raise ShapeError(
            f"{what} must be a Tensor, got {type(value).__name__}",
            code="argument",
            op=op,
            hint="put the tensor first; scalars go second (fixed rule F1)",
        )
    return value


def static_shape(shape: Sequence[Any], op: str) -> tuple[int, ...]:
    """``shape`` as compile-time positive ints (a symbolic dim is an error, C-SYM-07)."""
    dims = []
    for i, d in enumerate(shape):
        if isinstance(d, SymbolicScalar):
            raise ShapeError(
                f"shape[{i}] is the symbolic scalar {d.name}; shapes must be compile-time ints",
                code="symbolic",
                op=op,
                constraint="C-SYM-07",
                hint="symbols belong in offsets and valid_shape",
            )
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0:
            raise ShapeError(f"shape[{i}]={d!r} must be a positive int", code="argument", op=op)
        dims.append(int(d))
    return tuple(dims)


def valid_arg(
    valid_shape: Sequence[Any] | None, shape: tuple[int, ...], op: str, machine: Machine
) -> tuple[int, ...] | None:
    """A ``valid_shape`` argument checked against ``shape`` (None when not given)."""
    if valid_shape is None:
        return None
    if len(valid_shape) != len(shape):
        machine.fail(
            ShapeError,
            f"valid_shape {list(valid_shape)} has rank {len(valid_shape)}, shape {list(shape)} has rank {len(shape)}",
            code="rank-mismatch",
            op=op,
            constraint="C-DATA-02",
        )
    valid = tuple(concrete(v) for v in valid_shape)
    for i, (v, n) in enumerate(zip(valid, shape)):
        if not 0 <= v <= n:
            machine.fail(
                ShapeError,
                f"valid_shape[{i}]={v} is outside 0..{n} (shape {list(shape)})",
                code="valid-shape",
                op=op,
                constraint="C-DATA-04",
            )
    return valid
