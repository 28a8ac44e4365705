"""A vector group whose row reduction spans several column tiles, as PyPTO 0.2.0 cuts it into tasks
(rule column-reduce-through-gm).

The group is ``row ops`` (the tensor read again after the reduction: RMSNorm's FP32 row), ``leaf ops``
(between the row and the sum: the square), the ``sum`` and ``tail ops``. Per row block, PyPTO runs: one
task per column tile for the row ops, each writing its tile to GM; the column tiles split in two halves,
each summed with PAIRSUMs into partial tiles; a last task that PAIRSUMs the partials, ROWSUMs the result
and runs the tail (reading the row's tiles back from GM). When three FP32 tiles of the reduction fill the
UB (an input, its leaf result, the running sum) the halves are cut finer: a task per leaf tile, and a
task per three partial-sum inputs (two PAIRSUMs); the last task takes what is left.
vec_nbuffer_setting then merges the tasks of one stage that feed the same tasks, n at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ..record import OpRecord, TensorRef
from .latency import tileop_cycles
from .lower import (
    BINARY_TILE_OPS,
    UNARY_TILE_OPS,
    Body,
    Resolver,
    TileOp,
    box_shape,
    col_tile,
    lower_vec,
    nbytes_of,
    ref_box,
    rows_cols,
    shared_op,
    vec_grid,
)
from .params import CostParams

__all__ = ["ColumnReduce", "column_reduce", "column_reduce_bodies"]

Item = tuple[str, int]  # ("leaf", column tile) or ("part", partial index)


@dataclass(frozen=True)
class ColumnReduce:
    row: tuple[OpRecord, ...]
    leaf: tuple[OpRecord, ...]
    sum: OpRecord
    tail: tuple[OpRecord, ...]


def column_reduce(ops: Sequence[OpRecord]) -> ColumnReduce | None:
    """The group's parts when it is one row reduction over more than one column tile, else None."""
    sums = [o for o in ops if o.op == "sum" and o.output is not None and rows_cols(o.output.shape)[1] == 1]
    if len(sums) != 1 or len(sums[0].inputs) != 1:
        return None
    s = sums[0]
    _R, _tr, C, tc = vec_grid(s)
    if C <= tc:
        return None
    made = {o.output.uid: o for o in ops if o.output is not None}
    before = [o for o in ops if o.seq < s.seq]
    tail = [o for o in ops if o.seq > s.seq]
    chain: set[int] = set()
    todo = [s.inputs[0].uid]
    while todo:
        u = todo.pop()
        if u in made and made[u].seq not in chain:
            chain.add(made[u].seq)
            todo.extend(t.uid for t in made[u].inputs)
    if any(o.seq not in chain for o in before):
        return None
    read_after = {t.uid for o in tail for t in o.inputs}
    kept = {o.seq for o in before if o.output is not None and o.output.uid in read_after}
    for o in reversed(before):  # the row's own producers are row ops too
        if o.seq in kept:
            kept.update(made[t.uid].seq for t in o.inputs if t.uid in made)
    row = [o for o in before if o.seq in kept]
    leaf = [o for o in before if o.seq not in kept]
    if not row or not leaf or any(o.output is None or len(o.inputs) > 2 for o in before):
        return None
    if any(rows_cols(o.output.shape) != rows_cols(s.inputs[0].shape) for o in before):
        return None  # elementwise on the reduced tensor only
    return ColumnReduce(tuple(row), tuple(leaf), s, tuple(tail))


@dataclass
class _Unit:
    stage: int
    build: Callable[[Body], None]
    consumers: list[int] = field(default_factory=list)


