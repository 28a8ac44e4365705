"""Which AIV tasks of a vector group ``vec_nbuffer_setting`` merges: PyPTO's NBufferMerge pass.

PyPTO 0.2.0 gives every vector subgraph instance (a "color": one task before merging) a hash of its
tile ops, and merges colors of one hash N at a time — but only colors that share a neighbour. It
maps each shared producer color to the colors it feeds (the input map) and each shared consumer
color to the colors feeding it (the output map), takes the map with fewer entries (the input map on
a tie), and walks it in key order: each entry gathers the colors not gathered before, and consecutive
colors of a gathering merge N at a time. A color with no producer (no consumer) subgraph is an entry
of its own in that map, so it is never merged (rule vec-merge-shares-a-neighbour).

Here a color is a unit of a group (vec_units.py) or an output tile of a matmul; two units are
neighbours when one writes a tensor the other reads in rows (and columns) both cover. A producer
whose rows cannot be matched to the reader's (another row count, a reshape) meets every unit.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from ..record import OpRecord, TensorRef
from .lower import rows_cols
from .lower_cube import cube_tile_boxes
from .vec_units import VecUnit, column_tiles, column_tiling, vec_units

__all__ = ["Color", "Neighbours", "RootNeighbours", "merge_chunks", "neighbours"]


#: a task unit: a vector group's (row block, column tile) or a matmul's (m tile, n tile)
Unit = VecUnit | tuple[int, int]


class Color(NamedTuple):
    """One task unit before merging: a group id and its unit."""
    gid: int
    unit: Unit


class _Span(NamedTuple):
    rows: int  #: the group's row count
    cols: int  #: the group's column count (0: every unit covers all columns)
    boxes: dict[Unit, tuple[int, int, int, int]]  #: unit -> (r0, r1, c0, c1) in the group's rows and columns


class Neighbours(NamedTuple):
    """Per unit of a group (per Color, when units of alike groups merge together): the colors of other
    groups of the root it reads from and writes to."""
    inputs: dict[Unit | Color, set[Color]]
    outputs: dict[Unit | Color, set[Color]]


def _span(ops: Sequence[OpRecord], unit_of: str, grid: tuple[int, ...]) -> _Span:
    if unit_of == "C":  # grid is cube_grid's: the same tiles
        return _Span(*cube_tile_boxes(ops[0]))
    R, tr = grid[0], grid[1]
    nct = column_tiles(ops) if len(grid) == 2 else 1
    C, tc = column_tiling(ops[0]) if nct > 1 else (0, 0)
    boxes = {}
    for u in vec_units(R, tr, nct):
        c0, c1 = (u.col * tc, min(C, (u.col + 1) * tc)) if u.col is not None else (0, 0)
        boxes[u] = (u.block * tr, min(R, (u.block + 1) * tr), c0, c1)
    return _Span(R, C, boxes)


def _in_tensor(span: _Span, box: tuple[int, int, int, int], ref: TensorRef) -> tuple[int, int, int, int]:
    """A unit's box projected on a tensor it reads or writes: its own range on a matching axis, the
    whole axis otherwise."""
    R, C = rows_cols(ref.shape)
    r0, r1 = (box[0], box[1]) if R == span.rows else (0, R)
    c0, c1 = (box[2], box[3]) if span.cols and C == span.cols and box[3] > box[2] else (0, C)
    return r0, r1, c0, c1


def _meet(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def neighbours(root_ops: Sequence[OpRecord], groups: Iterable[tuple[int, str, Sequence[OpRecord], tuple[int, ...]]],
               passes: Callable[[OpRecord], bool]) -> dict[int, Neighbours]:
    """The neighbour colors of every unit of one root's groups, given as (gid, unit kind "V"/"C", ops,
    grid). ``passes`` says which S ops (a view, a reshape) hand a group's result on to a reader."""
    spans: dict[int, _Span] = {}
    owner: dict[int, int] = {}
    for gid, unit_of, ops, grid in groups:
        spans[gid] = _span(ops, unit_of, grid)
        owner.update((o.seq, gid) for o in ops)
    made: dict[int, tuple[int, TensorRef]] = {}  # uid -> (producer gid, the tensor as it wrote it)
    reads: dict[tuple[int, int], TensorRef] = {}  # (reader gid, uid) -> the tensor as read
    for o in root_ops:
        gid = owner.get(o.seq)
        if gid is None:
            if o.output is not None and o.inputs and o.inputs[0].uid in made and passes(o):
                made[o.output.uid] = made[o.inputs[0].uid]
            continue
        for t in o.inputs:
            if t.uid in made and made[t.uid][0] != gid:
                reads.setdefault((gid, t.uid), t)
        if o.output is not None:
            made[o.output.uid] = (gid, o.output)
    out = {gid: Neighbours({u: set() for u in s.boxes}, {u: set() for u in s.boxes}) for gid, s in spans.items()}
    for (gid, uid), t in reads.items():
        p, wrote = made[uid]
        pspan, cspan = spans[p], spans[gid]
        same = tuple(t.shape) == tuple(wrote.shape)  # else a view or reshape: every unit meets every one
        pboxes = [(pu, _in_tensor(pspan, b, wrote)) for pu, b in pspan.boxes.items()]
        rows = _RowIndex(pboxes) if same else None
        for cu, cbox in cspan.boxes.items():
            cb = _in_tensor(cspan, cbox, t)
            for pu, pb in (rows.meeting(cb) if rows is not None else pboxes):
                if rows is None or _meet(pb, cb):
                    out[gid].inputs[cu].add(Color(p, pu))
                    out[p].outputs[pu].add(Color(gid, cu))
    return out


