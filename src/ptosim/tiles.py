"""Tile shapes: ``set_vec_tile_shapes`` / ``set_cube_tile_shapes`` and the checks made per op.

Rules (catalogue C-TILE-01..06), all with the numbers from the platform profile:

* vec tile: 1..max_rank positive ints, set before the op (C-TILE-06); rank >= the op's output
  rank (C-TILE-01); for reductions, last axis x dtype bytes a multiple of 32 (C-TILE-02; PyPTO
  0.2.0 does not ask it of elementwise ops); UB footprint = effective tile bytes at the widest operand dtype x n(kind) <= UB,
  and a reduction's tile <= 64 KiB (C-TILE-03). The effective tile is the configured tile clipped
  to the tensor (leading tile dims apply to leading tensor dims), which is what one tile occupies.
* cube tile: ``m=[mL0,mL1]``, ``k=[kL0,kL1]`` or ``[kL0,kAL1,kBL1]``, ``n=[nL0,nL1]`` with
  ``0 < L0 <= L1`` and ``L1 % L0 == 0`` (C-TILE-05); k and n 32-byte aligned in the input dtype
  (FP32: 16 elements); m free; L0A/L0B/L0C/L1 capacity by ``platform.cube_capacity``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .dtypes import DataType
from .errors import CapacityError, TileShapeError, warn
from .machine import Machine, current_machine
from .platform import OpKind, cube_capacity, vec_footprint
from .symbolic import SymbolicScalar

__all__ = [
    "set_vec_tile_shapes",
    "get_vec_tile_shapes",
    "set_cube_tile_shapes",
    "get_cube_tile_shapes",
    "check_vec_op",
    "check_cube_op",
    "effective_tile",
]


def _compile_time_int(value: Any, what: str, op: str) -> int:
    if isinstance(value, SymbolicScalar):
        raise TileShapeError(
            f"{what} is the symbolic scalar {value.name}; tile shapes must be compile-time ints",
            code="tile-value",
            op=op,
            constraint="C-TILE-06",
            hint="use the unroll factor (a plain int) or a literal",
        )
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, np.integer):
            return int(value)
        raise TileShapeError(f"{what} must be an int, got {value!r}", code="tile-value", op=op)
    if value <= 0:
        raise TileShapeError(f"{what} must be > 0, got {value}", code="tile-value", op=op)
    return value


def set_vec_tile_shapes(*dims: int) -> None:
    """Tile shape for the following vector ops (one value per axis)."""
    machine = current_machine("set_vec_tile_shapes")
    if not dims:
        raise TileShapeError("needs at least one dim", op="set_vec_tile_shapes")
    if len(dims) > machine.profile.vec_max_rank:
        raise TileShapeError(
            f"{len(dims)} dims given; at most {machine.profile.vec_max_rank} are supported",
            code="tile-rank",
            op="set_vec_tile_shapes",
        )
    machine.tile.vec = tuple(_compile_time_int(d, f"dim {i}", "set_vec_tile_shapes") for i, d in enumerate(dims))


def get_vec_tile_shapes() -> list[int]:
    tile = current_machine("get_vec_tile_shapes").tile.vec
    return list(tile) if tile else []


def set_cube_tile_shapes(
    m: Sequence[int],
    k: Sequence[int],
    n: Sequence[int],
    enable_split_k: bool = False,
    **legacy: Any,
) -> None:
    """Cube tile ``[L0, L1]`` per axis for the following matmuls (C-TILE-05)."""
    op = "set_cube_tile_shapes"
    machine = current_machine(op)
    if "enable_multi_data_load" in legacy:
        legacy.pop("enable_multi_data_load")
        warn("set_cube_tile_shapes: enable_multi_data_load was removed from PyPTO and is ignored")
    if legacy:
        raise TileShapeError(
            f"unexpected keyword(s) {sorted(legacy)}; valid: m, k, n, enable_split_k", code="tile-value", op=op
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for axis, value, lengths in (("m", m, (2,)), ("k", k, (2, 3)), ("n", n, (2,))):
        if not isinstance(value, (list, tuple)) or len(value) not in lengths:
            want = " or ".join(f"{n_} values" for n_ in lengths)
            raise TileShapeError(f"{axis} must be a list of {want} [L0, L1], got {value!r}", code="cube-tile", op=op)
        vals = tuple(_compile_time_int(v, f"{axis}[{i}]", op) for i, v in enumerate(value))
        l0 = vals[0]
        for l1 in vals[1:]:
            if not l0 <= l1 or l1 % l0:
                raise TileShapeError(
                    f"{axis}={list(vals)}: needs 0 < L0 <= L1 and L1 % L0 == 0",
                    code="cube-tile",
                    op=op,
                    constraint="C-TILE-05",
                )
        shapes[axis] = vals
    if len(shapes["k"]) == 2:  # PyPTO reports k as [kL0, kAL1, kBL1]
        shapes["k"] = (shapes["k"][0], shapes["k"][1], shapes["k"][1])
    if not isinstance(enable_split_k, bool):
        raise TileShapeError(f"enable_split_k must be a bool, got {enable_split_k!r}", code="tile-value", op=op)
    machine.tile.cube = shapes
    machine.tile.split_k = enable_split_k


def get_cube_tile_shapes() -> list[list[int]]:
    cube = current_machine("get_cube_tile_shapes").tile.cube
    return [list(cube["m"]), list(cube["k"]), list(cube["n"])] if cube else []


def effective_tile(tile: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """The part of ``tile`` one tile of ``shape`` occupies (leading tile dims, clipped)."""
    return tuple(min(t, s) for t, s in zip(tile, shape))


def check_vec_op(
    machine: Machine,
    op: str,
    kind: OpKind,
    out_shape: Sequence[int],
    dtypes: Sequence[DataType],
    *,
    tile_shape: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """Check the vec tile in force for one op; returns the effective tile for the recorder.

    ``tile_shape`` is the shape the tile is laid over (the input for reductions, else the output).
    """
    profile = machine.profile
    tile = machine.tile.vec
    if tile is None:
        machine.fail(
            TileShapeError,
            "no vec tile shape set before this vector op",
            code="tile-unset",
            op=op,
            constraint="C-TILE-06",
            hint="call set_vec_tile_shapes(...) before the stage",
        )
    over = tuple(tile_shape if tile_shape is not None else out_shape)
    key = (tile, kind, tuple(out_shape), over, tuple(dtypes))
    passed = machine.vec_checks.get(key)
    if passed is not None:  # the same op shape under the same tile passed before in this call
        return passed
    rank = max(len(out_shape), len(over))
    if len(tile) < rank:
        machine.fail(
            TileShapeError,
            f"vec tile {list(tile)} has rank {len(tile)} < the op's rank {rank} (shape {list(over)})",
            code="tile-rank",
            op=op,
            constraint="C-TILE-01",
            hint="re-set the vec tile after every rank change",
        )
    # 32-byte last axis (C-TILE-02) only where PyPTO 0.2.0 asserts it: its probe refuses a sum over
    # a [4, 100] or [4, 36] FP32 tile but compiles an add over the same tiles (vt_probe.out).
    align = profile.vec_align_bytes
    for dt in dtypes if kind == "reduce" else ():
        if (tile[-1] * dt.nbytes) % align:
            machine.fail(
                TileShapeError,
                f"vec tile last axis {tile[-1]} x {dt.nbytes} B ({dt.short}) = {tile[-1] * dt.nbytes} B "
                f"is not a multiple of {align} B",
                code="tile-align",
                op=op,
                constraint="C-TILE-02",
                hint=f"use a multiple of {align // dt.nbytes} elements",
            )
    eff = effective_tile(tile, over)
    widest = max(dt.nbytes for dt in dtypes)
    need = vec_footprint(kind, eff, widest, profile)
    if need > profile.ub:
        machine.fail(
            CapacityError,
            f"UB footprint {need} B ({kind} op, tile {list(eff)} x {widest} B x "
            f"{profile.footprint_factor[kind]}) > UB {profile.ub} B on {profile.name}",
            code="ub-overflow",
            op=op,
            constraint="C-TILE-03",
            hint=f"shrink the vec tile {list(tile)}",
        )
    if kind == "reduce":
        tile_bytes = need // profile.footprint_factor["reduce"]  # the tile itself, without the n(kind) factor
        if tile_bytes > profile.reduce_tile_max_bytes:
            machine.fail(
                CapacityError,
                f"reduction tile {list(eff)} is {tile_bytes} B > {profile.reduce_tile_max_bytes} B",
                code="reduce-tile",
                op=op,
                constraint="C-TILE-03",
                hint="shrink the rows of the vec tile; never split the reduction axis",
            )
    machine.vec_checks[key] = eff
    return eff


def check_cube_op(
    machine: Machine, op: str, a: DataType, b: DataType, acc: DataType, *, k_align: int | None = None
) -> Mapping[str, tuple[int, ...]]:
    """Check the cube tile in force for a matmul with input dtypes ``a``, ``b``."""
    cube = machine.tile.cube
    if cube is None:
        machine.fail(
            TileShapeError,
            "no cube tile shape set before this matmul",
            code="tile-unset",
            op=op,
            constraint="C-TILE-06",
            hint="call set_cube_tile_shapes([mL0, mL1], [kL0, kL1], [nL0, nL1]) before the stage",
        )
    profile = machine.profile
    for axis, dt in (("k", a), ("k", b), ("n", b)):
        # 32-byte alignment in the input dtype; FP32 inputs need 16 elements (64 B).
        elems = 16 if dt.nbytes == 4 else max(1, profile.cube_align_bytes // dt.nbytes)
        for i, v in enumerate(cube[axis]):
            if v % elems:
                machine.fail(
                    TileShapeError,
                    f"cube tile {axis}[{i}]={v} is not a multiple of {elems} elements for {dt.short} inputs",
                    code="cube-tile",
                    op=op,
                    constraint="C-TILE-05",
                )
    if k_align and cube["k"][0] % k_align:
        machine.fail(
            TileShapeError,
            f"cube tile kL0={cube['k'][0]} must be a multiple of {k_align} for {op}",
            code="cube-tile",
            op=op,
            constraint="C-TILE-05",
        )
    use = cube_capacity(cube["m"], cube["k"], cube["n"], a, b, acc, profile)
    for buffer, used, limit in use.overflows():
        machine.fail(
            CapacityError,
            f"cube tile m={list(cube['m'])} k={list(cube['k'])} n={list(cube['n'])} needs {used} B of {buffer} "
            f"> {limit} B on {profile.name}",
            code=f"{buffer.lower()}-overflow",  # type: ignore[arg-type]
            op=op,
            constraint="C-TILE-05",
            hint=f"shrink the {'L0' if buffer != 'L1' else 'L1'} tiles",
        )
    return cube
