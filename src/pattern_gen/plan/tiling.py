"""Tile fitting: take the card's tile shapes and reduce them until the platform accepts them.

The rules are ptosim's own (``ptosim.platform.vec_footprint`` / ``cube_capacity``, alignment from
the profile), applied to every op of a stage at the largest unroll factor, so a plan the resolver
accepts runs on ptosim. Vec tiles shrink rows first and never the last axis of a stage that reduces
over it (a stage without a reduction, e.g. a dequant epilogue, may then split it); cube tiles
shrink the L0/L1 values of the overflowing buffer, keeping alignment and L1 % L0 == 0. Every
change is recorded with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ptosim.dtypes import DataType, dtype_from_name
from ptosim.platform import OpKind, Profile, cube_capacity, vec_footprint

from ..flow import COp, CStage, ScalarArg
from ..vocab.errors import PatternGenError, Problem
from ..vocab.expr import ExprError, evaluate
from ..vocab.ops import CUBE_OPS, op_spec

__all__ = ["VecOpUse", "vec_uses", "fit_vec_tile", "fit_cube_tile", "default_vec_tile", "eval_shape"]


def eval_shape(shape: Sequence[Any], values: Mapping[str, int]) -> tuple[int, ...]:
    out = []
    for s in shape:
        v = evaluate(s, values)
        if int(v) != v:
            raise ExprError(f"shape entry {s} = {v} is not an integer")
        out.append(int(v))
    return tuple(out)


@dataclass(frozen=True)
class VecOpUse:
    """One vector op as the UB rule sees it: its kind, the shape the tile covers, its dtypes."""

    op: str
    kind: OpKind
    shape: tuple[int, ...]
    dtypes: tuple[DataType, ...]


def _vec_use(op: COp, values: Mapping[str, int]) -> VecOpUse:
    footprint = op_spec(op.op).footprint
    shape = op.out_type.shape if op.out_type is not None else op.in_types[0].shape
    dts = tuple(dtype_from_name(t.dtype) for t in op.in_types[:1])
    kind: OpKind = "unary"
    if op.op == "cast":  # the UB holds both sides of a conversion
        dts = (dtype_from_name(op.in_types[0].dtype), dtype_from_name(op.attrs["to"]))
    elif op.op == "full":  # no tensor input: the filled dtype is the one held
        dts = (dtype_from_name(op.attrs["dtype"]),)
    if footprint == "reduce":
        kind, shape = "reduce", op.in_types[0].shape
    elif footprint == "elementwise":
        tensors = op.in_types
        if len(tensors) == 2 and not any(isinstance(a, ScalarArg) for a in op.args):
            same = eval_shape(tensors[0].shape, values) == eval_shape(tensors[1].shape, values)
            kind = "binary" if same else "broadcast"
    return VecOpUse(op.op, kind, eval_shape(shape, values), dts)


def vec_uses(stage: CStage, values: Mapping[str, int]) -> list[VecOpUse]:
    return [_vec_use(op, values) for op in stage.ops if op_spec(op.op).footprint is not None]


def default_vec_tile(uses: Sequence[VecOpUse]) -> list[int]:
    """Without advice: the widest op's shape, 8 rows on the leading axis."""
    widest = max(uses, key=lambda u: (len(u.shape), u.shape[-1]))
    tile = list(widest.shape)
    tile[0] = min(8, tile[0])
    return tile


def _effective(tile: Sequence[int], shape: Sequence[int]) -> list[int]:
    return [min(t, s) for t, s in zip(tile, shape)]


