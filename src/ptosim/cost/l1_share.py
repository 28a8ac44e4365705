"""Cube tasks of different matmuls that share their left operand (rule l1-reuse-shared-a).

Under ``cube_l1_reuse_setting`` PyPTO 0.2.0 merges isomorphic cube subgraphs that read the same A
block into one task: an FFN's gate and up projections of one token tile (same shapes, two weights)
run as one AIC task per pair of output tiles, an MoE block's per-expert gate and up likewise. A
matmul of other shapes beside them (the MoE router's narrower output) stays apart: its subgraph
hashes differently; so do INT8 products (the FFN's INT8 W8A8 gate and up: 8 tasks for 8 tiles).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..dtypes import dtype_from_name
from ..record import OpRecord
from .lower import Body
from .lower_cube import L1Blocks, cube_grid, lower_cube
from .params import CostParams
from .partition import view_sources
from .fired import Fire
from .tasks import Aliases

__all__ = ["SharedA", "a_through_shared_view", "l1_class_orders", "shared_a_sets", "shared_a_bodies"]


@dataclass(frozen=True)
class SharedA:
    """Groups (by gid, in program order) whose matmuls read one A block with the same structure."""

    gids: tuple[int, ...]


def _shape_key(op: OpRecord) -> tuple:
    """What makes two matmuls' subgraphs isomorphic: tiles, operand shapes and dtypes, transposes."""
    ins = tuple((tuple(t.shape), str(t.dtype)) for t in op.inputs[1:])
    attrs = tuple(sorted((k, str(v)) for k, v in op.attrs.items()))
    tiles = tuple(sorted((k, tuple(v)) for k, v in (op.cube_tile or {}).items()))
    return cube_grid(op), ins, attrs, tiles, str(op.output.dtype) if op.output is not None else ""


def shared_a_sets(groups: Sequence[object]) -> dict[int, SharedA]:
    """gid -> its set, for every cube group of one row tile whose A block (the same tensor) another
    cube group of the same root reads with the same structure."""
    by_key: dict[tuple, list[int]] = defaultdict(list)
    for g in groups:
        if getattr(g, "unit", "") != "C" or not g.ops[0].inputs:  # type: ignore[attr-defined]
            continue
        op = g.ops[0]  # type: ignore[attr-defined]
        if cube_grid(op)[0] != 1:  # several row tiles: PyPTO merges along m (rule l1-reuse-along-m)
            continue
        if not dtype_from_name(op.inputs[0].dtype).is_float:
            continue  # INT8 gate and up (INT32 products) stayed 8 tasks for 8 tiles in PyPTO 0.2.0's SIM

        by_key[(g.root, op.inputs[0].uid, _shape_key(op))].append(g.gid)  # type: ignore[attr-defined]
    out: dict[int, SharedA] = {}
    for gids in by_key.values():
        if len(gids) > 1:
            share = SharedA(tuple(gids))
            out.update(dict.fromkeys(gids, share))
    return out


def shared_a_bodies(ops: Sequence[OpRecord], l1n: int, aliases: Aliases, params: CostParams,
                    fire: Fire) -> list[tuple[Body, tuple[tuple[int, int], ...], str]]:
    """The AIC tasks of one shared-A set: output tiles taken n tile by n tile across the matmuls
    (gate n0, up n0, gate n1, ...), ``l1n`` per task; (body, the tiles, PyPTO's merge note)."""
    ntiles = cube_grid(ops[0])[1]
    fire("l1-reuse-shared-a")
    units = [(i, nj) for nj in range(ntiles) for i in range(len(ops))]
    out = []
    for s in range(0, len(units), l1n):
        chunk = units[s:s + l1n]
        body, l1 = Body(), L1Blocks(params.l1_bytes)
        for i, nj in chunk:
            lower_cube(ops[i], 0, nj, body, l1, aliases, params)
        if l1.decided:
            fire("l1-keeps-first-and-last-blocks")
        info = f"l1ReuseInfo subGraphCount: {len(chunk)} (shared A)" if len(chunk) > 1 else ""
        out.append((body, tuple((0, nj) for _, nj in chunk), info))
    return out


def l1_class_orders(groups: Sequence[object]) -> dict[int, int]:
    """gid -> the L1-reuse hash order of every cube group (rule l1-hash-classes): PyPTO's L1 pass hashes a
    cube subgraph by its ops and, recursively, their inputs' (l1_copy_reuse.cpp GetColorHash), so the
    matmuls of a root with one structure (a K-split's two halves) are one class, and the classes are
    numbered by first appearance; a setting's key past the last class is ignored."""
    out: dict[int, int] = {}
    classes: dict[tuple, dict[tuple, int]] = defaultdict(dict)  # root -> structure -> order
    for g in groups:
        if getattr(g, "unit", "") != "C" or not g.ops[0].inputs:  # type: ignore[attr-defined]
            continue
        seen = classes[g.root]  # type: ignore[attr-defined]
        out[g.gid] = seen.setdefault(_shape_key(g.ops[0]), len(seen))  # type: ignore[attr-defined]
    return out


def a_through_shared_view(op: OpRecord, root_ops: Sequence[OpRecord], groups: Sequence[object]) -> bool:
    """Whether matmul ``op`` reads A through a ``view`` of a vector result made in more than one row
    block (rule l1-reuse-shared-view-a): PyPTO then assembles the result once per view into a GM
    buffer every n tile copies the same slice of, so the n tiles share their A block; read straight
    from the vector result, each cube tile gets a buffer of its own, and from a single row block
    each copy-in its own staging buffer (measured: the K-split linear at K=7168 pairs its n tiles at
    T=16 and 128, not at T=1 and 4; the unsplit one pairs m tiles only)."""
    src = view_sources(root_ops).get(op.inputs[0].uid)
    if src is None:
        return False
    for g in groups:
        if getattr(g, "unit", "") == "V" and any(o.output is not None and o.output.uid == src for o in g.ops):  # type: ignore[attr-defined]
            rows, tile_rows = g.grid[0], g.grid[1]  # type: ignore[attr-defined]
            return -(-rows // max(1, tile_rows)) > 1
    return False
