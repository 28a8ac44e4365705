"""A group's tasks, per kind of group: a row reduction over column tiles, a vector group (its row blocks
and column tiles, merged by ``vec_nbuffer_setting``), a split-K matmul, matmuls that share their A
block (``cube_l1_reuse_setting``), and a plain matmul (its output tiles, merged by
``cube_l1_reuse_setting`` and ``cube_nbuffer_setting``). graph.py calls ``lower_group`` for each
group in order; a task of the same structure as an earlier one is replayed (template.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..options import PassOptions
from ..record import RunRecord
from .col_reduce import ColumnReduce, column_reduce, column_reduce_bodies
from .cube_units import l1_reuse_units
from .groups import Group, Reads
from .l1_share import SharedA, a_through_shared_view, l1_class_orders, shared_a_bodies
from .lookups import count as _count, scope_options
from .lower import Body
from .lower_cube import has_bias, split_k_bodies
from .nbuffer import Color, Neighbours, RootNeighbours, merge_chunks
from .params import CostParams
from .partition import unrolled
from .fired import Fired
from .tasks import Aliases, RootInfo, Task
from .template import Lowering
from .vec_units import column_tiles, lower_unit, vec_units

__all__ = ["AUTO_L1_SUBGRAPHS_PER_CORE", "GroupTasks", "lower_group"]

#: PyPTO 0.2.0's automatic L1-reuse merge (cube_l1_reuse_setting {} / no key for the group): each merged
#: group takes floor(subgraphs of the hash / (this x the AIC cores)) subgraphs (l1_copy_reuse.cpp)
AUTO_L1_SUBGRAPHS_PER_CORE = 2


@dataclass
class GroupTasks:
    """What lowering the groups' tasks reads, and the tasks made so far."""

    record: RunRecord
    params: CostParams
    aliases: Aliases
    groups: Sequence[Group]
    root_info: Sequence[RootInfo]
    reads: Reads  #: who reads what (copy-outs) and the group results read from UB
    near: RootNeighbours  #: the units each unit of a group reads from and feeds (nbuffer.py)
    shared_a: Mapping[int, SharedA]  #: gid -> the cube groups it shares its A block with (l1_share.py)
    jit: Mapping[str, Any] | None  #: the kernel's jit scope (lookups.jit_scope)
    fire: Fired
    lowering: Lowering = field(init=False)
    tasks: list[Task] = field(default_factory=list)
    #: vector groups whose tasks an earlier group of the same hash laid out (rule vec-merge-across-same-hash)
    laid_out: set[int] = field(default_factory=set)
    #: the merge count a split group's first part settled on, per family
    family_merge: dict[tuple[int, int], int] = field(default_factory=dict)
    l1_order: dict[int, int] = field(init=False)  #: cube gid -> its L1-reuse hash order (l1_share.py)

    def __post_init__(self) -> None:
        self.lowering = Lowering(self.aliases, self.params)
        self.l1_order = l1_class_orders(self.groups)

    def add(self, kind: str, g: Group, body: Body, instances: tuple, merge: str) -> None:
        """Append a task of group ``g`` with ``body``, the next id."""
        self.tasks.append(Task(len(self.tasks), kind, g.label, g.root, g.gid, body.ops, tuple(dict.fromkeys(body.record_ops)),
                               instances, merge=merge, reads=body.reads, writes=body.writes))


def lower_group(tg: GroupTasks, g: Group) -> None:
    """The tasks of group ``g``, by its kind (PyPTO gives each kind of subgraph its own task structure)."""
    _, opts = scope_options(tg.record, tg.root_info[g.root]["scope"], tg.jit)
    cr = column_reduce(g.ops) if g.unit == "V" else None
    if g.unit == "C" and has_bias(g.ops[0]):
        tg.fire("cube-bias-per-output-tile")
    if cr is not None:  # its own task structure: rule column-reduce-through-gm
        _column_reduce_tasks(tg, g, cr, opts)
    elif g.unit == "V":
        _vector_tasks(tg, g, opts)
    elif g.ops[0].attrs.get("split_k"):  # its own task structure: rule split-k-partials-summed-on-aiv
        _split_k_tasks(tg, g, opts)
    elif g.gid in tg.shared_a and (l1n := int(_count(opts.cube_l1_reuse_setting, tg.l1_order.get(g.gid, g.hash_order), g.labels)[0] or 1)) > 1:
        _shared_a_tasks(tg, g, l1n)
    else:
        _cube_tasks(tg, g, opts)


