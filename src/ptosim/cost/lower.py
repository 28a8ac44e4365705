"""Lowering of recorded ops to the tile ops PyPTO's cost model prices, one task at a time.

A vector task is one row block (``instance``) of a group of vector ops that share a tile grid:
COPY_IN of every operand the task does not produce itself, the vector tile ops, COPY_OUT of every
result another task, root or the kernel's outputs need. A cube task is one ``mL0 x nL0`` output
tile with the K loop inside: per ``kL1`` chunk COPY_IN of the A and B blocks (MTE_IN), per ``kL0``
step L1->L0A / L1->L0B (MTE1) and A_MUL_B / A_MULACC_B (CUBE), and COPY_OUT of L0C at the end.
This follows what PyPTO 0.2.0's pipe swimlane shows for the same kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

from ..dtypes import dtype_from_name
from ..record import OpRecord, TensorRef
from ..vocabulary import OPS
from .latency import tileop_cycles
from .params import CostParams

__all__ = ["BINARY_TILE_OPS", "UNARY_TILE_OPS", "Body", "Link", "Operand", "TileOp", "col_tile", "forget_tile_ops",
           "lower_vec", "nbytes_of", "ref_box", "row_offset", "rows_cols", "shared_op", "vec_grid"]

Box = tuple[int, int, int, int]  # rows [r0, r1), cols [c0, c1) of the tensor's 2-D view

# the tile op each recorded op lowers to (``ptosim.vocabulary``); a profile's ``lowering`` overrides
BINARY_TILE_OPS = {o.name: o.tile_op for o in OPS.values() if o.family == "binary"}
_SCALAR = {o.name: o.scalar_tile_op for o in OPS.values() if o.scalar_tile_op}
UNARY_TILE_OPS = {o.name: o.tile_op for o in OPS.values() if o.tile_op}  # any other op: its own tile op (CMP, WHERE_TT)


@lru_cache(maxsize=256)
def nbytes_of(dtype: str) -> int:
    """Bytes per element of a recorded dtype spelling (``ptosim.dtypes``); 4 for one it lacks."""
    try:
        return dtype_from_name(dtype).nbytes
    except ValueError:
        return 4


def rows_cols(shape: Sequence[int]) -> tuple[int, int]:
    """The 2-D view used for tiles and boxes: (product of the leading dims, last dim)."""
    # cached: the lowering asks for the same few shapes hundreds of thousands of times at long T
    return _rows_cols(shape if type(shape) is tuple else tuple(shape))


@lru_cache(maxsize=8192)
def _rows_cols(shape: tuple[int, ...]) -> tuple[int, int]:
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return 1, int(shape[0])
    return int(math.prod(shape[:-1])), int(shape[-1])


def row_offset(offs: tuple, shape: tuple[int, ...]) -> int:
    """The first row of an N-D box at ``offs`` in the tensor's 2-D view (leading dims flattened):
    [t, h, 0] of a [T, H, D] tensor starts at row t·H + h."""
    if len(offs) < 2:
        return 0
    row, stride = 0, 1
    for i in range(len(offs) - 2, -1, -1):
        row += int(offs[i]) * stride
        stride *= int(shape[i]) if i < len(shape) else 1
    return row


@dataclass(slots=True)
class TileOp:
    name: str
    pipe: str  #: MTE_IN, MTE1, CUBE, VECTOR, MTE_OUT
    cycles: int
    deps: tuple[int, ...]
    shape: tuple[int, ...]  #: the tile this op works on (for the trace)
    nbytes: int  #: bytes of that tile
    gm: tuple[int, Box, bool] | None = None  #: (tensor uid, box, cacheable) for L2 (copies only)


#: (name, pipe, cycles, deps, shape, nbytes) -> the one TileOp of those fields: a tile op that copies
#: nothing (no ``gm``) is the same in every task of its kind — a fused attention with a token loop
#: has 123 distinct among 142 k at T=128 — so tasks share it (nothing changes a TileOp once made,
#: and its recorded op is the task's ``record_ops``); cleared by forget_tile_ops
_SHARED: dict[tuple, TileOp] = {}


def shared_op(name: str, pipe: str, cycles: int, deps: tuple[int, ...], shape: tuple[int, ...], nbytes: int) -> TileOp:
    """The TileOp of these fields with no ``gm``, made once per build."""
    key = (name, pipe, cycles, deps, shape, nbytes)
    op = _SHARED.get(key)
    if op is None:
        op = _SHARED[key] = TileOp(name, pipe, cycles, deps, shape, nbytes)
    return op


def forget_tile_ops() -> None:
    """Drop the shared tile ops (build_graph does, when done: the tasks keep the ones they use)."""
    _SHARED.clear()


@dataclass
class Body:
    """The tile ops of one task plus what it reads and writes (for dependencies)."""

    ops: list[TileOp] = field(default_factory=list)
    reads: list[tuple[int, Box, bool]] = field(default_factory=list)  #: (uid, box, through_view)
    writes: list[tuple[int, Box]] = field(default_factory=list)
    ub_bytes: int = 0
    loaded: dict[Any, int] = field(default_factory=dict)  #: copy-in dedup: key -> op index
    record_ops: list[int] = field(default_factory=list)

    def add(self, op: TileOp) -> int:
        self.ops.append(op)
        return len(self.ops) - 1


# Resolves a read of (uid, box) to the tensor that holds the data: (base uid, box, through_view, cacheable).
Resolver = Callable[..., tuple[int, Box, bool, bool]]  # (uid, box, shape of the ref read or written)


def canonical_box(resolve: Resolver, ref: TensorRef, box: Box) -> Box:
    """``box`` of ``ref`` in its tensor's first shape (an in-place reshape keeps the uid, not the shape)."""
    canon = getattr(resolve, "canon", None)
    return canon(ref.uid, box, tuple(ref.shape)) if canon is not None else box


