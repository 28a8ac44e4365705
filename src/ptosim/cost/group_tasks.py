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
from .l1_share import SharedA, shared_a_bodies
from .lookups import count as _count, scope_options
from .lower import Body
from .lower_cube import has_bias, split_k_bodies
from .nbuffer import RootNeighbours, merge_chunks
from .params import CostParams
from .partition import unrolled
from .rules import Fired
from .tasks import Aliases, RootInfo, Task
from .template import Lowering
from .vec_units import column_tiles, vec_units

__all__ = ["GroupTasks", "lower_group"]


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
    #: the merge count a split group's first part settled on, per family
    family_merge: dict[tuple[int, int], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lowering = Lowering(self.aliases, self.params)

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
    elif g.gid in tg.shared_a and (l1n := int(_count(opts.cube_l1_reuse_setting, g.hash_order, g.labels)[0] or 1)) > 1:
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
    units = vec_units(g.grid[0], g.grid[1], nct)
    n = len(units)
    nmerge = _vec_merge(tg, g, opts, units, nct)
    chunks = merge_chunks(units, nmerge, tg.near.of(g) if nmerge > 1 else None)
    if nmerge > 1 and len(chunks) == n:
        tg.fire("vec-merge-needs-shared-neighbour")
    if len(chunks) < n:
        tg.fire("vec-nbuffer-merge")
    needs_out, links = tg.reads.needs_out(g.gid), tg.reads.links.get(g.gid)
    for chunk in chunks:
        body = tg.lowering.vec(g.ops, g.grid, chunk, needs_out, links)
        tg.add("AIV", g, body, tuple(chunk),
               f"vecMergeInfo hashOrder: {g.hash_order}, subGraphCount: {len(chunk)}" if len(chunk) > 1 else "")


def _vec_merge(tg: GroupTasks, g: Group, opts: PassOptions, units: list, nct: int) -> int:
    """How many of a vector group's tasks vec_nbuffer_setting merges into one (its rules' conditions)."""
    params = tg.params
    # a group run per column tile was not reached by its hash order's key, only by -1 (rule
    # vec-task-per-column-tile): looked up under an order no key names
    h = g.hash_order if nct == 1 else 1 + max(opts.vec_nbuffer_setting.by_int, default=0)
    count, _raw = _count(opts.vec_nbuffer_setting, h, g.labels)
    nmerge = 1 if count is None else max(1, int(count))
    if nmerge > 1 and h in opts.vec_nbuffer_setting.by_int:
        tg.fire("vec-hash-order-from-end")
    if len(units) < params.cost.vec_merge_min_tasks:
        nmerge = 1
    return tg.family_merge.setdefault(g.family, nmerge)


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
    l1n, l1raw = _count(opts.cube_l1_reuse_setting, g.hash_order, g.labels)
    l1n = 1 if l1n is None else max(1, int(l1n))
    static_a = not unrolled(op, tg.record) and op.inputs[0].uid not in tg.root_info[g.root]["vector_made"]
    units = l1_reuse_units(g.grid, l1n, l1raw[1] if isinstance(l1raw, tuple) else "right", static_a, tg.fire)
    nbn, _ = _count(opts.cube_nbuffer_setting, g.hash_order, g.labels)
    nbn = 1 if nbn is None else max(1, int(nbn))
    merged = [sum(units[i:i + nbn], []) for i in range(0, len(units), nbn)]
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