def _emit_op(o: OpRecord, ins: list[int], shape: tuple[int, int], body: Body, params: CostParams) -> int:
    """One elementwise op of a column tile (its tile op by the op tables, as lower_vec names it)."""
    dt = o.inputs[0].dtype
    name = BINARY_TILE_OPS.get(o.op) if len(o.inputs) == 2 else UNARY_TILE_OPS.get(o.op, o.op.upper())
    nb = shape[0] * shape[1] * nbytes_of(o.output.dtype)
    body.ub_bytes += nb
    cyc = tileop_cycles(name or o.op.upper(), [shape] * (len(o.inputs) + 1), dt, nbytes_of(dt), params)
    return body.add(shared_op(name or o.op.upper(), "VECTOR", cyc, tuple(dict.fromkeys(ins)), shape, nb))


def _copy(body: Body, kind: str, ref: tuple[int, tuple[int, int], str], box: tuple[int, int, int, int],
          dep: tuple[int, ...], resolve: Resolver, params: CostParams) -> int:
    """COPY_IN of ``box`` of (uid, full shape, dtype), or COPY_OUT of it after ``dep``."""
    uid, full, dt = ref
    shape = box_shape(box)
    base, bbox, via, cacheable = resolve(uid, box, None)
    if kind == "COPY_IN":
        key = (base, bbox)
        if key not in body.loaded:
            body.loaded[key] = body.add(TileOp("COPY_IN", "MTE_IN", tileop_cycles("COPY_IN", [full, shape], dt, nbytes_of(dt), params),
                                               (), shape, shape[0] * shape[1] * nbytes_of(dt), (base, bbox, cacheable)))
            body.reads.append((base, bbox, via))
            body.ub_bytes += shape[0] * shape[1] * nbytes_of(dt)
        return body.loaded[key]
    idx = body.add(TileOp("COPY_OUT", "MTE_OUT", tileop_cycles("COPY_OUT", [shape, full], dt, nbytes_of(dt), params),
                          dep, shape, shape[0] * shape[1] * nbytes_of(dt), (base, bbox, cacheable)))
    body.writes.append((uid, box))
    return idx


