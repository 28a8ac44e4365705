"""Selection ops an MoE router needs (issue #32): ``topk``.

Numerics: selection moves values, it does no arithmetic, so results are the input's own values
(bit for bit) and the indices are INT32, as PyPTO 0.2.0 returns them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import DataType
from .errors import ShapeError
from .machine import Machine, current_machine
from .operands import check_dtype, new_tile, require_tensor
from .ops import compute_view
from .symbolic import SymbolicScalar
from .tensor import Tensor
from .tiles import check_vec_op
from .vocabulary import ops_of

__all__ = list(ops_of(module="select"))  # the table names what this module defines


def _int_arg(machine: Machine, op: str, name: str, value: Any) -> int:
    if isinstance(value, (SymbolicScalar, bool)) or not isinstance(value, (int, np.integer)):
        raise ShapeError(f"{name} must be an int, got {value!r}", code="argument", op=op)
    return int(value)


def _axis(machine: Machine, op: str, a: Tensor, dim: Any) -> int:
    d = _int_arg(machine, op, "dim", dim)
    if not -a.dim <= d < a.dim:
        machine.fail(ShapeError, f"dim {d} out of range for rank {a.dim}", code="argument", op=op)
    return d % a.dim


def _order(values: np.ndarray, axis: int, largest: bool) -> np.ndarray:
    """Indices that sort ``values`` along ``axis``, best first; equal values keep index order
    (a stable sort of the negated key for largest; -0.0 and 0.0 tie)."""
    key = values.astype(np.float64) if values.dtype.kind == "f" else values
    return np.argsort(-key if largest else key, axis=axis, kind="stable")


def topk(input: Tensor, k: int, dim: int | None = None, largest: bool = True) -> tuple[Tensor, Tensor]:
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) elements along ``dim``
    (default: the last), sorted best first; indices are INT32.

    Measured on PyPTO 0.2.0's CPU verify ([8, 64] FP32, k = 8): values and indices equal
    ``torch.topk(x, k, dim, largest)`` exactly (sorted, INT32 indices); among equal values its
    order is torch's, which is not index order (an all-zero row of 64 gave 44, 41, 42, 43, ...).
    ptosim puts equal values in index order (deterministic), so compare tied positions by value.
    """
    op = "topk"
    machine = current_machine(op)
    a = require_tensor(input, op, "input")
    check_dtype(machine, op, a.dtype)
    axis = _axis(machine, op, a, -1 if dim is None else dim)
    k = _int_arg(machine, op, "k", k)
    n = a.dims[axis] if a.valid is None else a.valid[axis]
    if not 0 < k <= n:
        machine.fail(ShapeError, f"k = {k} outside 1..{n}, the extent of dim {axis} of {list(a.dims)}",
                     code="argument", op=op, hint="k must be at least 1 and at most the sorted axis' valid extent")
    if not isinstance(largest, (bool, np.bool_)):
        raise ShapeError(f"largest must be a bool, got {largest!r}", code="argument", op=op)
    tile = check_vec_op(machine, op, "unary", a.dims, [a.dtype])
    values = compute_view(a)[(slice(None),) * axis + (slice(0, n),)]  # padding takes no part
    index = np.take(_order(values, axis, bool(largest)), np.arange(k), axis=axis)
    picked = np.take_along_axis(np.asarray(a.data)[(slice(None),) * axis + (slice(0, n),)], index, axis=axis)
    out_v = new_tile(machine, picked.copy(), a.dtype, None)
    out_i = new_tile(machine, index.astype(np.int32), DataType.DT_INT32, None)
    for out in (out_v, out_i):  # one record per result (the cost model follows one output per op)
        machine.emit(op, "V", [a.ref()], out.ref(), tile=tile, flops=a.size, k=k, dim=axis, largest=bool(largest))
    return out_v, out_i