# --- vector --------------------------------------------------------------------------------------


#: id(op) -> (op, its vec_grid): the grid of an op is asked for once per row block and per partition
#: rule; the entry holds the op, so its id cannot be reused while cached (cleared by forget_grids)
_GRIDS: dict[int, tuple[OpRecord, tuple[int, int, int, int]]] = {}


#: (operand shapes, output shape, tile) -> grid: a loop body's ops repeat the same few of these
_GRIDS_BY_SHAPE: dict[tuple, tuple[int, int, int, int]] = {}


def forget_grids() -> None:
    """Drop the vec_grid cache (build_graph does, when done, so no record outlives its estimate)."""
    _GRIDS.clear()
    _GRIDS_BY_SHAPE.clear()


def vec_grid(op: OpRecord) -> tuple[int, int, int, int]:
    """(rows R, tile rows tr, cols C, tile cols tc) of a vector op: its largest operand tiled by op.tile."""
    hit = _GRIDS.get(id(op))
    if hit is not None and hit[0] is op:
        return hit[1]
    out = op.output
    key = (tuple(tuple(t.shape) for t in op.inputs), tuple(out.shape) if out is not None else None,
           tuple(op.tile) if op.tile is not None else None)
    grid = _GRIDS_BY_SHAPE.get(key)
    if grid is None:
        grid = _GRIDS_BY_SHAPE[key] = _vec_grid(op)
    _GRIDS[id(op)] = (op, grid)
    return grid


def _vec_grid(op: OpRecord) -> tuple[int, int, int, int]:
    shapes = [t.shape for t in op.inputs] + ([op.output.shape] if op.output is not None else [])
    big = max(shapes, key=lambda s: math.prod(s) if s else 1) if shapes else (1,)
    R, C = rows_cols(big)
    tile = tuple(op.tile) if op.tile else tuple(big)
    tr, tc = rows_cols(tile) if len(tile) >= 2 else (1, int(tile[0]) if tile else 1)
    return R, max(1, min(tr, R)), C, max(1, min(tc, C))


def ref_box(ref: TensorRef, R: int, r0: int, r1: int) -> Box:
    ro, co = rows_cols(ref.shape)
    if ro == R:
        return (r0, r1, 0, co)
    if ro == 1:
        return (0, 1, 0, co)
    return (0, ro, 0, co)


def col_tile(box: Box, tc: int, nct: int, ct: int) -> Box:
    """Column tile ``ct`` of ``nct`` (``tc`` wide) of a box; past its last tile, the last one again
    (a narrower operand broadcast over the column tiles); a one-column box is every tile."""
    r0, r1, c0, c1 = box
    if nct == 1 or c1 - c0 <= 1:
        return box
    last = (c1 - c0 - 1) // tc  # index of the last real tile; later ones repeat it
    c = c0 + min(ct, last) * tc
    return (r0, r1, c, min(c + tc, c1))


