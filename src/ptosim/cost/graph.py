"""From a RunRecord to PyPTO-like tasks: roots, subgraphs, merges, dependencies, device tasks.

* A **root** is one loop-body instance (the ops of one iteration of the innermost loop), or a run of
  ops outside any loop (PyPTO wraps those in an implicit ``loop(1)``).
* Inside a root, vector ops that feed each other on the same row-tile grid and cube depth form a
  **group** (the rules are in partition.py); each row block (and column tile: vec_units.py) is one AIV task. A group whose summed UB buffers exceed the profile's
  limit, and whose result is the A operand of a matmul with N >= ``vec_split_min_consumer_n``, is
  split by peeling ops off its end (PyPTO splits the [4, 4096] RMSNorm tile before its final cast
  that way when N >= 1024, whatever the cube tile). Each matmul is a group of AIC tasks, one per ``mL0 x nL0`` output tile.
* ``vec_nbuffer_setting`` / ``cube_l1_reuse_setting`` / ``cube_nbuffer_setting`` merge N isomorphic
  tasks of a group into one (copy-ins of a shared block are then done once).
* Dependencies come from the tensors the tasks copy in and out. Tasks of a group that wait for the
  same >= 3 tasks do so through one sync (HUB) task, as do >= 3 readers of a root's views (start);
  the writers of a root's assembles feed an end sync task (PyPTO's task topology shows all three).
* Roots are stitched ``stitch_function_max_num`` at a time into **device tasks**, which run one
  after the other.

The Task record, the tensor aliases and the edges between tasks are in tasks.py; which ops share a
task, and which reshapes and views are tasks, in partition.py; the Group record and who reads what
a group makes in groups.py; a group's tasks, per kind of group, in group_tasks.py.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..options import RuntimeOptions
from ..record import OpRecord, RunRecord, TensorRef
from .group_tasks import GroupTasks, lower_group
from .groups import Group, Reads, consumer_n
from .nbuffer import RootNeighbours
from .l1_share import shared_a_sets
from .lookups import forget_counts, jit_scope as _jit_scope, reads_of_made as _reads_of_made
from .lookups import scope_options as _scope_options
from .lower import forget_grids, forget_tile_ops, rows_cols, vec_grid
from .lower_cube import cube_grid, forget_plans
from .params import CostParams
from .partition import (chains, copied_assembles, copied_views, group_grid, reshape_tasks, vec_groups, vector_results,
                        view_sources)
from .fired import Fired
from .tasks import Aliases, RootInfo, Task, dependencies, device_tasks, sync_tasks
from .vec_units import split_over_ub

__all__ = ["Task", "Graph", "build_graph"]


@dataclass
class Graph:
    tasks: list[Task]
    roots: list[RootInfo]
    devices: list[list[int]]  #: task ids per device task
    runtime: RuntimeOptions
    notes: list[str]
    refs: dict[int, TensorRef]
    op_names: dict[int, str] = field(default_factory=dict)  #: record seq -> op name
    fired: Fired = field(default_factory=Fired)  #: the cost rules applied (ptosim.cost.rules)


@dataclass
class _Build:
    """What the passes of one build share: the record, its tensors and aliases, the roots and groups made so far."""

    record: RunRecord
    params: CostParams
    refs: dict[int, TensorRef]  #: uid -> the tensor, as first recorded
    aliases: Aliases
    reshaped: dict[int, str]  #: uid of an in-place reshape of a kernel argument -> the reshape's label
    jit: Mapping[str, Any] | None  #: the kernel's jit scope (lookups.jit_scope)
    runtime: RuntimeOptions
    fire: Fired = field(default_factory=Fired)
    root_info: list[RootInfo] = field(default_factory=list)
    groups: list[Group] = field(default_factory=list)


class _Pending(NamedTuple):
    """A group of a root before it is numbered: its first op's seq, unit, ops and grid."""

    seq: int
    unit: str  #: "V" or "C"
    ops: list[OpRecord]
    grid: tuple[int, ...]


# --- build --------------------------------------------------------------------------------------


def build_graph(record: RunRecord, params: CostParams) -> Graph:
    try:
        return _build_graph(record, params)
    finally:
        forget_counts()
        forget_grids()
        forget_plans()
        forget_tile_ops()


