"""The units of a vector group's AIV tasks: row blocks, or (row block, column tile) pairs.

PyPTO 0.2.0 makes one task per row block of a vector group (rule vec-task-per-row-block) — and,
when every op of the group is elementwise on the same column tiling narrower than the tensor's
last axis, one task per (row block, column tile): the tile ops of different column tiles share no
data, so they are separate subgraphs (rule vec-task-per-column-tile). A row reduction over several
column tiles joins them (col_reduce.py). vec_nbuffer_setting then merges these units n at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..record import OpRecord
from ..vocabulary import OPS
from .lower import Body, Resolver, lower_vec, rows_cols, vec_grid
from .params import CostParams

__all__ = ["VecUnit", "column_tiles", "column_tiling", "lower_unit", "split_over_ub", "ub_bytes", "vec_units"]

#: op families whose tile ops read and write the same element positions (no data across columns)
_ELEMENTWISE = {"cast", "binary", "unary", "full", "zeros", "compare", "where"}


def column_tiling(op: OpRecord) -> tuple[int, int]:
    """(C, tc) of a vector op's last axis; (C, C) under a vec tile of more dims than the op (its
    leading dims are the op's tile; PyPTO's SIM showed no task per such column tile: the MLA prolog's
    [T, 64, 448] RoPE cast under a [1, 64, 256, 16] tile)."""
    _R, _tr, C, tc = vec_grid(op)
    if "vec_tile_rank" in op.attrs:
        return C, C
    return C, tc


def column_tiles(ops: Sequence[OpRecord]) -> int:
    """How many column tiles a vector group runs as separate tasks: its ops' common number of column
    tiles when every op is elementwise on one column tiling (C, tc) with C > tc, else 1."""
    grids = {column_tiling(o) for o in ops}
    if len(grids) != 1:
        return 1
    C, tc = next(iter(grids))
    if C <= tc:
        return 1
    for o in ops:
        info = OPS.get(o.op)
        if info is None or info.family not in _ELEMENTWISE or o.output is None or "cache_rows" in o.attrs:
            return 1
        if rows_cols(o.output.shape)[1] != C or any(rows_cols(t.shape)[1] not in (1, C) for t in o.inputs):
            return 1
    return -(-C // tc)


class VecUnit(NamedTuple):
    """One AIV task unit of a vector group: a row block, all its columns or one column tile."""
    block: int  #: the row block
    col: int | None = None  #: the column tile (rule vec-task-per-column-tile), None: every column


def vec_units(R: int, tr: int, nct: int) -> list[VecUnit]:
    """The task units of a group of R rows in tr-row blocks and nct column tiles, row block first."""
    n = -(-R // tr)
    return [VecUnit(j) for j in range(n)] if nct <= 1 else [VecUnit(j, ct) for j in range(n) for ct in range(nct)]


def lower_unit(ops: Sequence[OpRecord], unit: VecUnit, grid: tuple[int, ...], body: Body, needs_out, resolve: Resolver,
               params: CostParams, links=None) -> None:
    """Append one unit of the vector ops to ``body``."""
    R, tr = grid[0], grid[1]
    lower_vec(ops, unit.block * tr, min(R, (unit.block + 1) * tr), grid, body, needs_out, resolve, params, links, unit.col)


def ub_bytes(ops: Sequence[OpRecord], grid: tuple[int, ...], units: Sequence[VecUnit], resolve: Resolver,
             params: CostParams) -> int:
    """The UB the units of the vector ops take together in one task."""
    body = Body()
    for u in units:
        lower_unit(ops, u, grid, body, lambda _u: False, resolve, params)
    return body.ub_bytes


def _first_unit(ops: Sequence[OpRecord]) -> VecUnit:
    return VecUnit(0, 0) if column_tiles(ops) > 1 else VecUnit(0)


def split_over_ub(ops: list[OpRecord], grid: tuple[int, ...], resolve: Resolver,
                  params: CostParams) -> list[list[OpRecord]]:
    """Peel ops off the end until one task's UB buffers fit the limit (recursively for the tail); a
    group run per column tile is measured on one column tile."""
    head, tail = list(ops), []
    while len(head) > 1 and ub_bytes(head, grid, [_first_unit(head)], resolve, params) > params.vec_ub_limit:
        tail.insert(0, head.pop())
    return [head] + (split_over_ub(tail, grid, resolve, params) if tail else [])