def box_shape(box: Box) -> tuple[int, int]:
    return (box[1] - box[0], box[3] - box[2])


class Link(NamedTuple):
    """A tensor a vector group reads that holds the group's own result from one op on (a buffer the
    group assembled and reads again, a copying reshape of its result): read from UB, not copied in."""

    result: int  #: uid of the group's result the tensor holds
    after: int  #: seq of the op after which it holds it


class Operand(NamedTuple):
    """A tile op's operand in one task: the tile ops that make it there (its COPY_IN, or the producer's
    op in each row sub-block it overlaps) and its tile's (rows, cols)."""

    deps: tuple[int, ...]
    shape: tuple[int, int]


def lower_vec(ops: Sequence[OpRecord], r0: int, r1: int, grid: tuple[int, int, int, int], body: Body,
              needs_out: Callable[[int], bool], resolve: Resolver, params: CostParams,
              links: Mapping[int, Link] | None = None, col: int | None = None) -> None:
    """Append one row block [r0, r1) of the vector ops ``ops`` to ``body`` (grid = (rows, tile rows))
    — rule vec-task-per-row-block; with ``col``, only that column tile of every op (rule
    vec-task-per-column-tile).

    An op whose own tile has fewer rows than the block runs once per row sub-block of its tile (rule
    vec-fuse-whole-blocks: PyPTO puts two [4, K] RMSNorm tiles and the [8, K] activation-quant tile
    that reads them in one task); a consumer waits for every sub-block it reads.

    ``links``: the tensors the group reads that hold its own result (``Link``); such a read takes the
    result from UB instead of copying it in."""
    block = _VecBlock(body, r0, r1, grid[0], resolve, params, links or {},
                      {o.output.uid for o in ops if o.output is not None}, col)
    for op in ops:
        body.record_ops.append(op.seq)
        if op.op in ("reshape", "view", "assemble") and op.output is not None and op.inputs:
            block.copy_task(op, op.output)
        else:
            block.vector_op(op, needs_out)


