"""Results built from pieces of their inputs, for an MoE router (issue #32): ``gather`` (PyPTO's
op/indexing.py: pick elements by an index tensor) and ``concat`` (PyPTO's op/joining.py).

Numerics: both move values, bit for bit; they do no arithmetic.

Measured on PyPTO 0.2.0's CPU verify ([8, 64] inputs), every run equal to torch bit for bit:

* gather: FP32, FP16, BF16, INT32 and INT16 inputs (INT8: FC0001 "The datatype is not
  supported"); INT32 and INT64 indices (INT16: "The datatype of indices is incorrect"); dims 1,
  -1 and 0; an index smaller than the input ([4, 8] of [8, 64]) or wider along ``dim`` ([8, 32]
  of [8, 16]); one with more rows than the input ([16, 8] of [8, 64]) is refused ("The shape of
  params and indices should be equal"), and an index outside the axis (-1, 70 of 64) stops the
  verify ("index -1 is out of bounds for dimension 1 with size 64"). SIM: COPY_IN of the
  [8, 64] input rows (1427 cycles) and of the [8, 8] index (1408), GATHER_ELEMENT (11): the
  cycles ptosim's estimate gives.
* concat: FP32, FP16, BF16, INT32, INT16, INT8; two or three parts, along dim 0 or -1, and a
  single part; mixed dtypes ("The dataType of all tensors should be equal") and extents that
  differ off ``dim`` ("... should be equal except at axis") are refused. SIM runs one
  COPY_IN / COPY_OUT task per part into the result: ptosim assembles each part into a buffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .dtypes import DataType
from .errors import DTypeError, ShapeError
from .machine import Machine, current_machine
from .movement import assemble
from .operands import check_dtype, new_tile, require_tensor
from .symbolic import SymbolicScalar
from .tensor import Tensor
from .tiles import check_vec_op
from .vocabulary import ops_of

__all__ = list(ops_of(module="joining"))  # the table names what this module defines

_INDEX_DTYPES = (DataType.DT_INT32, DataType.DT_INT64)


def axis_of(machine: Machine, op: str, rank: int, dim: Any) -> int:
    """``dim`` as an axis in ``0..rank-1`` (negative counts from the end); an int or refused."""
    if isinstance(dim, (SymbolicScalar, bool)) or not isinstance(dim, (int, np.integer)):
        raise ShapeError(f"dim must be an int, got {dim!r}", code="argument", op=op)
    if not -rank <= int(dim) < rank:
        machine.fail(ShapeError, f"dim {int(dim)} out of range for rank {rank}", code="argument", op=op)
    return int(dim) % rank


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` for ``dim=1`` (``input[index[i][j]][j]`` for 0): the
    result has ``index``'s shape and ``input``'s dtype. ``index`` has ``input``'s rank and
    ``index.shape[d] <= input.shape[d]`` for ``d != dim``; every index lies in ``0..shape[dim]-1``.
    """
    op = "gather"
    machine = current_machine(op)
    a = require_tensor(input, op, "input")
    idx = require_tensor(index, op, "index")
    check_dtype(machine, op, a.dtype)
    if idx.dtype not in _INDEX_DTYPES:
        machine.fail(DTypeError, f"index is {idx.dtype.short}; it must be INT32 or INT64", code="dtype-unsupported", op=op)
    axis = axis_of(machine, op, a.dim, dim)
    if idx.dim != a.dim:
        machine.fail(ShapeError, f"index {list(idx.dims)} and input {list(a.dims)} differ in rank",
                     code="rank-mismatch", op=op)
    over = [d for d in range(a.dim) if d != axis and idx.dims[d] > a.dims[d]]
    if over:
        machine.fail(ShapeError, f"index {list(idx.dims)} is larger than input {list(a.dims)} along dim {over[0]}",
                     code="shape-mismatch", op=op, hint="index.shape[d] <= input.shape[d] for every d != dim")
    where = np.asarray(idx.data).astype(np.int64)
    bad = (where < 0) | (where >= a.dims[axis])
    if bad.any():
        machine.fail(ShapeError, f"index {int(where[bad][0])} is out of bounds for dim {axis} of size {a.dims[axis]}",
                     code="out-of-bounds", op=op)
    # the tile is laid over the input: SIM copies in whole input rows ([8, 64]) for an [8, 8] index
    tile = check_vec_op(machine, op, "binary", idx.dims, [a.dtype, idx.dtype], tile_shape=a.dims)
    src = np.asarray(a.data)[tuple(slice(None) if d == axis else slice(0, n) for d, n in enumerate(idx.dims))]
    out = new_tile(machine, np.take_along_axis(src, where, axis=axis), a.dtype, None)
    machine.emit(op, "V", [a.ref(), idx.ref()], out.ref(), tile=tile, flops=idx.size, dim=axis)
    return out


def concat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """``tensors`` joined along ``dim``: same dtype, same rank, equal extents off ``dim``."""
    op = "concat"
    machine = current_machine(op)
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise ShapeError(f"tensors must be a non-empty list of Tensors, got {tensors!r}", code="argument", op=op)
    parts = [require_tensor(t, op, f"tensors[{i}]") for i, t in enumerate(tensors)]
    first = parts[0]
    check_dtype(machine, op, first.dtype)
    axis = axis_of(machine, op, first.dim, dim)
    for i, t in enumerate(parts[1:], 1):
        if t.dtype != first.dtype:
            machine.fail(DTypeError, f"tensors[{i}] is {t.dtype.short}, tensors[0] is {first.dtype.short}",
                         code="dtype-unsupported", op=op, hint="cast before the concat")
        if t.dim != first.dim:
            machine.fail(ShapeError, f"tensors[{i}] {list(t.dims)} and tensors[0] {list(first.dims)} differ in rank",
                         code="rank-mismatch", op=op)
        if any(n != m for d, (n, m) in enumerate(zip(t.dims, first.dims)) if d != axis):
            machine.fail(ShapeError, f"tensors[{i}] {list(t.dims)} and tensors[0] {list(first.dims)} differ off dim {axis}",
                         code="shape-mismatch", op=op)
    shape = list(first.dims)
    shape[axis] = sum(t.dims[axis] for t in parts)
    out = Tensor(shape, first.dtype)  # PyPTO 0.2.0's SIM: a buffer, one COPY_IN / COPY_OUT task per part
    at = 0
    for t in parts:
        offsets = [0] * first.dim
        offsets[axis] = at
        assemble(t, offsets, out)
        at += t.dims[axis]
    return out
