"""Lowering of a matmul record to the cube tile ops of one ``mL0 x nL0`` output tile: per ``kL1``
chunk COPY_IN of the A and B blocks, per ``kL0`` step L1->L0A / L1->L0B and the CUBE op, COPY_OUT
of L0C at the end (split out of ``lower``, which lowers the vector ops). A split-K matmul
(``enable_split_k``) runs per kL1 chunk instead, its partials summed by an AIV task: ``split_k_bodies``."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from ..record import OpRecord
from .latency import copy_in_cycles, tileop_cycles
from .lower import Body, Box, Resolver, TileOp, box_shape, canonical_box, nbytes_of, rows_cols, shared_op
from .params import CostParams
from .fired import Fire

__all__ = ["cube_grid", "has_bias", "L1Blocks", "lower_cube", "forget_plans", "split_k_chunks", "partial_uid", "partial_box",
           "lower_split_k_sum", "split_k_bodies"]


def _rows_n_tiles(op: OpRecord) -> tuple[int, int, int, int]:
    """(output rows, n, mL0, nL0) of a matmul record; batch dims count as more rows."""
    m, n = int(op.attrs.get("m", 1)), int(op.attrs.get("n", 1))
    ct = op.cube_tile or {}
    rows = rows_cols(op.output.shape)[0] if op.output is not None else m
    return rows, n, int(ct.get("m", (m,))[0]) or m, int(ct.get("n", (n,))[0]) or n


def cube_grid(op: OpRecord) -> tuple[int, int, int, int]:
    """(m tiles, n tiles, mL0, nL0) of a matmul record; batch dims count as more rows."""
    rows, n, mt, nt = _rows_n_tiles(op)
    return -(-rows // mt), -(-n // nt), mt, nt


def cube_tile_boxes(op: OpRecord) -> tuple[int, int, dict[tuple[int, int], tuple[int, int, int, int]]]:
    """(output rows, n, {(m tile, n tile): its (row0, row1, col0, col1) in the output}) of a matmul record."""
    rows, n, mt, nt = _rows_n_tiles(op)
    return rows, n, {(i, j): (i * mt, min(rows, (i + 1) * mt), j * nt, min(n, (j + 1) * nt))
                     for i in range(-(-rows // mt)) for j in range(-(-n // nt))}


class L1Blocks:
    """Which repeated GM blocks a merged cube task may take from L1 instead of copying them again.

    Per operand it keeps the first ``cap - 1`` distinct blocks plus the most recent one, cap being
    how many such blocks fit in L1 next to the other operand's (PyPTO's L1-reuse runs show the same
    pattern: with 128 KiB weight blocks, 3 of 8 are reused): rule l1-keeps-first-and-last-blocks,
    which ``decided`` says was applied (a block was asked for again).
    """

    def __init__(self, l1_bytes: int) -> None:
        self.l1 = l1_bytes
        self.order: dict[str, list[Any]] = {}
        self.index: dict[Any, int] = {}
        self.decided = False

    def lookup(self, side: str, key: Any, block_bytes: int) -> int | None:
        if key not in self.index:
            return None
        self.decided = True
        cap = max(1, self.l1 // max(1, block_bytes) - 1)
        order = self.order[side]
        pos = order.index(key)
        return self.index[key] if pos < cap - 1 or pos == len(order) - 1 else None

    def store(self, side: str, key: Any, idx: int) -> None:
        order = self.order.setdefault(side, [])
        if key in order:
            order.remove(key)
        order.append(key)
        self.index[key] = idx


@lru_cache(maxsize=4096)
def _k_steps(gaps: tuple[str, str], adt: str, bdt: str, ab: int, bb: int, m_rows: int, n_cols: int, kc: int, kl0: int,
             params: CostParams) -> tuple[tuple[int, int, int, int, int], ...]:
    """Per kL0 step of one kL1 chunk: (ks, L1->L0A, L1->L0B, first A_MUL_B, A_MULACC_B cycles) — the
    same for every chunk of that width, so a long K loop prices its tile ops once."""
    out = []
    for s in range(0, kc, kl0):
        ks = min(kl0, kc - s)
        out.append((ks,
                    tileop_cycles(gaps[0], [(m_rows, kc), (m_rows, ks)], adt, ab, params),
                    tileop_cycles(gaps[1], [(n_cols, kc), (ks, n_cols)], bdt, bb, params),
                    tileop_cycles("A_MUL_B", [(m_rows, ks), (ks, n_cols), (m_rows, n_cols)], adt, ab, params),
                    tileop_cycles("A_MULACC_B", [(m_rows, ks), (ks, n_cols), (m_rows, n_cols), (m_rows, n_cols)], adt, ab, params)))
    return tuple(out)


#: id(op) -> (op, its _cube_plan), as _GRIDS (a matmul has one cube task per output tile)
_PLANS: dict[int, tuple[OpRecord, tuple]] = {}


def forget_plans() -> None:
    """Drop the cube plan cache (build_graph does, when done, with the vec_grid cache)."""
    _PLANS.clear()


def _cube_plan(op: OpRecord) -> tuple:
    """What lower_cube needs of a matmul that does not depend on the output tile."""
    hit = _PLANS.get(id(op))
    if hit is not None and hit[0] is op:
        return hit[1]
    a, b = op.inputs[0], op.inputs[1]
    m, n, k = int(op.attrs.get("m", 1)), int(op.attrs.get("n", 1)), int(op.attrs.get("k", 1))
    a_trans, b_trans = bool(op.attrs.get("a_trans")), bool(op.attrs.get("b_trans"))
    ct = op.cube_tile or {}
    _mtiles, _ntiles, mt, nt = cube_grid(op)
    kk = tuple(int(v) for v in ct.get("k", (k, k)))
    kl0, kl1 = kk[0], min(kk[1], kk[2] if len(kk) > 2 else kk[1])
    rows = rows_cols(op.output.shape)[0] if op.output is not None else m
    acc = "INT32" if a.dtype.upper() == "INT8" else "FP32"
    gap_names = ("L1_TO_L0A", "L1_TO_L0Bt" if b_trans else "L1_TO_L0B")
    plan = (n, k, a_trans, b_trans, mt, nt, kl0, kl1, rows, nbytes_of(a.dtype), nbytes_of(b.dtype), acc, rows_cols(a.shape),
            rows_cols(b.shape), gap_names)
    _PLANS[id(op)] = (op, plan)
    return plan


def lower_cube(op: OpRecord, mi: int, nj: int, body: Body, l1: L1Blocks, resolve: Resolver, params: CostParams,
               chunk: int | None = None) -> None:
    """Append the cube task of output tile (mi, nj) of matmul ``op`` to ``body``; with ``chunk``, only
    that kL1 chunk of the K loop, its partial sum copied out to the split-K workspace (rule
    split-k-partials-summed-on-aiv)."""
    body.record_ops.append(op.seq)
    n, k, _at, _bt, mt, nt, _kl0, kl1, rows, _ab, _bb, acc, _af, _bf, _g = _cube_plan(op)
    m0, n0 = mi * mt, nj * nt
    m_rows, n_cols = max(1, min(mt, rows - m0)), max(1, min(nt, n - n0))
    k0, k1 = (0, k) if chunk is None else (chunk * kl1, min(k, (chunk + 1) * kl1))
    prev_mul = _k_loop(op, m0, m_rows, n0, n_cols, k0, k1, body, l1, resolve, params)
    if chunk is not None:
        box = partial_box(op, mi, nj, chunk)
        body.add(TileOp("COPY_OUT", "MTE_OUT", tileop_cycles("COPY_OUT", [(m_rows, n_cols), (m_rows, n_cols)], acc, 4,
                                                             params),
                        (prev_mul,), (m_rows, n_cols), m_rows * n_cols * 4, (partial_uid(op), box, True)))
        body.writes.append((partial_uid(op), box))
        return
    out = op.output
    if out is None:
        return
    box = (m0, m0 + m_rows, n0, n0 + n_cols)
    base, bbox, _v, cacheable = resolve(out.uid, box, tuple(out.shape))
    full = rows_cols(out.shape)
    body.add(TileOp("COPY_OUT", "MTE_OUT", tileop_cycles("COPY_OUT", [(m_rows, n_cols), full], acc, 4, params),
                    (prev_mul,), (m_rows, n_cols), m_rows * n_cols * nbytes_of(out.dtype), (base, bbox, cacheable)))
    body.writes.append((out.uid, canonical_box(resolve, out, box)))


def _k_loop(op: OpRecord, m0: int, m_rows: int, n0: int, n_cols: int, k0: int, k1: int, body: Body, l1: L1Blocks,
            resolve: Resolver, params: CostParams) -> int:
    """The K loop over [k0, k1) of one output tile: per kL1 chunk the A and B copy-ins (or their L1 copies),
    per kL0 step the L0 loads and the multiply; the index of the last multiply."""
    a, b = op.inputs[0], op.inputs[1]
    _n, _k, a_trans, b_trans, _mt, _nt, kl0, kl1, _rows, ab, bb, _acc, a_full, b_full, gap_names = _cube_plan(op)
    prev_mul = -1
    first = True
    for c0 in range(k0, k1, kl1):
        kc = min(kl1, k1 - c0)
        a_box: Box = (c0, c0 + kc, m0, m0 + m_rows) if a_trans else (m0, m0 + m_rows, c0, c0 + kc)
        b_box: Box = (n0, n0 + n_cols, c0, c0 + kc) if b_trans else (c0, c0 + kc, n0, n0 + n_cols)
        idx = {}
        for side, ref, box, nbyte, full in (("a", a, a_box, ab, a_full), ("b", b, b_box, bb, b_full)):
            base, bbox, via_view, cacheable = resolve(ref.uid, box, tuple(ref.shape))
            key = (base, bbox)
            blk = (box[1] - box[0]) * (box[3] - box[2]) * nbyte
            hit = l1.lookup(side, key, blk)
            if hit is None:  # (re)load: it becomes the most recent block of its side
                shape = box_shape(box)
                hit = body.add(TileOp("COPY_IN", "MTE_IN", copy_in_cycles(full, shape, ref.dtype, nbyte, params),
                                      (), shape, blk, (base, bbox, cacheable)))
                body.reads.append((base, bbox, via_view))
                body.ub_bytes += blk
                l1.store(side, key, hit)
            idx[side] = hit
        bias = _bias(op, n0, n_cols, body, resolve, params) if first and has_bias(op) else -1
        steps = _k_steps(gap_names, a.dtype, b.dtype, ab, bb, m_rows, n_cols, kc, kl0, params)
        # appended in place (Body.add's index is the list's length): the K loop's ops are most of a cube task
        ops, put = body.ops, body.ops.append
        l0a = len(ops)  # the L1 -> L0A copies of the chunk's steps take the next len(steps) places
        for ks, c_a, _cb, _cm, _cacc in steps:
            put(shared_op(gap_names[0], "MTE1", c_a, (idx["a"],), (m_rows, ks), m_rows * ks * ab))
        for j, (ks, _ca, c_b, c_mul, c_acc) in enumerate(steps):
            l0b = len(ops)
            put(shared_op(gap_names[1], "MTE1", c_b, (idx["b"],), (ks, n_cols), ks * n_cols * bb))
            prev_mul, deps = len(ops), (l0a + j, l0b) + ((prev_mul,) if prev_mul >= 0 else (bias,) if bias >= 0 else ())
            put(shared_op("A_MUL_B" if first else "A_MULACC_B", "CUBE", c_mul if first else c_acc, deps, (m_rows, n_cols),
                          m_rows * n_cols * 4))
            first = False
    return prev_mul


def has_bias(op: OpRecord) -> bool:
    """Whether a matmul record carries a bias_tensor (its third input)."""
    return op.op == "matmul" and len(op.inputs) > 2


def _bias(op: OpRecord, n0: int, n_cols: int, body: Body, resolve: Resolver, params: CostParams) -> int:
    """The bias block of one output tile (rule cube-bias-per-output-tile): COPY_IN of its [1, n_cols]
    slice to L1 after the first A and B blocks, L1_TO_BT to the bias table; the index of the latter,
    which the tile's first A_MUL_B waits for."""
    ref = op.inputs[2]
    full = rows_cols(ref.shape)
    box: Box = (0, 1, n0, n0 + n_cols)
    base, bbox, via_view, cacheable = resolve(ref.uid, box, tuple(ref.shape))
    nb = nbytes_of(ref.dtype)
    copy = body.add(TileOp("COPY_IN", "MTE_IN", copy_in_cycles(full, (1, n_cols), ref.dtype, nb, params), (), (1, n_cols),
                           n_cols * nb, (base, bbox, cacheable)))
    body.reads.append((base, bbox, via_view))
    return body.add(shared_op("L1_TO_BT", "MTE1", tileop_cycles("L1_TO_BT", [(1, n_cols), (1, n_cols)], ref.dtype, nb, params),
                              (copy,), (1, n_cols), n_cols * nb))