def _build_graph(record: RunRecord, params: CostParams) -> Graph:
    """The passes: roots and their groups, who reads what, each group's tasks, then edges, syncs and device tasks."""
    b = _start(record, params)
    roots = _roots(record.ops)
    for r, root_ops in enumerate(roots):
        _root_groups(b, r, root_ops)
    reads = Reads(record.ops, b.groups, b.refs, b.aliases)
    # tasks (a task of the same structure as an earlier one, in another root, is replayed: template.py)
    near = RootNeighbours(roots, b.groups, lambda o: o.op in ("view", "reshape") or chains(o))
    tg = GroupTasks(record, params, b.aliases, b.groups, b.root_info, reads, near, shared_a_sets(b.groups), b.jit, b.fire)
    for g in b.groups:
        lower_group(tg, g)
    return _finish(b, tg.tasks)


def _start(record: RunRecord, params: CostParams) -> _Build:
    """The build's tensors (uid -> first ref), aliases, in-place reshapes of arguments and runtime options."""
    refs: dict[int, TensorRef] = {}
    for op in record.ops:
        for t in op.inputs:
            refs.setdefault(t.uid, t)
        if op.output is not None:
            refs.setdefault(op.output.uid, op.output)
    aliases = Aliases(record.ops, refs)
    reshaped = {o.output.uid: o.label for o in record.ops if o.op == "reshape" and o.attrs.get("inplace")
                and o.inputs and o.inputs[0].kind == "gm" and o.output is not None}
    jit = _jit_scope(record)
    runtime, _ = _scope_options(record, None, jit)
    return _Build(record, params, refs, aliases, reshaped, jit, runtime)


# --- roots and their groups ---------------------------------------------------------------------


def _roots(ops: list[OpRecord]) -> list[list[OpRecord]]:
    """PyPTO's roots: one per loop-body instance (ops of one iteration), or per run of ops outside loops."""
    roots: list[list[OpRecord]] = []
    key = k = None
    loops: object = None
    for op in ops:
        if op.loops is not loops or not roots:  # ops of one iteration share their frames: their key is worked out once
            loops = op.loops
            k = tuple(f.pass_key for f in loops)
        if not roots or k != key:
            roots.append([])
            key = k
        roots[-1].append(op)
    return roots


def _root_info(record: RunRecord, r: int, root_ops: list[OpRecord]) -> RootInfo:
    """What the sync and device-task passes need of root ``r``: its loops, scopes, views, assembles, results."""
    frames = root_ops[0].loops
    outer = record.scopes.get(frames[0].scope, {}) if frames else {}
    return {"index": r, "loops": [(f.name, f.index, f.iteration, f.factor) for f in frames],
            "views": any(o.op == "view" for o in root_ops),
            "assembles": any(o.op == "assemble" for o in root_ops),
            "scope": frames[-1].scope if frames else None,
            "outer": frames[0].scope if frames else None,
            "submit_before_loop": bool(outer.get("submit_before_loop")) if isinstance(outer, dict) else False,
            "made": {o.output.uid for o in root_ops if o.unit == "S" and o.output is not None},
            "vector_made": vector_results(root_ops)}


def _root_groups(b: _Build, r: int, root_ops: list[OpRecord]) -> None:
    """Root ``r``'s info and groups: its vector groups (split over UB), copy tasks and matmuls, numbered in op order."""
    b.root_info.append(_root_info(b.record, r, root_ops))
    pending: list[_Pending] = []
    vorder, nvgs = _vector_parts(b, root_ops, pending)
    _copy_tasks(b, root_ops, pending)
    for o in root_ops:
        if o.unit == "C":
            pending.append(_Pending(o.seq, "C", [o], cube_grid(o)))
    _number_groups(b, r, pending, vorder, nvgs)


def _vector_parts(b: _Build, root_ops: list[OpRecord], pending: list[_Pending]) -> tuple[dict[int, int], int]:
    """The root's vector groups (partition.py), each split for the UB if a wide matmul reads it; returns
    first seq of each part -> its hash order, and the number of vector groups."""
    fire = b.fire
    vgs = vec_groups(root_ops, b.aliases, fire)
    # rule vec-hash-order-from-end: PyPTO numbers the vector hash groups of a root from its end; the
    # parts of a split group share the number
    rank = _hash_ranks(vgs, root_ops, fire)
    vorder: dict[int, int] = {}
    for i, vg in enumerate(vgs):
        grid = group_grid(vg)
        if len(vg) > 1:
            fire("vec-fuse-same-grid-and-stage")
            if any(vec_grid(o)[:2] != grid for o in vg):
                fire("vec-fuse-whole-blocks")
        # rule vec-split-over-ub: PyPTO splits an over-full vector subgraph only when a wide matmul reads it
        wide = consumer_n(vg, root_ops) >= b.params.cost.vec_split_min_consumer_n
        parts = split_over_ub(vg, grid, b.aliases, b.params) if wide else [vg]
        if len(parts) > 1:
            fire("vec-split-over-ub")
        for part in parts:
            vorder[part[0].seq] = rank[i]
            pending.append(_Pending(part[0].seq, "V", part, grid))
    return vorder, len(vgs)