def _column_reduce_tasks(tg: GroupTasks, g: Group, cr: ColumnReduce, opts: PassOptions) -> None:
    """Rule column-reduce-through-gm: a row reduction over column tiles, a chain of tasks through GM."""
    tg.fire("column-reduce-through-gm")
    nbuf = _count(opts.vec_nbuffer_setting, g.hash_order, g.labels)[0]
    for body, inst, info in column_reduce_bodies(cr, g.grid, max(1, int(nbuf or 1)), tg.reads.needs_out(g.gid),
                                                 tg.aliases, tg.params):
        tg.add("AIV", g, body, inst, info)


def _vector_tasks(tg: GroupTasks, g: Group, opts: PassOptions) -> None:
    """Rule vec-task-per-row-block: one AIV task per row block (and column tile), merged by vec_nbuffer."""
    tg.fire("vec-task-per-row-block")
    if any("cache_rows" in o.attrs for o in g.ops):
        tg.fire("scatter-writes-gm")  # lower_vec writes no COPY_OUT after a scatter
    nct = column_tiles(g.ops)
    if nct > 1:
        tg.fire("vec-task-per-column-tile")
    count = _vec_merge(tg, g, opts, nct)
    if g.gid in tg.laid_out:
        return  # its tasks were laid out with an earlier group of its hash
    # the groups of its hash not laid out yet (an earlier one whose setting merged nothing kept to itself)
    alike = [h for h in tg.near.same_hash(g) if h.gid >= g.gid and h.gid not in tg.laid_out] if count > 1 else [g]
    tg.laid_out.update(h.gid for h in alike)
    colors = _colors(alike)
    # rule vec-nbuffer-merge: from 2 instances of a hash up
    nmerge = tg.family_merge.setdefault(g.family, count if len(colors) >= tg.params.cost.vec_merge_min_tasks else 1)
    near = None
    if nmerge > 1:
        nears = {h.gid: tg.near.of(h) for h in alike}
        near = Neighbours({c: nears[c.gid].inputs[c.unit] for c in colors}, {c: nears[c.gid].outputs[c.unit] for c in colors})
    chunks = merge_chunks(colors, nmerge, near)
    if nmerge > 1 and len(chunks) == len(colors):
        tg.fire("vec-merge-needs-shared-neighbour")
    if len(chunks) < len(colors):
        tg.fire("vec-nbuffer-merge")
    if any(len({c.gid for c in chunk}) > 1 for chunk in chunks):
        tg.fire("vec-merge-across-same-hash")
    members = {h.gid: h for h in alike}
    for chunk in chunks:
        _vector_task(tg, g, [members[c.gid] for c in chunk], chunk)


def _colors(alike: list[Group]) -> list[Color]:
    """The instances of alike vector groups as PyPTO numbers them: tile by tile, a row block (or column
    tile) of every group before the next."""
    per = [[Color(h.gid, u) for u in vec_units(h.grid[0], h.grid[1], column_tiles(h.ops))] for h in alike]
    return [cs[i] for i in range(max(map(len, per))) for cs in per if i < len(cs)]


def _vector_task(tg: GroupTasks, g: Group, groups: list[Group], chunk: list[Color]) -> None:
    """One AIV task of the instances ``chunk`` (of the groups ``groups``, one per color), laid out
    under the first color's group."""
    first = groups[0]
    info = f"vecMergeInfo hashOrder: {g.hash_order}, subGraphCount: {len(chunk)}" if len(chunk) > 1 else ""
    if all(h is first for h in groups):
        body = tg.lowering.vec(first.ops, first.grid, [c.unit for c in chunk], tg.reads.needs_out(first.gid),
                               tg.reads.links.get(first.gid))
        tg.add("AIV", first, body, tuple(c.unit for c in chunk), info)
        return
    body = Body()  # units of several groups in one task: lowered one after the other (no template)
    needs = {h.gid: tg.reads.needs_out(h.gid) for h in groups}
    for c, h in zip(chunk, groups):
        lower_unit(h.ops, c.unit, h.grid, body, needs[h.gid], tg.aliases, tg.params, tg.reads.links.get(h.gid))
    tg.add("AIV", first, body, tuple(chunk), info)


