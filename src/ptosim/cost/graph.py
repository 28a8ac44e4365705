"""From a RunRecord to PyPTO-like tasks: roots, subgraphs, merges, dependencies, device tasks.

* A **root** is one loop-body instance (the ops of one iteration of the innermost loop), or a run of
  ops outside any loop (PyPTO wraps those in an implicit ``loop(1)``).
* Inside a root, vector ops that feed each other on the same row-tile grid form a **group**; each
  row block of the grid is one AIV task. A group whose summed UB buffers exceed the profile's
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
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..options import MergeSetting, PassOptions, RuntimeOptions
from ..record import OpRecord, RunRecord, TensorRef
from .lower import Body, Box, L1Blocks, TileOp, cube_grid, lower_cube, lower_vec, rows_cols, vec_grid
from .params import CostParams

__all__ = ["Task", "Graph", "build_graph"]

#: PyPTO routes a join through a sync (HUB) task only from 3 producers (or 3 view readers) up;
#: with 2 producers every consumer waits on both directly (seen in its task topology).
_SYNC_MIN = 3


@dataclass
class Task:
    id: int
    kind: str  #: "AIC", "AIV" or "HUB"
    label: str
    root: int
    group: int
    ops: list[TileOp] = field(default_factory=list)
    record_ops: tuple[int, ...] = ()
    instances: tuple[Any, ...] = ()
    preds: set[int] = field(default_factory=set)
    succs: list[int] = field(default_factory=list)
    device: int = 0
    merge: str = ""
    reads: list[tuple[int, Box, bool]] = field(default_factory=list)
    writes: list[tuple[int, Box]] = field(default_factory=list)
    # filled by the core and the scheduler
    duration: int = 0
    busy: dict[str, int] = field(default_factory=dict)
    op_times: list[tuple[int, int]] = field(default_factory=list)
    l2_hits: int = 0
    l2_misses: int = 0
    start: int = 0
    end: int = 0
    core: int = -1


@dataclass
class Graph:
    tasks: list[Task]
    roots: list[dict[str, Any]]
    devices: list[list[int]]  #: task ids per device task
    runtime: RuntimeOptions
    notes: list[str]
    refs: dict[int, TensorRef]
    op_names: dict[int, str] = field(default_factory=dict)  #: record seq -> op name


# --- options ---------------------------------------------------------------------------------


def _scope_options(record: RunRecord, scope: int | None) -> tuple[RuntimeOptions, PassOptions]:
    jit = next((s for s in record.scopes.values() if s.get("kind") == "jit"), None)
    chosen = record.scopes.get(scope) if scope is not None else None
    src = chosen or jit
    if src is None:
        return RuntimeOptions(), PassOptions()
    return src.get("runtime") or RuntimeOptions(), src.get("pass") or PassOptions()


def _count(setting: MergeSetting, hash_order: int, labels: list[str]) -> tuple[int | None, Any]:
    raw = setting.lookup(hash_order, labels)
    return setting.granularity(hash_order, labels), raw


# --- roots and aliases -------------------------------------------------------------------------


def _roots(ops: list[OpRecord]) -> list[list[OpRecord]]:
    roots: list[list[OpRecord]] = []
    key = None
    for op in ops:
        k = tuple((f.scope, f.iteration, f.factor) for f in op.loops)
        if not roots or k != key:
            roots.append([])
            key = k
        roots[-1].append(op)
    return roots


class Aliases:
    """Views (read aliases), reshapes and assembles (write aliases) of the recorded tensors."""

    def __init__(self, ops: list[OpRecord], refs: dict[int, TensorRef]) -> None:
        self.read: dict[int, tuple[int, int, int, bool]] = {}
        self.write: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        self.refs = refs
        for op in ops:
            if op.unit != "S" or op.output is None or not op.inputs:
                continue
            src, dst = op.inputs[0], op.output
            offs = tuple(op.attrs.get("offsets", ()) or ())
            dr = int(offs[-2]) if len(offs) >= 2 else 0
            dc = int(offs[-1]) if offs else 0
            if op.op == "view" and src.uid != dst.uid:
                self.read[dst.uid] = (src.uid, dr, dc, True)
            elif op.op == "reshape" and src.uid != dst.uid:
                self.read[dst.uid] = (src.uid, 0, 0, False)
            elif op.op == "assemble":
                self.write[src.uid].append((dst.uid, dr, dc))

    def resolve(self, uid: int, box: Box) -> tuple[int, Box, bool, bool]:
        via_view = False
        seen = 0
        while uid in self.read and seen < 16:
            base, dr, dc, exact = self.read[uid]
            if exact:
                box = (box[0] + dr, box[1] + dr, box[2] + dc, box[3] + dc)
                via_view = True
            else:
                r, c = rows_cols(self.refs[base].shape) if base in self.refs else (box[1], box[3])
                box = (0, r, 0, c)
            uid, seen = base, seen + 1
        ref = self.refs.get(uid)
        return uid, box, via_view, bool(ref.cacheable) if ref is not None else True

    def write_targets(self, uid: int, box: Box) -> list[tuple[int, Box]]:
        out = [(uid, box)]
        for dst, dr, dc in self.write.get(uid, ()):
            out.append((dst, (box[0] + dr, box[1] + dr, box[2] + dc, box[3] + dc)))
        return out


# --- groups -------------------------------------------------------------------------------------


@dataclass
class Group:
    gid: int
    root: int
    unit: str  #: "V" or "C"
    ops: list[OpRecord]
    grid: tuple[int, ...]
    hash_order: int = 0

    @property
    def label(self) -> str:
        labels = [o.label for o in self.ops if o.label]
        return Counter(labels).most_common(1)[0][0] if labels else ""

    @property
    def labels(self) -> list[str]:
        return sorted({o.label for o in self.ops if o.label})


def _vec_groups(root_ops: list[OpRecord]) -> list[list[OpRecord]]:
    vops = [o for o in root_ops if o.unit == "V"]
    parent = {o.seq: o.seq for o in vops}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    producer = {}
    grid = {o.seq: vec_grid(o)[:2] for o in vops}
    for o in vops:
        for t in o.inputs:
            p = producer.get(t.uid)
            if p is not None and grid[p] == grid[o.seq]:
                parent[find(o.seq)] = find(p)
        if o.output is not None:
            producer[o.output.uid] = o.seq
    groups: dict[int, list[OpRecord]] = defaultdict(list)
    for o in vops:
        groups[find(o.seq)].append(o)
    return sorted(groups.values(), key=lambda g: g[0].seq)


def _ub_bytes(ops: list[OpRecord], grid, instances, aliases: Aliases, params: CostParams) -> int:
    body = Body()
    R, tr = grid[0], grid[1]
    for j in instances:
        lower_vec(ops, j * tr, min(R, (j + 1) * tr), grid, body, lambda _u: False, aliases.resolve, params)
    return body.ub_bytes


def _consumer_n(ops: list[OpRecord], root_ops: list[OpRecord]) -> int:
    """The largest N of the matmuls that take the group's results as their A operand (0 if none)."""
    made = {o.output.uid for o in ops if o.output is not None}
    return max((int(o.attrs.get("n", 0)) for o in root_ops
                if o.unit == "C" and any(t.uid in made for t in o.inputs[:1])), default=0)