def _hash_ranks(vgs: list[list[OpRecord]], root_ops: list[OpRecord], fire: Fired) -> list[int]:
    """Each vector group's hash order: from the root's end (rule vec-hash-order-from-end), except that the
    groups whose result a matmul reads through a view come first (rule vec-hash-order-viewed-a-first)."""
    src = view_sources(root_ops)
    viewed = {src[o.inputs[0].uid] for o in root_ops if o.unit == "C" and o.inputs[0].uid in src}
    first = [i for i, vg in enumerate(vgs) if any(o.output is not None and o.output.uid in viewed for o in vg)]
    order = first + [i for i in reversed(range(len(vgs))) if i not in first]
    if first and order != list(reversed(range(len(vgs)))):
        fire("vec-hash-order-viewed-a-first")
    rank = [0] * len(vgs)
    for n, i in enumerate(order):
        rank[i] = n
    return rank


def _copy_tasks(b: _Build, root_ops: list[OpRecord], pending: list[_Pending]) -> None:
    """The root's copy tasks: copying reshapes, copied views of reshaped arguments, copied assembles per head."""
    fire, aliases = b.fire, b.aliases
    for o in reshape_tasks(root_ops, aliases, fire):
        R, C = rows_cols(o.output.shape)
        pending.append(_Pending(o.seq, "V", [o], (R, R, C, C)))
    for o in copied_views(root_ops, b.reshaped):
        fire("copied-view-task")
        R, C = rows_cols(o.output.shape)
        aliases.read.pop(o.output.uid, None)  # a copy: its readers wait for the task, not the argument
        pending.append(_Pending(o.seq, "V", [o], (R, R, C, C)))
    for o in copied_assembles(root_ops):
        fire("copied-assemble-per-head")
        R, C = rows_cols(o.inputs[0].shape)
        heads = math.prod(o.inputs[0].shape[1:-1])  # one task per index of the middle dims
        aliases.write.pop(o.inputs[0].uid, None)  # a copy: the buffer's readers wait for its tasks
        pending.append(_Pending(o.seq, "V", [o], (R, max(1, R // max(1, heads)), C, C)))


def _number_groups(b: _Build, r: int, pending: list[_Pending], vorder: dict[int, int], nvgs: int) -> None:
    """Root ``r``'s groups in op order, with their hash orders (vector groups' from the root's end) and families."""
    counters: Counter[str] = Counter()
    groups = b.groups
    for _seq, unit, ops, grid in sorted(pending, key=lambda x: x[0]):
        named = b.reshaped.get(ops[0].inputs[0].uid, "") if ops[0].op == "view" else ""
        h = vorder.get(ops[0].seq, nvgs + counters[unit]) if unit == "V" else counters[unit]
        fam = (r, h) if ops[0].seq in vorder else (r, -1 - len(groups))
        groups.append(Group(len(groups), r, unit, ops, grid, h, named, fam))
        counters[unit] += 1


# --- edges, syncs, device tasks -----------------------------------------------------------------


def _finish(b: _Build, tasks: list[Task]) -> Graph:
    """The tasks' edges, device tasks (roots stitched) and sync (HUB) tasks, as the Graph."""
    fire = b.fire
    dependencies(tasks, b.aliases, fire)
    ndev = len(device_tasks(tasks, b.root_info, b.runtime, fire))
    # sync_tasks asks which tasks read a tensor a root of S ops made: only those tensors are kept
    made = set().union(*(info["made"] for info in b.root_info))
    sync_tasks(tasks, b.root_info, b.aliases, _reads_of_made(b.record, tasks, made), fire)
    devices: list[list[int]] = [[] for _ in range(ndev)]
    for t in tasks:
        devices[t.device].append(t.id)
    notes: list[str] = []
    runtime = b.runtime
    if runtime.stitch_function_max_num and len(devices) > 1:
        fire("device-task-stitch")
        notes.append(f"{len(b.root_info)} roots stitched {runtime.stitch_function_max_num} at a time into "
                     f"{len(devices)} device tasks; each waits for the previous one")
    return Graph(tasks, b.root_info, devices, runtime, notes, b.refs, {o.seq: o.op for o in b.record.ops}, fire)