class _RowIndex:
    """A producer's unit boxes by rows: a reader's box meets only those whose rows overlap its own, a
    run of them when the boxes tile the rows in order (a group of 64 row blocks x 16 column tiles
    read by one as wide has 10^6 pairs, of which 10^3 meet)."""

    def __init__(self, boxes: list[tuple[Unit, tuple[int, int, int, int]]]) -> None:
        self.boxes = sorted(boxes, key=lambda ub: ub[1][0])
        self.r0 = [b[0] for _u, b in self.boxes]
        self.r1 = [b[1] for _u, b in self.boxes]
        self.ordered = all(a <= b for a, b in zip(self.r1, self.r1[1:]))

    def meeting(self, box: tuple[int, int, int, int]) -> list[tuple[Unit, tuple[int, int, int, int]]]:
        """The boxes whose rows may overlap ``box``'s (all of them when the rows are not in order)."""
        if not self.ordered:
            return self.boxes
        return self.boxes[bisect.bisect_right(self.r1, box[0]):bisect.bisect_left(self.r0, box[1])]


def _order(c: Color) -> tuple:
    return (c.gid, *c.unit)  # a group's units are all of one kind: a None column never meets an int


def merge_chunks(units: Sequence, nmerge: int, near: Neighbours | None) -> list[list]:
    """The units of a group merged ``nmerge`` at a time among the units that share a neighbour (see
    the module docstring); chunks in the order of their first unit."""
    if nmerge <= 1 or near is None:
        return [[u] for u in units]
    sides = []
    for keys in (near.inputs, near.outputs):
        entries: dict[Color, list] = {}
        lone = 0
        for u in units:
            ks = keys.get(u, ())
            lone += not ks
            for k in ks:
                entries.setdefault(k, []).append(u)
        sides.append((len(entries) + lone, keys, entries))
    _, keys, entries = sides[0] if sides[0][0] <= sides[1][0] else sides[1]
    order = {u: i for i, u in enumerate(units)}
    seen: set = set()
    chunks: list[list] = [[u] for u in units if not keys.get(u)]
    seen.update(c[0] for c in chunks)
    for k in sorted(entries, key=_order):
        take = [u for u in entries[k] if u not in seen]
        seen.update(take)
        chunks.extend(take[i:i + nmerge] for i in range(0, len(take), nmerge))
    return sorted(chunks, key=lambda c: order[c[0]])


def root_shape(root_ops: Sequence[OpRecord], groups: Sequence[Any]) -> tuple:
    """Everything ``neighbours`` and the color hash read of a root, with its tensors numbered by first
    appearance: each op (name, tile, cube tile, attributes but a view's or assemble's offsets, and
    each tensor's number, shape and kind) and each group (unit kind, its ops' positions, grid). The
    iterations of a loop body have one shape: their neighbours differ only by the first group id."""
    label: dict[int, int] = {}
    at = {o.seq: i for i, o in enumerate(root_ops)}
    ops = tuple((o.op, tuple(o.tile or ()), tuple(sorted(o.cube_tile.items())) if o.cube_tile else (),
                 tuple(sorted((k, repr(v)) for k, v in o.attrs.items() if k != "offsets")),
                 tuple((label.setdefault(t.uid, len(label)), tuple(t.shape), t.kind) for t in o.inputs),
                 (label.setdefault(o.output.uid, len(label)), tuple(o.output.shape), o.output.kind)
                 if o.output is not None else None)
                for o in root_ops)
    return ops, tuple((g.unit, tuple(at[o.seq] for o in g.ops), tuple(g.grid)) for g in groups)