def _vec_merge(tg: GroupTasks, g: Group, opts: PassOptions, nct: int) -> int:
    """How many instances of a vector group's hash vec_nbuffer_setting asks to merge into one task."""
    # a group run per column tile was not reached by its hash order's key, only by -1 (rule
    # vec-task-per-column-tile): looked up under an order no key names
    h = g.hash_order if nct == 1 else 1 + max(opts.vec_nbuffer_setting.by_int, default=0)
    count, _raw = _count(opts.vec_nbuffer_setting, h, g.labels)
    nmerge = 1 if count is None else max(1, int(count))
    if nmerge > 1 and h in opts.vec_nbuffer_setting.by_int:
        tg.fire("vec-hash-order-from-end")
    return nmerge


def _pairs_by_size(units: list[list], nbn: int) -> list[list]:
    """cube_nbuffer_setting merges ``nbn`` consecutive L1-reuse units of one size (PyPTO re-hashes a merged
    group by its members, so groups of another size are another class), in order of each run's first."""
    by_size: dict[int, list[int]] = {}  # size -> the indices of its units, in order
    for i, u in enumerate(units):
        by_size.setdefault(len(u), []).append(i)
    runs = [ix[i:i + nbn] for ix in by_size.values() for i in range(0, len(ix), nbn)]
    return [sum((units[i] for i in run), []) for run in sorted(runs)]


def _split_k_tasks(tg: GroupTasks, g: Group, opts: PassOptions) -> None:
    """Rule split-k-partials-summed-on-aiv: a split-K matmul's partial AIC tasks and their AIV sum."""
    nbn = _count(opts.cube_nbuffer_setting, g.hash_order, g.labels)[0]
    for kind, body, units, info in split_k_bodies(g.ops[0], max(1, int(nbn or 1)), tg.aliases, tg.params, tg.fire):
        tg.add(kind, g, body, units, info)


def _shared_a_tasks(tg: GroupTasks, g: Group, l1n: int) -> None:
    """Rule l1-reuse-shared-a: matmuls sharing their A block; the set's first group lays out all its tasks."""
    share = tg.shared_a[g.gid]
    if share.gids[0] == g.gid:
        for body, tiles, info in shared_a_bodies([tg.groups[i].ops[0] for i in share.gids], l1n, tg.aliases, tg.params,
                                                 tg.fire):
            tg.add("AIC", g, body, tiles, info)


def _cube_tasks(tg: GroupTasks, g: Group, opts: PassOptions) -> None:
    """Rule cube-task-per-output-tile: a matmul's output tiles as AIC tasks, merged by l1_reuse and cube_nbuffer."""
    tg.fire("cube-task-per-output-tile")
    op = g.ops[0]
    order = tg.l1_order.get(g.gid, g.hash_order)
    if order != g.hash_order:
        tg.fire("l1-hash-classes")  # an earlier matmul of its structure took its key
    l1n, l1raw = _count(opts.cube_l1_reuse_setting, order, g.labels)
    if l1n is None:  # rule l1-reuse-auto: no setting for the group, PyPTO sizes the merge itself
        l1n = g.grid[0] * g.grid[1] // (AUTO_L1_SUBGRAPHS_PER_CORE * max(1, tg.params.aic))
        if l1n > 1:
            tg.fire("l1-reuse-auto")
    l1n = max(1, int(l1n))
    static_a = not unrolled(op, tg.record) and op.inputs[0].uid not in tg.root_info[g.root]["vector_made"]
    side = l1raw[1] if isinstance(l1raw, tuple) else "right"
    # with one n tile there is no n neighbour to share A with: the B block repeats and m tiles pair
    if (l1n > 1 and side == "right" and g.grid[1] > 1
            and a_through_shared_view(op, tg.near.roots[g.root], tg.near.by_root[g.root])):
        side = "left"
        tg.fire("l1-reuse-shared-view-a")
    units = l1_reuse_units(g.grid, l1n, side, static_a, tg.fire)
    nbn, _ = _count(opts.cube_nbuffer_setting, g.hash_order, g.labels)
    nbn = 1 if nbn is None else max(1, int(nbn))
    merged = _pairs_by_size(units, nbn)
    if len(merged) < len(units):
        tg.fire("cube-nbuffer-merge")
    for pairs in merged:
        body, decided = tg.lowering.cube(g.ops, pairs)
        if decided:
            tg.fire("l1-keeps-first-and-last-blocks")
        info = []
        if l1n > 1 and len(pairs) > 1:
            info.append(f"l1ReuseInfo hashOrder: {g.hash_order}, subGraphCount: {min(l1n, len(pairs))}")
        if nbn > 1 and len(pairs) > 1:
            info.append(f"cubeMergeInfo hashOrder: {g.hash_order}, subGraphCount: {len(pairs)}")
        tg.add("AIC", g, body, tuple(pairs), "; ".join(info))
