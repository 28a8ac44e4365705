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
from typing import Any

from ..dtypes import dtype_from_name
from ..record import OpRecord, TensorRef
from ..vocabulary import OPS
from .latency import tileop_cycles
from .params import CostParams

__all__ = ["BINARY_TILE_OPS", "UNARY_TILE_OPS", "Body", "TileOp", "col_tile", "forget_tile_ops", "lower_vec", "nbytes_of", "ref_box", "row_offset",
           "rows_cols", "shared_op", "vec_grid"]

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


def lower_vec(ops: Sequence[OpRecord], r0: int, r1: int, grid: tuple[int, int, int, int], body: Body,
              needs_out: Callable[[int], bool], resolve: Resolver, params: CostParams,
              links: Mapping[int, tuple[int, int]] | None = None) -> None:
    """Append one row block [r0, r1) of the vector ops ``ops`` to ``body`` (grid = (rows, tile rows)).

    An op whose own tile has fewer rows than the block runs once per row sub-block of its tile (PyPTO
    puts two [4, K] RMSNorm tiles and the [8, K] activation-quant tile that reads them in one task);
    a consumer waits for every sub-block it reads.

    ``links`` maps a tensor the group reads to (the group's own result it holds, the seq of the op
    after which it does): a buffer the group assembled and reads again, a copying reshape of its
    result. Such a read takes the result from UB instead of copying it in."""
    R = grid[0]
    links = links or {}
    local: dict[int, dict[int, list[int]]] = {}  # uid -> first row of a sub-block -> producing op per column tile
    inside = {o.output.uid for o in ops if o.output is not None}
    lowering = params.cost.lowering

    def emit(name: str, pipe: str, shapes: Sequence[Sequence[int]], dtype: str, deps: Sequence[int],
             out_shape: Sequence[int], out_dtype: str, src: int, extra_ub: int = 0, gm=None) -> int:
        cycles = tileop_cycles(name, shapes, dtype, nbytes_of(dtype), params)
        nb = int(math.prod(out_shape)) * nbytes_of(out_dtype)
        body.ub_bytes += nb + extra_ub
        flat = [x for d in deps for x in (d if isinstance(d, tuple) else (d,))]
        dep = tuple(dict.fromkeys(d for d in flat if d >= 0))
        if gm is None:
            return body.add(shared_op(name, pipe, cycles, dep, tuple(out_shape), nb))
        return body.add(TileOp(name, pipe, cycles, dep, tuple(out_shape), nb, gm))

    def operand(ref: TensorRef, ct: int, src: int, window: Box | None = None, rows: tuple[int, int] = (r0, r1)
                ) -> tuple[int | tuple[int, ...], tuple[int, int]]:
        box = window or col_tile(ref_box(ref, R, *rows), tc, nct, ct)
        uid = ref.uid
        link = links.get(uid)
        if link is not None and src > link[1]:
            uid = link[0]
        if uid in inside and uid in local:
            blocks = local[uid]
            # the sub-blocks of the producer that overlap these rows (all of them for a [1, C] result)
            hit = [p for a, p in blocks.items() if box[0] <= a < box[1]] or list(blocks.values())
            deps = tuple(p[min(ct, len(p) - 1)] for p in hit)
            return (deps[0] if len(deps) == 1 else deps), box_shape(box)
        base, bbox, via_view, cacheable = resolve(ref.uid, box, tuple(ref.shape))
        key = (base, bbox)
        if key not in body.loaded:
            full = rows_cols(ref.shape)
            body.loaded[key] = emit("COPY_IN", "MTE_IN", [full, box_shape(box)], ref.dtype, (), box_shape(box), ref.dtype,
                                    src, gm=(base, bbox, cacheable))
            body.reads.append((base, bbox, via_view))
        return body.loaded[key], box_shape(box)

    for op in ops:
        body.record_ops.append(op.seq)
        out = op.output
        tensors = list(op.inputs)
        _R, _tr, C, tc = vec_grid(op)
        nct = max(1, -(-C // tc))
        if op.op in ("reshape", "view", "assemble") and out is not None and tensors:  # a copy task: copy in, copy out
            C = tc = rows_cols((tensors[0] if op.op == "assemble" else out).shape)[1]
            nct = 1
            window = None
            if op.op == "view":  # a copied view reads its window of the source, not all of it
                offs = tuple(op.attrs.get("offsets", ()) or ())
                dr, dc = row_offset(offs, tensors[0].shape), int(offs[-1]) if offs else 0
                window = (dr + r0, dr + r1, dc, dc + C)
            res, ishape = operand(tensors[0], 0, op.seq, window)
            box = ref_box(out, R, r0, r1)
            if op.op == "assemble":  # the source's rows land at the assemble's offsets in the buffer
                offs = tuple(op.attrs.get("offsets", ()) or ())
                dr, dc = row_offset(offs, tuple(out.shape)), int(offs[-1]) if offs else 0
                box = (r0 + dr, r1 + dr, dc, dc + C)
            base, bbox, _v, cacheable = resolve(out.uid, box, tuple(out.shape))
            oshape = box_shape(box)
            body.add(TileOp("COPY_OUT", "MTE_OUT", tileop_cycles("COPY_OUT", [oshape, rows_cols(out.shape)], out.dtype,
                                                                 nbytes_of(out.dtype), params),
                            res if isinstance(res, tuple) else (res,), tuple(oshape), int(math.prod(oshape)) * nbytes_of(out.dtype),
                            (base, bbox, cacheable)))
            body.writes.append((out.uid, canonical_box(resolve, out, box)))
            continue
        # an op tiled finer than the block runs once per row sub-block of its own tile
        subs = [(a, min(r1, a + _tr)) for a in range(r0, r1, _tr)] if _R == R and _tr < r1 - r0 else [(r0, r1)]
        for sr0, sr1 in subs:
            for ct in range(nct):
                ins = [operand(t, ct, op.seq, rows=(sr0, sr1)) for t in tensors]
                oshape = box_shape(col_tile(ref_box(out, R, sr0, sr1), tc, nct, ct)) if out is not None else (sr1 - sr0, 1)
                odt = out.dtype if out is not None else (tensors[0].dtype if tensors else "FP32")
                idt = tensors[0].dtype if tensors else odt
                name = op.op
                if name in lowering and name not in ("sum", "amax"):
                    last, dup, res = (ins[0][0] if ins else -1), -1, -1
                    for step in lowering[name]:
                        if step == "VEC_DUP":
                            dup = emit("VEC_DUP", "VECTOR", [oshape], odt, (), oshape, odt, op.seq)
                            continue
                        args = [dup, last] if dup >= 0 else [last]
                        res = last = emit(step, "VECTOR", [oshape] * (len(args) + 1), idt, args, oshape, odt, op.seq)
                        dup = -1
                    res = res if res >= 0 else dup
                elif name in ("sum", "amax") and tensors:
                    step = lowering.get(name, (OPS[name].tile_op,))[0]
                    (i0, s0) = ins[0]
                    tmp = s0[0] * max(1, s0[1] // 2) * nbytes_of(idt) if s0[1] > 1 and oshape[1] == 1 else 0
                    res = emit(step if oshape[1] == 1 else step.replace("ROW", "COL"), "VECTOR", [s0, oshape], idt,
                               [i0], oshape, odt, op.seq, extra_ub=tmp)
                elif name in BINARY_TILE_OPS and len(ins) == 2:
                    (ia, sa, ra), (ib, sb, rb) = [(i, sh, t) for (i, sh), t in zip(ins, tensors)]
                    if (sa[1] == 1 and oshape[1] > 1) or (sa[0] == 1 and oshape[0] > 1):  # broadcast operand second
                        (ia, sa, ra), (ib, sb, rb) = (ib, sb, rb), (ia, sa, ra)
                    if sb[1] == 1 and oshape[1] > 1:  # [r, 1] per-row value: BRCB to one 32-byte block per row
                        wide = (sb[0], max(1, 32 // nbytes_of(rb.dtype)))
                        ib = emit("BRCB", "VECTOR", [sb, wide], rb.dtype, [ib], wide, rb.dtype, op.seq)
                        sb = wide
                    elif sb[0] == 1 and oshape[0] > 1:  # [1, C] row: EXPAND to the tile
                        ib = emit("EXPAND", "VECTOR", [sb, oshape], rb.dtype, [ib], oshape, rb.dtype, op.seq)
                        sb = oshape
                    res = emit(BINARY_TILE_OPS[name], "VECTOR", [sa, sb, oshape], ra.dtype, [ia, ib], oshape, odt, op.seq)
                elif name in _SCALAR and len(ins) == 1:
                    res = emit(_SCALAR[name], "VECTOR", [ins[0][1], oshape], idt, [ins[0][0]], oshape, odt, op.seq)
                elif name in ("full", "zeros") or not ins:
                    res = emit("VEC_DUP", "VECTOR", [oshape], odt, (), oshape, odt, op.seq)
                else:
                    code = UNARY_TILE_OPS.get(name, name.upper())
                    res = emit(code, "VECTOR", [s for _, s in ins] + [oshape], idt, [i for i, _ in ins], oshape, odt, op.seq)
                if out is None:
                    continue
                local.setdefault(out.uid, {}).setdefault(sr0, []).append(res)
                if needs_out(out.uid):
                    box = col_tile(ref_box(out, R, sr0, sr1), tc, nct, ct)
                    full = rows_cols(out.shape)
                    if "cache_rows" in op.attrs:
                        # a scatter writes its rows to GM itself (PyPTO 0.2.0's INDEX_OUTCAST, no COPY_OUT);
                        # where they land is runtime data
                        box = (0, int(op.attrs["cache_rows"]), 0, full[1])
                    else:
                        base, bbox, _v, cacheable = resolve(out.uid, box, tuple(out.shape))
                        body.add(TileOp("COPY_OUT", "MTE_OUT", tileop_cycles("COPY_OUT", [oshape, full], odt, nbytes_of(odt), params),
                                        (res,), tuple(oshape), int(math.prod(oshape)) * nbytes_of(odt), (base, bbox, cacheable)))
                    body.writes.append((out.uid, canonical_box(resolve, out, box)))