#: False: every root works out its own neighbours (tests compare the two)
SHARE_BY_SHAPE = True


class _RootNear(NamedTuple):
    """One root shape's neighbours and hash classes, by group position in the root (colors name groups
    by position, not id: a root of the same shape shares them)."""
    near: list[Neighbours]
    alike: list[list[int]]  #: per group: the positions of the root's vector groups of its hash


class RootNeighbours:
    """The neighbours of the units of every group, worked out per root shape when a group of a root
    of that shape first asks (most groups are never merged, and most roots never ask). Colors in the
    answers give a group's position in its root, not its id: ``merge_chunks`` only compares and orders
    the colors of one root, and the same answer serves every iteration of a loop body."""

    def __init__(self, roots: Sequence[Sequence[OpRecord]], groups: Sequence[Any],
                 passes: Callable[[OpRecord], bool]) -> None:
        self.roots, self.passes = roots, passes
        self.by_root: dict[int, list[Any]] = {}
        for g in groups:
            self.by_root.setdefault(g.root, []).append(g)
        self.done: dict[int, _RootNear] = {}
        self.shapes: dict[tuple, _RootNear] = {}

    def _near(self, r: int) -> _RootNear:
        rn = self.done.get(r)
        if rn is None:
            groups = self.by_root[r]
            key = root_shape(self.roots[r], groups) if SHARE_BY_SHAPE else r
            rn = self.shapes.get(key)
            if rn is None:
                rn = self.shapes[key] = self._work_out(r, groups)
            self.done[r] = rn
        return rn

    def _work_out(self, r: int, groups: list[Any]) -> _RootNear:
        by_pos = neighbours(self.roots[r], [(i, h.unit, h.ops, h.grid) for i, h in enumerate(groups)], self.passes)
        near = [by_pos[i] for i in range(len(groups))]
        sigs: dict[int, tuple] = {}

        def signature(i: int) -> tuple:
            """PyPTO's hash of a color: its ops and, recursively, the ops of every subgraph upstream of it
            in the root (two alike ops fed by different chains are not alike); here with the shapes too."""
            sig = sigs.get(i)
            if sig is None:
                sigs[i] = ()  # a cycle cannot happen in a root's DAG; this only guards the recursion
                g = groups[i]
                feeding = {c.gid for cs in near[i].inputs.values() for c in cs}  # groups, not colors: a wide group has 10^4
                upstream = tuple(sorted({signature(j) for j in feeding}))
                ops = tuple((o.op, tuple(o.output.shape) if o.output is not None else (), tuple(o.tile or ()),
                             tuple(tuple(t.shape) for t in o.inputs)) for o in g.ops)
                sig = sigs[i] = (g.unit, ops, tuple(g.grid), upstream)
            return sig

        vec = [i for i, g in enumerate(groups) if g.unit == "V"]
        by_sig: dict[tuple, list[int]] = {}
        for i in vec:
            by_sig.setdefault(signature(i), []).append(i)
        return _RootNear(near, [by_sig.get(signature(i), []) if groups[i].unit == "V" else [] for i in range(len(groups))])

    def of(self, g: Any) -> Neighbours:
        """The neighbours of the units of group ``g`` (a graph Group: gid, root, unit, ops, grid)."""
        return self._near(g.root).near[g.gid - self.by_root[g.root][0].gid]

    def same_hash(self, g: Any) -> list[Any]:
        """The vector groups of ``g``'s root that PyPTO hashes alike (the same ops, shapes and tiles, fed by
        subgraphs of the same ops): their instances are colors of one hash, merged together (rule
        vec-merge-across-same-hash). ``g`` first if no earlier one."""
        groups = self.by_root[g.root]
        return [groups[i] for i in self._near(g.root).alike[g.gid - groups[0].gid]]