class _VecBlock:
    """One row block of a vector group being lowered into ``body``."""

    __slots__ = ("R", "body", "col", "inside", "links", "local", "params", "r0", "r1", "resolve")

    def __init__(self, body: Body, r0: int, r1: int, R: int, resolve: Resolver, params: CostParams,
                 links: Mapping[int, Link], inside: set[int], col: int | None = None) -> None:
        self.body, self.r0, self.r1, self.R, self.col = body, r0, r1, R, col
        self.resolve, self.params, self.links, self.inside = resolve, params, links, inside
        self.local: dict[int, dict[int, list[int]]] = {}  # uid -> first row of a sub-block -> its op per column tile

    def emit(self, name: str, shapes: Sequence[Sequence[int]], dtype: str, deps: Sequence[int | tuple[int, ...]],
             out_shape: Sequence[int], out_dtype: str, extra_ub: int = 0, pipe: str = "VECTOR",
             gm: tuple[int, Box, bool] | None = None) -> int:
        """Append a tile op; ``deps`` are op indices or tuples of them (-1: none). Its output tile
        (plus ``extra_ub``) counts towards the task's UB."""
        cycles = tileop_cycles(name, shapes, dtype, nbytes_of(dtype), self.params)
        nb = int(math.prod(out_shape)) * nbytes_of(out_dtype)
        self.body.ub_bytes += nb + extra_ub
        flat = [x for d in deps for x in (d if isinstance(d, tuple) else (d,))]
        dep = tuple(dict.fromkeys(d for d in flat if d >= 0))
        if gm is None:
            return self.body.add(shared_op(name, pipe, cycles, dep, tuple(out_shape), nb))
        return self.body.add(TileOp(name, pipe, cycles, dep, tuple(out_shape), nb, gm))

    def operand(self, ref: TensorRef, ct: int, src: int, tc: int, nct: int, rows: tuple[int, int],
                window: Box | None = None) -> Operand:
        """Column tile ``ct`` of ``ref`` over ``rows`` (or its ``window``) as read by op ``src``: from
        the ops of this task that made it, else one COPY_IN per distinct GM box."""
        box = window or col_tile(ref_box(ref, self.R, *rows), tc, nct, ct)
        uid = ref.uid
        link = self.links.get(uid)
        if link is not None and src > link.after:
            uid = link.result
        if uid in self.inside and uid in self.local:
            blocks = self.local[uid]
            # the sub-blocks of the producer that overlap these rows (all of them for a [1, C] result)
            hit = [p for a, p in blocks.items() if box[0] <= a < box[1]] or list(blocks.values())
            return Operand(tuple(p[min(ct, len(p) - 1)] for p in hit), box_shape(box))
        base, bbox, via_view, cacheable = self.resolve(ref.uid, box, tuple(ref.shape))
        key = (base, bbox)
        loaded = self.body.loaded
        if key not in loaded:
            shape = box_shape(box)
            loaded[key] = self.emit("COPY_IN", [rows_cols(ref.shape), shape], ref.dtype, (), shape, ref.dtype,
                                    pipe="MTE_IN", gm=(base, bbox, cacheable))
            self.body.reads.append((base, bbox, via_view))
        return Operand((loaded[key],), box_shape(box))

    def copy_out(self, out: TensorRef, box: Box, deps: tuple[int, ...]) -> None:
        """COPY_OUT of ``box`` of ``out`` to GM (its tile is no UB buffer of the task)."""
        base, bbox, _v, cacheable = self.resolve(out.uid, box, tuple(out.shape))
        oshape, nb = box_shape(box), nbytes_of(out.dtype)
        cycles = tileop_cycles("COPY_OUT", [oshape, rows_cols(out.shape)], out.dtype, nb, self.params)
        self.body.add(TileOp("COPY_OUT", "MTE_OUT", cycles, deps, tuple(oshape), int(math.prod(oshape)) * nb,
                             (base, bbox, cacheable)))

    def copy_task(self, op: OpRecord, out: TensorRef) -> None:
        """A reshape, view or assemble PyPTO copies: COPY_IN of the source rows, COPY_OUT to the target.
        A copied view reads only its window of the source; an assemble's rows land at its offsets."""
        r0, r1, src = self.r0, self.r1, op.inputs[0]
        C = rows_cols((src if op.op == "assemble" else out).shape)[1]
        offs = tuple(op.attrs.get("offsets", ()) or ())
        dc = int(offs[-1]) if offs else 0
        window = None
        if op.op == "view":
            dr = row_offset(offs, src.shape)
            window = (dr + r0, dr + r1, dc, dc + C)
        res = self.operand(src, 0, op.seq, C, 1, (r0, r1), window)
        box = ref_box(out, self.R, r0, r1)
        if op.op == "assemble":
            dr = row_offset(offs, tuple(out.shape))
            box = (r0 + dr, r1 + dr, dc, dc + C)
        self.copy_out(out, box, res.deps)
        self.body.writes.append((out.uid, canonical_box(self.resolve, out, box)))

    def vector_op(self, op: OpRecord, needs_out: Callable[[int], bool]) -> None:
        """The tile ops of one vector op per row sub-block of its own tile and per column tile, each
        result kept in UB for the group's later ops and written out where ``needs_out``."""
        r0, r1, out, tensors = self.r0, self.r1, op.output, op.inputs
        R, tr, C, tc = vec_grid(op)
        nct = max(1, -(-C // tc))
        subs = [(a, min(r1, a + tr)) for a in range(r0, r1, tr)] if R == self.R and tr < r1 - r0 else [(r0, r1)]
        odt = out.dtype if out is not None else (tensors[0].dtype if tensors else "FP32")
        idt = tensors[0].dtype if tensors else odt
        for sr0, sr1 in subs:
            for ct in (range(nct) if self.col is None else (self.col,)):
                ins = [self.operand(t, ct, op.seq, tc, nct, (sr0, sr1)) for t in tensors]
                if out is None:
                    self.tile_op(op, ins, (sr1 - sr0, 1), odt, idt)
                    continue
                box = col_tile(ref_box(out, self.R, sr0, sr1), tc, nct, ct)
                res = self.tile_op(op, ins, box_shape(box), odt, idt)
                self.local.setdefault(out.uid, {}).setdefault(sr0, []).append(res)
                if needs_out(out.uid):
                    self.write_result(op, out, box, res)

    def write_result(self, op: OpRecord, out: TensorRef, box: Box, res: int) -> None:
        """COPY_OUT of a result another task or the kernel reads — none after a scatter (rule
        scatter-writes-gm: INDEX_OUTCAST writes its rows to GM itself, where they land is runtime data)."""
        if "cache_rows" in op.attrs:
            box = (0, int(op.attrs["cache_rows"]), 0, rows_cols(out.shape)[1])
        else:
            self.copy_out(out, box, (res,))
        self.body.writes.append((out.uid, canonical_box(self.resolve, out, box)))

    def tile_op(self, op: OpRecord, ins: list[Operand], oshape: tuple[int, int], odt: str, idt: str) -> int:
        """The tile op(s) of one recorded vector op on one tile; returns the index of the one making it."""
        name, lowering = op.op, self.params.cost.lowering
        if name in lowering and name not in ("sum", "amax"):
            return self.stepwise(lowering[name], ins, oshape, odt, idt)
        if name in ("sum", "amax") and op.inputs:
            return self.reduce(lowering.get(name, (OPS[name].tile_op,))[0], ins[0], oshape, odt, idt)
        if name in BINARY_TILE_OPS and len(ins) == 2:
            return self.binary(BINARY_TILE_OPS[name], ins, op.inputs, oshape, odt)
        if name in _SCALAR and len(ins) == 1:
            return self.emit(_SCALAR[name], [ins[0].shape, oshape], idt, [ins[0].deps], oshape, odt)
        if name in ("full", "zeros") or not ins:
            return self.emit("VEC_DUP", [oshape], odt, (), oshape, odt)
        code = UNARY_TILE_OPS.get(name, name.upper())
        return self.emit(code, [i.shape for i in ins] + [oshape], idt, [i.deps for i in ins], oshape, odt)

    def stepwise(self, steps: Sequence[str], ins: list[Operand], oshape: tuple[int, int], odt: str, idt: str) -> int:
        """A profile's ``lowering`` of an op: its tile ops in a chain, a VEC_DUP feeding the next step."""
        last: int | tuple[int, ...] = ins[0].deps if ins else -1
        dup = res = -1
        for step in steps:
            if step == "VEC_DUP":
                dup = self.emit("VEC_DUP", [oshape], odt, (), oshape, odt)
                continue
            args = [dup, last] if dup >= 0 else [last]
            res = last = self.emit(step, [oshape] * (len(args) + 1), idt, args, oshape, odt)
            dup = -1
        return res if res >= 0 else dup

    def reduce(self, step: str, src: Operand, oshape: tuple[int, int], odt: str, idt: str) -> int:
        """A row reduction (ROW step) to a [r, 1] tile, else the column one; reducing a row to one
        value holds a half-row scratch tile in UB."""
        s0 = src.shape
        tmp = s0[0] * max(1, s0[1] // 2) * nbytes_of(idt) if s0[1] > 1 and oshape[1] == 1 else 0
        return self.emit(step if oshape[1] == 1 else step.replace("ROW", "COL"), [s0, oshape], idt,
                         [src.deps], oshape, odt, extra_ub=tmp)

    def binary(self, code: str, ins: list[Operand], tensors: Sequence[TensorRef], oshape: tuple[int, int], odt: str) -> int:
        """A binary op, a broadcast operand second: a [r, 1] per-row value BRCB'd to one 32-byte block
        per row, a [1, C] row EXPANDed to the tile."""
        (a, ra), (b, rb) = zip(ins, tensors)
        sa, sb = a.shape, b.shape
        if (sa[1] == 1 and oshape[1] > 1) or (sa[0] == 1 and oshape[0] > 1):
            (a, ra, sa), (b, rb, sb) = (b, rb, sb), (a, ra, sa)
        ib: int | tuple[int, ...] = b.deps
        if sb[1] == 1 and oshape[1] > 1:
            wide = (sb[0], max(1, 32 // nbytes_of(rb.dtype)))
            ib = self.emit("BRCB", [sb, wide], rb.dtype, [ib], wide, rb.dtype)
            sb = wide
        elif sb[0] == 1 and oshape[0] > 1:
            ib = self.emit("EXPAND", [sb, oshape], rb.dtype, [ib], oshape, rb.dtype)
            sb = oshape
        return self.emit(code, [sa, sb, oshape], ra.dtype, [a.deps, ib], oshape, odt)