# --- split K -------------------------------------------------------------------------------------


def split_k_chunks(op: OpRecord) -> int:
    """How many partial sums a split-K matmul makes per output tile: one per kL1 chunk of K."""
    k, kl1 = _cube_plan(op)[1], _cube_plan(op)[7]
    return -(-k // max(1, kl1))


def partial_uid(op: OpRecord) -> int:
    """The split-K workspace of ``op``'s partial sums: a GM tensor of the compiler's own, not recorded (a
    negative uid, unique per matmul, so the partials' writes and reads make the edges)."""
    return -1 - op.seq


def partial_box(op: OpRecord, mi: int, nj: int, chunk: int) -> Box:
    """Where partial ``chunk`` of output tile (mi, nj) lies in the workspace: the chunks stacked by rows."""
    n, _k, _at, _bt, mt, nt, _kl0, _kl1, rows, *_ = _cube_plan(op)
    r0, c0 = chunk * rows + mi * mt, nj * nt
    return (r0, r0 + max(1, min(mt, rows - mi * mt)), c0, c0 + max(1, min(nt, n - c0)))


def lower_split_k_sum(op: OpRecord, mi: int, nj: int, body: Body, resolve: Resolver, params: CostParams) -> None:
    """Append the AIV task that sums the split-K partials of output tile (mi, nj) to ``body``: a COPY_IN of
    each partial (one MTE_IN after another), an ADD chain on the VECTOR pipe, one COPY_OUT of the result
    (PyPTO 0.2.0's swimlane: 28 copy-ins of [16, 24] FP32 at 1421 cycles each, 27 ADDs, one COPY_OUT)."""
    body.record_ops.append(op.seq)
    acc = _cube_plan(op)[11]
    total = None
    for c in range(split_k_chunks(op)):
        box = partial_box(op, mi, nj, c)
        shape = box_shape(box)
        nb = shape[0] * shape[1] * 4
        idx = body.add(TileOp("COPY_IN", "MTE_IN", copy_in_cycles(shape, shape, acc, 4, params), (), shape, nb,
                              (partial_uid(op), box, True)))
        body.reads.append((partial_uid(op), box, False))
        body.ub_bytes += nb
        total = idx if total is None else body.add(shared_op(
            "ADD", "VECTOR", tileop_cycles("ADD", [shape] * 3, acc, 4, params), (total, idx), shape, nb))
    out = op.output
    if out is None or total is None:
        return
    box = partial_box(op, mi, nj, 0)
    base, bbox, _v, cacheable = resolve(out.uid, box, tuple(out.shape))
    shape = box_shape(box)
    body.add(TileOp("COPY_OUT", "MTE_OUT", tileop_cycles("COPY_OUT", [shape, rows_cols(out.shape)], acc, 4, params),
                    (total,), shape, shape[0] * shape[1] * nbytes_of(out.dtype), (base, bbox, cacheable)))
    body.writes.append((out.uid, canonical_box(resolve, out, box)))


def split_k_bodies(op: OpRecord, nbuffer: int, resolve: Resolver, params: CostParams, fire: Fire
                   ) -> Iterator[tuple[str, Body, tuple, str]]:
    """(kind, body, instances, merge info) of the tasks of a split-K matmul (rule split-k-partials-summed-on-aiv):
    one cube unit per output tile and kL1 chunk, ``nbuffer`` consecutive units a task (cube_nbuffer_setting;
    no L1 reuse: PyPTO 0.2.0 ran 28 chunks as 7 tasks under l1 reuse 2 and n-buffer 4), then one AIV task
    per output tile that sums its partials."""
    fire("split-k-partials-summed-on-aiv")
    mtiles, ntiles, _mt, _nt = cube_grid(op)
    tiles = [(mi, nj) for mi in range(mtiles) for nj in range(ntiles)]
    units = [(mi, nj, c) for mi, nj in tiles for c in range(split_k_chunks(op))]
    if nbuffer > 1 and len(units) > 1:
        fire("cube-nbuffer-merge")
    for i in range(0, len(units), nbuffer):
        body, l1, part = Body(), L1Blocks(params.l1_bytes), tuple(units[i:i + nbuffer])
        for mi, nj, c in part:
            lower_cube(op, mi, nj, body, l1, resolve, params, chunk=c)
        yield "AIC", body, part, f"cubeMergeInfo subGraphCount: {len(part)}" if len(part) > 1 else ""
    for mi, nj in tiles:
        body = Body()
        lower_split_k_sum(op, mi, nj, body, resolve, params)
        yield "AIV", body, ((mi, nj),), ""
