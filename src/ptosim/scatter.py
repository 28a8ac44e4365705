"""Indexed row writes: ``scatter_update`` (a paged KV-cache write) and ``Tensor.move``.

PyPTO 0.2.0's ``scatter_update(cache, -2, index, src)`` writes row ``i`` of ``src`` into row
``index[i, 0]`` of the 2-D ``cache`` and returns the cache (its CPU verifier writes the input's
own memory: the result aliases it). Measured on 0.2.0 (verifier, BF16 cache ``[32, 32]``):

* an index outside ``[0, rows)`` — vLLM's ``-1`` "skip" included — **stops** the call: that row
  and every later row of the call are not written (indices 3, -1, 10, 5 write only row 3); a
  trailing run of -1 therefore reads as "skip the padding tokens", an inner -1 loses real rows;
* the vec tile must span the whole row (``(8, 32)`` compiles for a 32-wide cache, ``(8, 8)``
  does not);
* ``cache.move(scatter_update(cache, ...))`` updates the kernel argument when ``cache`` is the
  2-D argument itself; through an in-place reshape of a 4-D argument the move is refused
  ("mismatch in length of strides and shape") or, into the 2-D alias, not written back.

ptosim models the 2-D form and refuses the others with the reason.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .dtypes import DataType
from .errors import DTypeError, ShapeError, TileShapeError
from .machine import current_machine
from .operands import require_tensor, valid_of
from .tiles import check_vec_op
from .tensor import Tensor

__all__ = ["scatter_update", "move"]

_INDEX_DTYPES = (DataType.DT_INT32, DataType.DT_INT64)


def scatter_update(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Rows of ``src`` written into ``input`` at the rows ``index[:, 0]``, in order, in place;
    returns ``input``. Stops at the first index outside ``input`` (PyPTO 0.2.0)."""
    op = "scatter_update"
    machine = current_machine(op)
    cache = require_tensor(input, op, "input")
    idx = require_tensor(index, op, "index")
    rows = require_tensor(src, op, "src")
    if cache.dim != 2:
        machine.fail(
            ShapeError,
            f"the cache {cache.name!r} has rank {cache.dim}; ptosim models the 2-D form [slots, row]",
            code="rank-mismatch",
            op=op,
            hint="pass the cache as a 2-D kernel argument [blocks*block_size, heads*head_dim] (PyPTO 0.2.0 "
            "does not write a move through an in-place reshape back to a 4-D argument)",
        )
    if dim not in (-2, 0):
        machine.fail(ShapeError, f"dim={dim}: a row scatter updates dim -2 of the 2-D cache", code="argument", op=op)
    if idx.dim != 2 or idx.dims[1] != 1:
        machine.fail(
            ShapeError,
            f"index {idx.name!r} is {list(idx.dims)}; it must be [n, 1]",
            code="shape-mismatch",
            op=op,
            hint="reshape the 1-D slot view to [n, 1] (a copy: PyPTO 0.2.0 refuses it in place)",
        )
    if idx.dtype not in _INDEX_DTYPES:
        machine.fail(DTypeError, f"index {idx.name!r} is {idx.dtype.short}; it must be INT32 or INT64", op=op)
    if rows.dim != 2 or rows.dims[0] != idx.dims[0] or rows.dims[1] != cache.dims[1]:
        machine.fail(
            ShapeError,
            f"src {list(rows.dims)} must be [{idx.dims[0]}, {cache.dims[1]}]: one cache row per index (no broadcast)",
            code="shape-mismatch",
            op=op,
        )
    if rows.dtype != cache.dtype:
        machine.fail(DTypeError, f"src is {rows.dtype.short} but the cache {cache.name!r} is {cache.dtype.short}", op=op,
                     hint="cast before the scatter")
    tile = check_vec_op(machine, op, "unary", rows.dims, [rows.dtype])
    if tile[-1] < rows.dims[1]:
        machine.fail(
            TileShapeError,
            f"vec tile {list(tile)} splits the {rows.dims[1]}-wide rows; PyPTO 0.2.0 refuses a scatter whose tile "
            "does not span the row",
            code="tile-unfit",
            op=op,
            hint=f"set the vec tile's last axis to {rows.dims[1]}",
        )
    n = valid_of(rows)[0]
    slots = np.asarray(idx.data[:n, 0], dtype=np.int64)
    bad = np.flatnonzero((slots < 0) | (slots >= cache.dims[0]))
    written = int(bad[0]) if bad.size else n
    values = rows.data[:written]
    storage = cache.data  # settles deferred writes first
    machine.before_write(cache.uid)
    storage[slots[:written]] = values
    # The cost model sees n rows of the cache's GM written (where they land does not change the
    # price) and read: PyPTO's INDEX_OUTCAST takes the cache as an input, so each scatter into a
    # cache waits for the previous one (its SIM serialises the loop iterations' scatters).
    cache_rows = replace(cache.ref(), shape=rows.dims, nbytes=rows.size * rows.dtype.nbytes)
    # Its readers wait for it as for a write of the whole cache: the rows are runtime data.
    machine.emit(op, "V", [rows.ref(), idx.ref(), cache_rows], cache_rows, tile=tile, flops=0, rows=n, written=written,
                 cache_rows=cache.dims[0])
    machine.vec_results.pop(cache.uid, None)  # the cache stays a GM argument, not a vector result
    return cache


def move(target: Tensor, value: Any) -> None:
    """``target.move(value)``: ``target`` takes ``value``'s content (nothing to do when ``value``
    is ``target`` itself, as after a scatter_update into it)."""
    op = "move"
    machine = current_machine(op)
    src = require_tensor(value, op, "value")
    if src is target or src.uid == target.uid:
        return
    if src.dims != target.dims or src.dtype != target.dtype:
        machine.fail(
            ShapeError,
            f"move of {list(src.dims)} {src.dtype.short} into {target.name!r} {list(target.dims)} {target.dtype.short}",
            code="shape-mismatch",
            op=op,
        )
    from .movement import assemble

    assemble(src, [0] * target.dim, target)