def _align_elems(profile: Profile, dt: DataType) -> int:
    return max(1, profile.vec_align_bytes // dt.nbytes)


def fit_vec_tile(
    label: str, uses: Sequence[VecOpUse], tile: Sequence[int], profile: Profile
) -> tuple[list[int], list[str]]:
    """Reduce ``tile`` until every op of the stage passes the UB rules; (tile, notes)."""
    notes: list[str] = []
    tile = [int(t) for t in tile]
    rank = max(len(u.shape) for u in uses)
    if len(tile) < rank:
        raise PatternGenError(
            Problem("tile-unfit", f"stage {label!r}: vec tile {tile} has rank {len(tile)}, its ops need rank {rank} (C-TILE-01)")
        )
    need = max(_align_elems(profile, dt) for u in uses for dt in u.dtypes)
    if tile[-1] % need:
        fixed = -(-tile[-1] // need) * need
        notes.append(f"vec tile last axis {tile[-1]} -> {fixed}: 32-byte alignment (C-TILE-02)")
        tile[-1] = fixed
    start = list(tile)
    reduces = any(u.kind == "reduce" for u in uses)
    split_last = False
    while True:
        worst = None
        for u in uses:
            eff = _effective(tile, u.shape)
            widest = max(dt.nbytes for dt in u.dtypes)
            used = vec_footprint(u.kind, eff, widest, profile)
            if used > profile.ub:
                worst = (u, f"{u.op} ({u.kind}) footprint {used} B > UB {profile.ub} B")
                break
            if u.kind == "reduce":
                tile_bytes = used // profile.footprint_factor["reduce"]
                if tile_bytes > profile.reduce_tile_max_bytes:
                    worst = (u, f"{u.op} reduction tile {tile_bytes} B > {profile.reduce_tile_max_bytes} B")
                    break
        if worst is None:
            break
        axis = next((i for i in range(len(tile) - 1) if tile[i] > 1), None)
        if axis is None and not reduces and tile[-1] // 2 >= need and (tile[-1] // 2) % need == 0:
            # No reduction in this stage (e.g. a dequant epilogue over N): the last axis is an
            # ordinary elementwise axis and may be split too, keeping the 32-byte alignment.
            tile[-1] //= 2
            split_last = True
            reason = worst[1]
            continue
        if axis is None:
            raise PatternGenError(
                Problem(
                    "tile-unfit",
                    f"stage {label!r}: {worst[1]} on {profile.name} even with vec tile {tile}; the reduction axis is never "
                    "split — use a smaller dim (--dim) or a platform with a larger UB (C-TILE-03)",
                )
            )
        tile[axis] = max(1, tile[axis] // 2)
        reason = worst[1]
    if tile != start:
        how = "rows halved, then the last axis (no reduction in this stage)" if split_last else "rows halved, reduction axis kept"
        notes.append(f"vec tile {start} -> {tile} on {profile.name}: {reason} (C-TILE-03); {how}")
    return tile, notes


def fit_cube_tile(
    label: str, ops: Sequence[COp], cube: Mapping[str, Sequence[int]], profile: Profile
) -> tuple[dict[str, list[int]], list[str]]:
    """Align and shrink a cube tile for every matmul of a stage; (tile, notes)."""
    notes: list[str] = []
    # k is [L0, L1] or [L0, L1 of A, L1 of B]; the L1 values stay separate
    tile = {k: [int(v) for v in cube[k]] for k in ("m", "k", "n")}
    mm = [op for op in ops if op.op in CUBE_OPS]
    for op in mm:
        a, b = (dtype_from_name(t.dtype) for t in op.in_types[:2])
        for axis, dts in (("k", (a, b)), ("n", (b,))):
            elems = max(16 if dt.nbytes == 4 else max(1, profile.cube_align_bytes // dt.nbytes) for dt in dts)
            if op.op == "scaled_mm" and axis == "k":
                elems = max(elems, profile.scaled_mm_k_align)
            vals = tile[axis]
            if any(v % elems for v in vals):
                fixed = [-(-v // elems) * elems for v in vals]
                notes.append(f"cube {axis}={vals} -> {fixed}: multiples of {elems} elements for {a.short if axis == 'k' else b.short} (C-TILE-05)")
                tile[axis] = fixed
        start = {k: list(v) for k, v in tile.items()}
        acc = DataType.DT_INT32 if a == DataType.DT_INT8 else DataType.DT_FP32
        reasons = []
        for _ in range(64):
            over = cube_capacity(tile["m"], tile["k"], tile["n"], a, b, acc, profile).overflows()
            if not over:
                break
            buf, used, limit = over[0]
            reasons.append(f"{buf} {used} B > {limit} B")
            k_align = max(16 if dt.nbytes == 4 else profile.cube_align_bytes // dt.nbytes for dt in (a, b))
            n_align = 16 if b.nbytes == 4 else profile.cube_align_bytes // b.nbytes
            if not _shrink(tile, buf, k_align, n_align):
                raise PatternGenError(
                    Problem("tile-unfit", f"stage {label!r}: cube tile {tile} needs {used} B of {buf} > {limit} B on {profile.name} and cannot shrink further (C-TILE-05)")
                )
        if tile != start:
            notes.append(f"cube tile {start} -> {tile} on {profile.name}: {reasons[0]} (C-TILE-05)")
    return tile, notes


def _halve(vals: list[int], index: int, align: int) -> bool:
    v = vals[index]
    if v // 2 < align or (v // 2) % align:
        return False
    vals[index] = v // 2
    # Keep 0 < L0 <= L1 and L1 % L0 == 0.
    if index == 0:
        for j in range(1, len(vals)):
            if vals[j] % vals[0]:
                vals[j] = -(-vals[j] // vals[0]) * vals[0]
    else:
        if vals[index] < vals[0]:
            vals[0] = vals[index]
        if vals[index] % vals[0]:
            return False
    return True


def _shrink(tile: dict[str, list[int]], buf: str, k_align: int, n_align: int) -> bool:
    m, k, n = tile["m"], tile["k"], tile["n"]
    order = {
        "L0A": [(k, 0, k_align), (m, 0, 1)],
        "L0B": [(n, 0, n_align), (k, 0, k_align)] if n[0] >= k[0] else [(k, 0, k_align), (n, 0, n_align)],
        "L0C": [(n, 0, n_align), (m, 0, 1)],
        "L1": [(k, len(k) - 1, k_align), (n, 1, n_align), (m, 1, 1)],
    }[buf]
    for vals, index, align in order:
        if buf == "L1" and vals is k and len(k) == 3:
            if _halve(vals, 1, align) and _halve(vals, 2, align):
                return True
            continue
        if _halve(vals, index, align):
            return True
    return False
