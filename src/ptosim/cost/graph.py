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
task, and which reshapes and views are tasks, in partition.py.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..options import RuntimeOptions
from ..record import OpRecord, RunRecord, TensorRef
from .col_reduce import column_reduce, column_reduce_bodies
from .cube_units import l1_reuse_units
from .l1_share import shared_a_bodies, shared_a_sets
from .lookups import count as _count, forget_counts, jit_scope as _jit_scope, reads_of_made as _reads_of_made
from .lookups import scope_options as _scope_options
from .lower import Body, forget_grids, forget_tile_ops, rows_cols, vec_grid
from .lower_cube import cube_grid, forget_plans, has_bias, split_k_bodies
from .params import CostParams
from .partition import (chains, copied_assembles, copied_views, group_grid, reshape_tasks, unrolled, vec_groups,
                        vector_results)
from .rules import Fired
from .tasks import Aliases, RootInfo, Task, dependencies, device_tasks, sync_tasks
from .template import Lowering
from .vec_units import column_tiles, split_over_ub, ub_bytes, vec_units

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


#: who reads a tensor, when not a group of vector or cube ops nor a link through a reshape: any S op
#: (``needs_out`` asks only whether a reader is another group than the asking one)
_OTHER = ("S",)


# --- roots -------------------------------------------------------------------------------


def _roots(ops: list[OpRecord]) -> list[list[OpRecord]]:
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


# --- groups -------------------------------------------------------------------------------------


@dataclass
class Group:
    gid: int
    root: int
    unit: str  #: "V" or "C"
    ops: list[OpRecord]
    grid: tuple[int, ...]
    hash_order: int = 0
    named: str = ""  #: a label the group takes from elsewhere (a copied view: its reshape's)
    family: tuple[int, int] = (-1, -1)  #: shared by the parts of a vector group split for the UB (one hash group in PyPTO)

    def __post_init__(self) -> None:
        # worked out once (asked per task); the ops of a group do not change once it is made. Plain
        # attributes, not cached_property, whose lock cost ~4 % of a long estimate (Python 3.11)
        self.label: str = self._label()
        self.labels: list[str] = sorted({o.label for o in self.ops if o.label})

    def _label(self) -> str:
        # the label most of its ops carry, the later one on a tie (PyPTO's swimlane: the last block's
        # o update + o / l + cast is "finalize_store", the rescale with o·α is "softmax.rescale")
        if self.named:
            return self.named
        labels = [o.label for o in self.ops if o.label]
        if not labels:
            return ""
        if labels.count(labels[0]) == len(labels):  # one label: most groups
            return labels[0]
        n = Counter(labels)
        return max(reversed(labels), key=lambda lab: n[lab])


def _consumer_n(ops: list[OpRecord], root_ops: list[OpRecord]) -> int:
    """The largest N of the matmuls that take the group's results as their A operand (0 if none)."""
    made = {o.output.uid for o in ops if o.output is not None}
    return max((int(o.attrs.get("n", 0)) for o in root_ops
                if o.unit == "C" and any(t.uid in made for t in o.inputs[:1])), default=0)