class _Lowerer:
    """Builds the unit bodies of one row block [r0, r1) of a column reduction."""

    def __init__(self, cr: ColumnReduce, grid: tuple[int, int, int, int], r0: int, r1: int, resolve: Resolver,
                 params: CostParams, needs_out: Callable[[int], bool]) -> None:
        self.cr, self.grid, self.r0, self.r1 = cr, grid, r0, r1
        self.resolve, self.params, self.needs_out = resolve, params, needs_out
        src = cr.sum.inputs[0]
        self.R, _tr, self.C, self.tc = vec_grid(cr.sum)
        self.nct = -(-self.C // self.tc)
        self.acc = src.dtype
        # the compiler's own GM workspace of partial sums: a negative uid per reduction (split-K's are -1 - seq)
        self.part_ref = (-(1 << 30) - cr.sum.seq, (r1 - r0, self.C), self.acc)

    def box(self, ct: int) -> tuple[int, int, int, int]:
        return col_tile(ref_box(self.cr.sum.inputs[0], self.R, self.r0, self.r1), self.tc, self.nct, ct)

    def ref(self, t: TensorRef) -> tuple[int, tuple[int, int], str]:
        return (t.uid, rows_cols(t.shape), t.dtype)

    def ops(self, ops: Sequence[OpRecord], ct: int, body: Body, local: dict[int, int]) -> None:
        """Elementwise ops of column tile ``ct``: inputs from ``local`` (this task) or copied in."""
        shape = box_shape(self.box(ct))
        for o in ops:
            body.record_ops.append(o.seq)
            ins = [local[t.uid] if t.uid in local else
                   _copy(body, "COPY_IN", self.ref(t), col_tile(ref_box(t, self.R, self.r0, self.r1), self.tc, self.nct, ct),
                         (), self.resolve, self.params) for t in o.inputs]
            local[o.output.uid] = _emit_op(o, ins, shape, body, self.params)

    def row(self, ct: int, body: Body) -> None:
        local: dict[int, int] = {}
        self.ops(self.cr.row, ct, body, local)
        for o in self.cr.row:  # the row's tiles go to GM for the sums and the tail
            _copy(body, "COPY_OUT", self.ref(o.output), self.box(ct), (local[o.output.uid],), self.resolve, self.params)

    def leaf(self, ct: int, body: Body, out: bool) -> int:
        local: dict[int, int] = {}
        self.ops(self.cr.leaf, ct, body, local)
        last = self.cr.leaf[-1].output
        if out:
            _copy(body, "COPY_OUT", self.ref(last), self.box(ct), (local[last.uid],), self.resolve, self.params)
        return local[last.uid]

    def item(self, it: Item, body: Body) -> int:
        kind, k = it
        ref = self.ref(self.cr.leaf[-1].output) if kind == "leaf" else self.part_ref
        return _copy(body, "COPY_IN", ref, self.part_box(k) if kind == "part" else self.box(k), (), self.resolve, self.params)

    def part_box(self, k: int) -> tuple[int, int, int, int]:
        return (self.r0, self.r1, k * self.tc, (k + 1) * self.tc)  # partial k in the workspace

    def pairsum(self, idx: list[int], body: Body) -> int:
        shape = box_shape(self.box(0))
        nb = shape[0] * shape[1] * nbytes_of(self.acc)
        acc = idx[0]
        for i in idx[1:]:
            body.ub_bytes += nb
            acc = body.add(shared_op("PAIRSUM", "VECTOR", tileop_cycles("PAIRSUM", [shape] * 3, self.acc, nbytes_of(self.acc),
                                                                       self.params), (acc, i), shape, nb))
        return acc

    def part(self, items: list[Item], k: int, body: Body) -> None:
        """Partial ``k``: the PAIRSUMs of ``items`` (leaf tiles in GM or earlier partials), to the workspace."""
        acc = self.pairsum([self.item(i, body) for i in items], body)
        _copy(body, "COPY_OUT", self.part_ref, self.part_box(k), (acc,), self.resolve, self.params)

    def half(self, cts: list[int], k: int, body: Body) -> None:
        """Partial ``k``: the leaf ops of the column tiles ``cts`` and their PAIRSUMs, in one task."""
        acc = self.pairsum([self.leaf(ct, body, False) for ct in cts], body)
        _copy(body, "COPY_OUT", self.part_ref, self.part_box(k), (acc,), self.resolve, self.params)

    def final(self, items: list[Item], body: Body) -> None:
        """The PAIRSUMs of what is left, the row sum, then the tail (its row tiles read back from GM)."""
        s, shape = self.cr.sum, box_shape(self.box(0))
        body.record_ops.append(s.seq)
        acc = self.pairsum([self.item(i, body) for i in items], body)
        oshape = (self.r1 - self.r0, 1)
        step = self.params.cost.lowering.get("sum", ("ROWSUM_SINGLE",))[0]
        nb = oshape[0] * nbytes_of(s.output.dtype)
        body.ub_bytes += nb + shape[0] * max(1, shape[1] // 2) * nbytes_of(self.acc)
        res = body.add(shared_op(step, "VECTOR", tileop_cycles(step, [shape, oshape], self.acc, nbytes_of(self.acc), self.params),
                                 (acc,), oshape, nb))
        base, bbox, _v, _c = self.resolve(s.output.uid, ref_box(s.output, self.R, self.r0, self.r1), tuple(s.output.shape))
        body.loaded[(base, bbox)] = res  # the tail reads the sum from UB, not GM
        lower_vec(self.cr.tail, self.r0, self.r1, self.grid, body, self.needs_out, self.resolve, self.params)


def _plan(lw: _Lowerer, fine: bool) -> list[_Unit]:
    """The units of one row block; the last is the final task. Consumers are unit indices."""
    units: list[_Unit] = [_Unit(0, lambda b, ct=ct: lw.row(ct, b)) for ct in range(lw.nct)]
    n = lw.nct
    halves = [list(range((n + 1) // 2)), list(range((n + 1) // 2, n))]
    left: list[tuple[Item, int]] = []  # (item, the unit that makes it) for the final task
    nparts = 0
    for cts in halves:
        if not cts:
            continue
        if not fine:
            units.append(_Unit(1, lambda b, cts=cts, k=nparts: lw.half(cts, k, b)))
            for ct in cts:
                units[ct].consumers.append(len(units) - 1)
            left.append((("part", nparts), len(units) - 1))
            nparts += 1
            continue
        queue: list[tuple[Item, int]] = []
        for ct in cts:
            units.append(_Unit(1, lambda b, ct=ct: lw.leaf(ct, b, True)))
            units[ct].consumers.append(len(units) - 1)
            queue.append((("leaf", ct), len(units) - 1))
        while len(queue) >= 3:  # a task per three inputs: two PAIRSUMs
            take, queue = queue[:3], queue[3:]
            units.append(_Unit(2, lambda b, its=[i for i, _ in take], k=nparts: lw.part(its, k, b)))
            for _i, u in take:
                units[u].consumers.append(len(units) - 1)
            queue.append((("part", nparts), len(units) - 1))
            nparts += 1
        left.extend(queue)
    units.append(_Unit(3, lambda b, its=[i for i, _ in left]: lw.final(its, b)))
    for ct in range(n):
        units[ct].consumers.append(len(units) - 1)
    for _i, u in left:
        units[u].consumers.append(len(units) - 1)
    return units


def _merge(units: list[_Unit], nbuffer: int) -> list[list[int]]:
    """Tasks as lists of units. vec_nbuffer_setting merges, n at a time, units of one stage each of whose
    consumers another unit of that stage feeds too (a row tile feeding a leaf task of its own is not merged):
    those with no producer of their own together, the others by their consumers. The last task is never
    merged; consumers are laid out first."""
    stage_feeds: dict[tuple[int, int], int] = {}  # (stage, consumer) -> how many units of the stage feed it
    own: set[int] = set()  # units that some unit feeds alone
    for i, u in enumerate(units):
        for c in u.consumers:
            stage_feeds[(u.stage, c)] = stage_feeds.get((u.stage, c), 0) + 1
    for i, u in enumerate(units):
        for c in u.consumers:
            if stage_feeds[(u.stage, c)] == 1:
                own.add(c)
    fed = {c for u in units for c in u.consumers}
    keyed: dict[tuple, list[int]] = {}
    for i in reversed(range(len(units))):
        u = units[i]
        shared = nbuffer > 1 and bool(u.consumers) and all(stage_feeds[(u.stage, c)] > 1 for c in u.consumers)
        key = (u.stage, frozenset(u.consumers) if i in fed else None) if shared else (i,)
        keyed.setdefault(key, []).insert(0, i)
    tasks: list[list[int]] = []
    for group in keyed.values():
        tasks.extend(group[k:k + nbuffer] for k in range(0, len(group), nbuffer))
    return tasks


def column_reduce_bodies(cr: ColumnReduce, grid: tuple[int, int, int, int], nbuffer: int, needs_out: Callable[[int], bool],
                         resolve: Resolver, params: CostParams) -> Iterator[tuple[Body, tuple, str]]:
    """(body, instances, merge info) of the AIV tasks of a column reduction, per row block."""
    R, tr = grid[0], grid[1]
    for j in range(-(-R // tr)):
        lw = _Lowerer(cr, grid, j * tr, min(R, (j + 1) * tr), resolve, params, needs_out)
        rows, cols = box_shape(lw.box(0))
        fine = params.cost.col_reduce_fused_tiles * rows * cols * nbytes_of(lw.acc) >= params.ub_bytes
        units = _plan(lw, fine)
        for task in sorted(_merge(units, nbuffer), key=min):
            body = Body()
            for i in task:
                units[i].build(body)
            yield body, tuple((j, i) for i in task), (f"vecMergeInfo subGraphCount: {len(task)}" if len(task) > 1 else "")