def _split(ops: list[OpRecord], grid, aliases: Aliases, params: CostParams) -> list[list[OpRecord]]:
    """Peel ops off the end until the group's UB buffers fit the limit (recursively for the tail)."""
    head, tail = list(ops), []
    while len(head) > 1 and _ub_bytes(head, grid, [0], aliases, params) > params.vec_ub_limit:
        tail.insert(0, head.pop())
    return [head] + (_split(tail, grid, aliases, params) if tail else [])


# --- build --------------------------------------------------------------------------------------


def build_graph(record: RunRecord, params: CostParams) -> Graph:
    refs: dict[int, TensorRef] = {}
    for op in record.ops:
        for t in op.inputs:
            refs.setdefault(t.uid, t)
        if op.output is not None:
            refs.setdefault(op.output.uid, op.output)
    aliases = Aliases(record.ops, refs)
    runtime, _ = _scope_options(record, None)
    notes: list[str] = []

    # groups per root
    groups: list[Group] = []
    root_info: list[dict[str, Any]] = []
    for r, root_ops in enumerate(_roots(record.ops)):
        frames = root_ops[0].loops
        root_info.append({"index": r, "loops": [(f.name, f.index, f.iteration, f.factor) for f in frames],
                          "views": any(o.op == "view" for o in root_ops),
                          "assembles": any(o.op == "assemble" for o in root_ops),
                          "scope": frames[-1].scope if frames else None})
        order: list[tuple[int, str, list[OpRecord], tuple[int, ...]]] = []
        for vg in _vec_groups(root_ops):
            grid = vec_grid(vg[0])[:2]
            # PyPTO splits an over-full vector subgraph only when a wide matmul reads its result
            wide = _consumer_n(vg, root_ops) >= params.vec_split_min_consumer_n
            parts = _split(vg, grid, aliases, params) if wide else [vg]
            for part in parts:
                order.append((part[0].seq, "V", part, grid))
        for o in root_ops:
            if o.unit == "C":
                order.append((o.seq, "C", [o], cube_grid(o)))
        counters: Counter[str] = Counter()
        for _seq, unit, ops, grid in sorted(order, key=lambda x: x[0]):
            groups.append(Group(len(groups), r, unit, ops, grid, counters[unit]))
            counters[unit] += 1

    # which group reads each tensor (to decide copy-outs)
    member = {o.seq: g.gid for g in groups for o in g.ops}
    readers: dict[int, set[Any]] = defaultdict(set)
    for op in record.ops:
        who = member.get(op.seq, ("S", op.op, op.seq))
        if op.unit == "S" and op.op in ("view", "reshape"):
            who = ("S", "alias")
        for t in op.inputs:
            readers[t.uid].add(who)

    def needs_out(gid: int):
        def check(uid: int) -> bool:
            ref = refs.get(uid)
            if ref is not None and ref.kind in ("gm", "buffer"):
                return True
            if uid in aliases.write:
                return True
            return any(w != gid for w in readers.get(uid, ()))
        return check

    # tasks
    tasks: list[Task] = []
    for g in groups:
        _, pass_opts = _scope_options(record, root_info[g.root]["scope"])
        if g.unit == "V":
            R, tr = g.grid[0], g.grid[1]
            n = -(-R // tr)
            count, _raw = _count(pass_opts.vec_nbuffer_setting, g.hash_order, g.labels)
            nmerge = 1 if count is None else max(1, int(count))
            if n < params.vec_merge_min_tasks:
                nmerge = 1
            while nmerge > 1 and _ub_bytes(g.ops, g.grid, range(min(nmerge, n)), aliases, params) > params.vec_ub_limit:
                nmerge //= 2
            chunks = [list(range(i, min(n, i + nmerge))) for i in range(0, n, nmerge)]
            for chunk in chunks:
                body = Body()
                for j in chunk:
                    lower_vec(g.ops, j * tr, min(R, (j + 1) * tr), g.grid, body, needs_out(g.gid), aliases.resolve, params)
                tasks.append(_task(len(tasks), "AIV", g, body, tuple(chunk),
                                   f"vecMergeInfo hashOrder: {g.hash_order}, subGraphCount: {len(chunk)}" if len(chunk) > 1 else ""))
        else:
            op = g.ops[0]
            mtiles, ntiles, _mt, _nt = g.grid
            l1n, l1raw = _count(pass_opts.cube_l1_reuse_setting, g.hash_order, g.labels)
            l1n = 1 if l1n is None else max(1, int(l1n))
            side = l1raw[1] if isinstance(l1raw, tuple) else "right"
            if side == "left":  # share the A block: merge along n
                units = [[(mi, nj) for nj in range(s, min(ntiles, s + l1n))] for mi in range(mtiles) for s in range(0, ntiles, l1n)]
            else:  # share the B (weight) block: merge along m
                units = [[(mi, nj) for mi in range(s, min(mtiles, s + l1n))] for s in range(0, mtiles, l1n) for nj in range(ntiles)]
            nbn, _ = _count(pass_opts.cube_nbuffer_setting, g.hash_order, g.labels)
            nbn = 1 if nbn is None else max(1, int(nbn))
            merged = [sum(units[i:i + nbn], []) for i in range(0, len(units), nbn)]
            for pairs in merged:
                body, l1 = Body(), L1Blocks(params.l1_bytes)
                for mi, nj in pairs:
                    lower_cube(op, mi, nj, body, l1, aliases.resolve, params)
                info = []
                if l1n > 1 and len(pairs) > 1:
                    info.append(f"l1ReuseInfo hashOrder: {g.hash_order}, subGraphCount: {min(l1n, len(pairs))}")
                if nbn > 1 and len(pairs) > 1:
                    info.append(f"cubeMergeInfo hashOrder: {g.hash_order}, subGraphCount: {len(pairs)}")
                tasks.append(_task(len(tasks), "AIC", g, body, tuple(pairs), "; ".join(info)))

    _dependencies(tasks, aliases)
    ndev = len(_device_tasks(tasks, root_info, runtime))
    _sync_tasks(tasks, root_info, aliases)
    devices: list[list[int]] = [[] for _ in range(ndev)]
    for t in tasks:
        devices[t.device].append(t.id)
    if runtime.stitch_function_max_num and len(devices) > 1:
        notes.append(f"{len(root_info)} roots stitched {runtime.stitch_function_max_num} at a time into "
                     f"{len(devices)} device tasks; each waits for the previous one")
    return Graph(tasks, root_info, devices, runtime, notes, refs, {o.seq: o.op for o in record.ops})


def _task(tid: int, kind: str, g: Group, body: Body, instances: tuple, merge: str) -> Task:
    return Task(tid, kind, g.label, g.root, g.gid, body.ops, tuple(dict.fromkeys(body.record_ops)), instances,
                merge=merge, reads=body.reads, writes=body.writes)


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def _dependencies(tasks: list[Task], aliases: Aliases) -> None:
    """A task depends on every earlier task that wrote a box it reads (RAW through GM/workspace)."""
    writers: dict[int, dict[int, list[tuple[Box, int]]]] = defaultdict(lambda: defaultdict(list))
    bucket: dict[int, int] = {}

    def rows_per_bucket(uid: int) -> int:
        if uid not in bucket:
            ref = aliases.refs.get(uid)
            bucket[uid] = max(16, (rows_cols(ref.shape)[0] if ref is not None else 1024) // 64)
        return bucket[uid]

    for t in tasks:
        for uid, box, _v in t.reads:
            by_bucket = writers.get(uid)
            if not by_bucket:
                continue
            b = rows_per_bucket(uid)
            for k in range(box[0] // b, (max(box[1], box[0] + 1) - 1) // b + 1):
                for wbox, w in by_bucket.get(k, ()):
                    if w != t.id and _overlap(box, wbox):
                        t.preds.add(w)
        for uid, box in t.writes:
            for target, tbox in aliases.write_targets(uid, box):
                base, bbox, _v, _c = aliases.resolve(target, tbox)
                b = rows_per_bucket(base)
                for k in range(bbox[0] // b, (max(bbox[1], bbox[0] + 1) - 1) // b + 1):
                    writers[base][k].append((bbox, t.id))


def _sync_tasks(tasks: list[Task], roots: list[dict[str, Any]], aliases: Aliases) -> None:
    """HUB tasks: one per complete join between task sets, per root start (views), per root end (assembles)."""
    by_group: dict[int, list[Task]] = defaultdict(list)
    for t in list(tasks):
        by_group[t.group].append(t)
    for members in by_group.values():
        clusters: dict[frozenset[int], list[Task]] = defaultdict(list)
        for m in members:  # tasks of a group that wait for the same set of tasks share one sync task
            clusters[frozenset(m.preds)].append(m)
        for common, cluster in clusters.items():
            if len(cluster) < 2 or len(common) < _SYNC_MIN:
                continue
            hub = Task(len(tasks), "HUB", "", cluster[0].root, -1, preds=set(common))
            tasks.append(hub)
            for m in cluster:
                m.preds = {hub.id}
    by_root: dict[int, list[Task]] = defaultdict(list)
    for t in tasks:
        if t.kind != "HUB":
            by_root[t.root].append(t)
    for r, info in enumerate(roots):
        members = by_root.get(r, [])
        if info["views"]:
            readers = [t for t in members if any(v for _u, _b, v in t.reads)]
            if len(readers) >= _SYNC_MIN:
                hub = Task(len(tasks), "HUB", "", r, -1)
                tasks.append(hub)
                for t in readers:
                    t.preds.add(hub.id)
        if info["assembles"]:
            writers = [t for t in members if any(uid in aliases.write for uid, _b in t.writes)]
            if writers:
                tasks.append(Task(len(tasks), "HUB", "", r, -1, preds={t.id for t in writers}))
    device_of = {t.root: t.device for t in tasks if t.kind != "HUB"}
    for t in tasks:
        t.succs = []
        if t.kind == "HUB":
            t.device = device_of.get(t.root, 0)
    for t in sorted(tasks, key=lambda x: x.id):
        for p in sorted(t.preds):
            tasks[p].succs.append(t.id)


def _device_tasks(tasks: list[Task], roots: list[dict[str, Any]], runtime: RuntimeOptions) -> list[list[int]]:
    per = max(1, int(runtime.stitch_function_max_num or 1))
    device_of_root = [r // per for r in range(len(roots))]
    devices: list[list[int]] = [[] for _ in range(max(device_of_root, default=0) + 1)]
    for t in tasks:
        t.device = device_of_root[t.root] if roots else 0
        devices[t.device].append(t.id)
    for t in tasks:  # a device task starts after the previous one has finished: no edges across them
        t.preds = {p for p in t.preds if tasks[p].device == t.device}
    return devices