def _mergeable(groups: list[Group]) -> set[int]:
    """The vector groups PyPTO's n-buffer merge may merge. It merges instances that share their input
    subgraphs, or else their output ones; an instance fed by (or feeding) its own task of another vector
    group of the root shares neither (rule vec-merge-needs-shared-neighbour)."""
    made_by = {o.output.uid: g.gid for g in groups for o in g.ops if o.output is not None}
    prods: dict[int, set[int]] = defaultdict(set)
    cons: dict[int, set[int]] = defaultdict(set)
    for g in groups:
        for o in g.ops:
            for t in o.inputs:
                p = made_by.get(t.uid)
                if p is not None and groups[p].family != g.family and groups[p].root == g.root:
                    prods[g.gid].add(p)
                    cons[p].add(g.gid)

    split = {g.gid for g in groups if g.unit == "V" and column_tiles(g.ops) > 1}

    def shared(others: set[int]) -> bool:  # every instance meets the same (cube) subgraphs
        return bool(others) and all(groups[o].unit == "C" for o in others)

    def whole_rows(others: set[int], cube: bool) -> bool:  # one task per row block: met by all its column tiles
        return bool(others) and all((groups[o].unit == "C" and cube) or (groups[o].unit == "V" and o not in split)
                                    for o in others)

    # a group run per column tile reads each column from its own cube task; a matmul reading it (all its
    # columns) or a vector task of whole rows is shared by its column tiles (rule vec-task-per-column-tile)
    return {g.gid for g in groups if g.unit == "V" and (
        (g.gid not in split and (shared(prods[g.gid]) or shared(cons[g.gid])))
        or (g.gid in split and (whole_rows(prods[g.gid], False) or whole_rows(cons[g.gid], True))))}


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
    notes: list[str] = []
    fire = Fired()

    # groups per root
    groups: list[Group] = []
    root_info: list[RootInfo] = []
    for r, root_ops in enumerate(_roots(record.ops)):
        frames = root_ops[0].loops
        outer = record.scopes.get(frames[0].scope, {}) if frames else {}
        root_info.append({"index": r, "loops": [(f.name, f.index, f.iteration, f.factor) for f in frames],
                          "views": any(o.op == "view" for o in root_ops),
                          "assembles": any(o.op == "assemble" for o in root_ops),
                          "scope": frames[-1].scope if frames else None,
                          "outer": frames[0].scope if frames else None,
                          "submit_before_loop": bool(outer.get("submit_before_loop")) if isinstance(outer, dict) else False,
                          "made": {o.output.uid for o in root_ops if o.unit == "S" and o.output is not None},
                          "vector_made": vector_results(root_ops)})
        order: list[tuple[int, str, list[OpRecord], tuple[int, ...]]] = []
        vgs = vec_groups(root_ops, aliases, fire)
        # rule vec-hash-order-from-end: PyPTO numbers the vector hash groups of a root from its end; the
        # parts of a split group share the number
        vorder: dict[int, int] = {}
        for i, vg in enumerate(vgs):
            grid = group_grid(vg)
            if len(vg) > 1:
                fire("vec-fuse-same-grid-and-stage")
                if any(vec_grid(o)[:2] != grid for o in vg):
                    fire("vec-fuse-whole-blocks")
            # rule vec-split-over-ub: PyPTO splits an over-full vector subgraph only when a wide matmul reads it
            wide = _consumer_n(vg, root_ops) >= params.cost.vec_split_min_consumer_n
            parts = split_over_ub(vg, grid, aliases, params) if wide else [vg]
            if len(parts) > 1:
                fire("vec-split-over-ub")
            for part in parts:
                vorder[part[0].seq] = len(vgs) - 1 - i
                order.append((part[0].seq, "V", part, grid))
        for o in reshape_tasks(root_ops, aliases, fire):
            R, C = rows_cols(o.output.shape)
            order.append((o.seq, "V", [o], (R, R, C, C)))
        for o in copied_views(root_ops, reshaped):
            fire("copied-view-task")
            R, C = rows_cols(o.output.shape)
            aliases.read.pop(o.output.uid, None)  # a copy: its readers wait for the task, not the argument
            order.append((o.seq, "V", [o], (R, R, C, C)))
        for o in copied_assembles(root_ops):
            fire("copied-assemble-per-head")
            R, C = rows_cols(o.inputs[0].shape)
            heads = math.prod(o.inputs[0].shape[1:-1])  # one task per index of the middle dims
            aliases.write.pop(o.inputs[0].uid, None)  # a copy: the buffer's readers wait for its tasks
            order.append((o.seq, "V", [o], (R, max(1, R // max(1, heads)), C, C)))
        for o in root_ops:
            if o.unit == "C":
                order.append((o.seq, "C", [o], cube_grid(o)))
        counters: Counter[str] = Counter()
        for _seq, unit, ops, grid in sorted(order, key=lambda x: x[0]):
            named = reshaped.get(ops[0].inputs[0].uid, "") if ops[0].op == "view" else ""
            h = vorder.get(ops[0].seq, len(vgs) + counters[unit]) if unit == "V" else counters[unit]
            fam = (r, h) if ops[0].seq in vorder else (r, -1 - len(groups))
            groups.append(Group(len(groups), r, unit, ops, grid, h, named, fam))
            counters[unit] += 1

    # which group reads each tensor (to decide copy-outs), and the reads a group serves from UB
    member = {o.seq: g.gid for g in groups for o in g.ops}
    held: dict[int, tuple[int, int, int]] = {}  # uid -> (group, the group's result uid, from seq)
    links: dict[int, dict[int, tuple[int, int]]] = defaultdict(dict)
    readers: dict[int, Any] = {}  # uid -> who reads it: one reader, or a set of two or more
    for op in record.ops:
        who = member.get(op.seq, _OTHER)
        if isinstance(who, int):  # a vector or cube op of a group
            for t in op.inputs:
                h = held.get(t.uid)
                if h is not None and h[0] == who:
                    links[who][t.uid] = (h[1], h[2])
            if op.output is not None:
                held[op.output.uid] = (who, op.output.uid, op.seq)
        elif op.unit == "S" and op.output is not None and op.inputs and op.inputs[0].uid in held and (
                chains(op)):
            gid, src, _ = held[op.inputs[0].uid]
            held[op.output.uid] = (gid, src, op.seq)
            if op.op == "reshape" and op.output.uid != op.inputs[0].uid:
                who = ("link", op.output.uid)
        else:
            if op.output is not None:
                held.pop(op.output.uid, None)
        if op.unit == "S" and op.op in ("view", "reshape") and not (isinstance(who, tuple) and who[0] == "link"):
            who = _OTHER
        for t in op.inputs:  # one reader is kept bare, two or more in a set (most tensors have one)
            had = readers.get(t.uid, who)
            if had is not who and had != who:
                if isinstance(had, set):
                    had.add(who)
                else:
                    readers[t.uid] = {had, who}
            else:
                readers[t.uid] = had

    def needs_out(gid: int):
        def check(uid: int, seen: frozenset[int] = frozenset()) -> bool:
            ref = refs.get(uid)
            if ref is not None and ref.kind in ("gm", "buffer"):
                return True
            if uid in aliases.write:
                return True
            ws = readers.get(uid)
            ws = () if ws is None else ws if isinstance(ws, set) else (ws,)
            return any((w[1] not in seen and check(w[1], seen | {uid})) if isinstance(w, tuple) and w[0] == "link"
                       else w != gid for w in ws)
        return check

    may_merge = _mergeable(groups)
    shared_a = shared_a_sets(groups)
    family_merge: dict[tuple[int, int], int] = {}  # the merge count a split group's first part settled on

    # tasks (a task of the same structure as an earlier one, in another root, is replayed: template.py)
    tasks: list[Task] = []
    lowering = Lowering(aliases, params)
    for g in groups:
        _, pass_opts = _scope_options(record, root_info[g.root]["scope"], jit)
        cr = column_reduce(g.ops) if g.unit == "V" else None
        if g.unit == "C" and has_bias(g.ops[0]):
            fire("cube-bias-per-output-tile")
        if cr is not None:  # its own task structure: rule column-reduce-through-gm
            fire("column-reduce-through-gm")
            nbuf = _count(pass_opts.vec_nbuffer_setting, g.hash_order, g.labels)[0]
            for body, inst, info in column_reduce_bodies(cr, g.grid, max(1, int(nbuf or 1)), needs_out(g.gid), aliases, params):
                tasks.append(_task(len(tasks), "AIV", g, body, inst, info))
        elif g.unit == "V":
            fire("vec-task-per-row-block")
            if any("cache_rows" in o.attrs for o in g.ops):
                fire("scatter-writes-gm")  # lower_vec writes no COPY_OUT after a scatter
            nct = column_tiles(g.ops)
            if nct > 1:
                fire("vec-task-per-column-tile")
            units = vec_units(g.grid[0], g.grid[1], nct)
            n = len(units)
            # a group run per column tile was not reached by its hash order's key, only by -1 (rule
            # vec-task-per-column-tile): looked up under an order no key names
            h = g.hash_order if nct == 1 else 1 + max(pass_opts.vec_nbuffer_setting.by_int, default=0)
            count, _raw = _count(pass_opts.vec_nbuffer_setting, h, g.labels)
            nmerge = 1 if count is None else max(1, int(count))
            if nmerge > 1 and h in pass_opts.vec_nbuffer_setting.by_int:
                fire("vec-hash-order-from-end")
            if n < params.cost.vec_merge_min_tasks or g.gid not in may_merge:
                if nmerge > 1 and n >= params.cost.vec_merge_min_tasks:
                    fire("vec-merge-needs-shared-neighbour")
                nmerge = 1
            # merged tasks share the UB: they must fit it (rule vec-merge-fits-ub)
            while nmerge > 1 and ub_bytes(g.ops, g.grid, units[:nmerge], aliases, params) > params.ub_bytes:
                fire("vec-merge-fits-ub")
                nmerge //= 2
            nmerge = family_merge.setdefault(g.family, nmerge)
            chunks = [units[i:i + nmerge] for i in range(0, n, nmerge)]
            if len(chunks) < n:
                fire("vec-nbuffer-merge")
            for chunk in chunks:
                body = lowering.vec(g.ops, g.grid, chunk, needs_out(g.gid), links.get(g.gid))
                tasks.append(_task(len(tasks), "AIV", g, body, tuple(chunk),
                                   f"vecMergeInfo hashOrder: {g.hash_order}, subGraphCount: {len(chunk)}" if len(chunk) > 1 else ""))
        elif g.ops[0].attrs.get("split_k"):  # its own task structure: rule split-k-partials-summed-on-aiv
            nbn = _count(pass_opts.cube_nbuffer_setting, g.hash_order, g.labels)[0]
            for kind, body, units, info in split_k_bodies(g.ops[0], max(1, int(nbn or 1)), aliases, params, fire):
                tasks.append(_task(len(tasks), kind, g, body, units, info))
        elif g.gid in shared_a and (l1n := int(_count(pass_opts.cube_l1_reuse_setting, g.hash_order, g.labels)[0] or 1)) > 1:
            share = shared_a[g.gid]
            if share.gids[0] == g.gid:  # the set's first group lays out the whole set's tasks
                for body, tiles, info in shared_a_bodies([groups[i].ops[0] for i in share.gids], l1n, aliases, params, fire):
                    tasks.append(_task(len(tasks), "AIC", g, body, tiles, info))
        else:
            fire("cube-task-per-output-tile")
            op = g.ops[0]
            l1n, l1raw = _count(pass_opts.cube_l1_reuse_setting, g.hash_order, g.labels)
            l1n = 1 if l1n is None else max(1, int(l1n))
            static_a = not unrolled(op, record) and op.inputs[0].uid not in root_info[g.root]["vector_made"]
            units = l1_reuse_units(g.grid, l1n, l1raw[1] if isinstance(l1raw, tuple) else "right", static_a, fire)
            nbn, _ = _count(pass_opts.cube_nbuffer_setting, g.hash_order, g.labels)
            nbn = 1 if nbn is None else max(1, int(nbn))
            merged = [sum(units[i:i + nbn], []) for i in range(0, len(units), nbn)]
            if len(merged) < len(units):
                fire("cube-nbuffer-merge")
            for pairs in merged:
                body, decided = lowering.cube(g.ops, pairs)
                if decided:
                    fire("l1-keeps-first-and-last-blocks")
                info = []
                if l1n > 1 and len(pairs) > 1:
                    info.append(f"l1ReuseInfo hashOrder: {g.hash_order}, subGraphCount: {min(l1n, len(pairs))}")
                if nbn > 1 and len(pairs) > 1:
                    info.append(f"cubeMergeInfo hashOrder: {g.hash_order}, subGraphCount: {len(pairs)}")
                tasks.append(_task(len(tasks), "AIC", g, body, tuple(pairs), "; ".join(info)))

    dependencies(tasks, aliases, fire)
    ndev = len(device_tasks(tasks, root_info, runtime, fire))
    # sync_tasks asks which tasks read a tensor a root of S ops made: only those tensors are kept
    made = set().union(*(info["made"] for info in root_info))
    sync_tasks(tasks, root_info, aliases, _reads_of_made(record, tasks, made), fire)
    devices: list[list[int]] = [[] for _ in range(ndev)]
    for t in tasks:
        devices[t.device].append(t.id)
    if runtime.stitch_function_max_num and len(devices) > 1:
        fire("device-task-stitch")
        notes.append(f"{len(root_info)} roots stitched {runtime.stitch_function_max_num} at a time into "
                     f"{len(devices)} device tasks; each waits for the previous one")
    return Graph(tasks, root_info, devices, runtime, notes, refs, {o.seq: o.op for o in record.ops}, fire)


def _task(tid: int, kind: str, g: Group, body: Body, instances: tuple, merge: str) -> Task:
    return Task(tid, kind, g.label, g.root, g.gid, body.ops, tuple(dict.fromkeys(body.record_ops)), instances,
                merge=merge, reads=body.reads, writes=body.writes)


