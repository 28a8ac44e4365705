"""PyPTO-like tasks and the edges between them (see graph.py for how the tasks are made).

* ``Task``: one AIC, AIV or sync (HUB) task with its tile ops, what it reads and writes and, once
  simulated, its timing.
* ``Aliases`` (aliases.py, re-exported): where a read or write of a view, reshape or assemble lands.
* ``dependencies``: read-after-write edges between tasks; ``sync_tasks``: PyPTO's HUB tasks;
  ``device_tasks``: roots stitched into device tasks that run one after the other.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..options import RuntimeOptions
from .aliases import Aliases
from .lower import Box, TileOp, rows_cols
from .fired import Fire, ignore

__all__ = ["SYNC_MIN", "Aliases", "RootInfo", "Task", "dependencies", "device_tasks", "overlap", "sync_tasks"]

#: PyPTO routes a join through a sync (HUB) task only from 3 producers (or 3 view readers) up;
#: with 2 producers every consumer waits on both directly (seen in its task topology): rules
#: sync-join-from-three and root-start-sync.
SYNC_MIN = 3


class RootInfo(TypedDict, total=False):
    """What the sync and device-task passes know of one root (graph.py makes one per root)."""

    index: int
    loops: list[tuple[str, int, int, int]]  #: (name, index, iteration, factor) of its loop frames, outermost first
    views: bool  #: it has a view (its readers may wait for a root-start sync task)
    assembles: bool  #: it has an assemble (its writers feed a root-end sync task)
    scope: int | None  #: the options scope of its innermost loop (None outside loops)
    outer: int | None  #: that of its outermost loop
    submit_before_loop: bool  #: its outer loop submits what ran before it as a device task of its own
    made: set[int]  #: uids its S ops made
    vector_made: set[int]  #: uids of its vector results and their views and reshapes


@dataclass(slots=True)  # ~10^5 of them at long T: slots save memory and attribute lookups
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


def overlap(a: Box, b: Box) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def dependencies(tasks: list[Task], aliases: Aliases, fire: Fire = ignore) -> None:
    """A task depends on every earlier task that wrote a box it reads (RAW through GM/workspace), except
    one a later write it waits for covers (that write stands for it, as in PyPTO 0.2.0's topology).

    A named buffer (``pypto.Tensor`` carried across loop iterations: online softmax's o, l, m) read
    in a later root is waited for as the earlier root's output: the reader waits for every task of
    that root that writes an assembled tensor (PyPTO 0.2.0's swimlane: the next block's rescale
    starts after the previous block's o update, though it reads only m and l: rule
    buffer-read-waits-root-writers). ``fire`` records the rules applied."""
    writers: dict[int, dict[int, list[tuple[Box, int]]]] = defaultdict(lambda: defaultdict(list))
    bucket: dict[int, int] = {}
    root_out: dict[int, set[int]] = defaultdict(set)  # root -> its tasks that write assembled tensors
    buffer_root: dict[int, int] = {}  # buffer uid -> the root that wrote it last

    def rows_per_bucket(uid: int) -> int:
        if uid not in bucket:
            ref = aliases.refs.get(uid)
            bucket[uid] = max(16, (rows_cols(ref.shape)[0] if ref is not None else 1024) // 64)
        return bucket[uid]

    for t in tasks:
        for uid, box, _v in t.reads:
            r = buffer_root.get(uid)
            if r is not None and r != t.root:
                if root_out[r]:
                    fire("buffer-read-waits-root-writers")
                t.preds |= root_out[r]
            t.preds.update(w for w in _overlapping(writers, uid, box, rows_per_bucket) if w != t.id)
        for uid, box in t.writes:
            if uid in aliases.write:
                root_out[t.root].add(t.id)
            for target, tbox in aliases.write_targets(uid, box):
                base, bbox, _v, _c = aliases.resolve(target, tbox)
                ref = aliases.refs.get(base)
                if ref is not None and ref.kind == "buffer":
                    buffer_root[base] = t.root
                for k in _buckets(bbox, rows_per_bucket(base)):
                    # a write covering an earlier one this task waits for supersedes it: later readers wait
                    # for this task alone (rule write-supersedes-covered-write: PyPTO 0.2.0 chains the fused
                    # pre-attention's per-token cache scatters, and the attention waits for the last one only)
                    entries = writers[base][k]
                    if entries and t.preds:  # an earlier box inside bbox, inlined: once per bucket of every write
                        preds, (r0, r1, c0, c1) = t.preds, bbox
                        kept = [(b, w) for b, w in entries
                                if not (w in preds and r0 <= b[0] and b[1] <= r1 and c0 <= b[2] and b[3] <= c1)]
                        if len(kept) < len(entries):
                            fire("write-supersedes-covered-write")
                            entries[:] = kept
                    entries.append((bbox, t.id))
    _later_writers(tasks, writers, rows_per_bucket, fire)


def _later_writers(tasks: list[Task], writers: dict[int, dict[int, list[tuple[Box, int]]]],
                   rows_per_bucket: Any, fire: Fire) -> None:
    """RAW edges from writers listed after their reader. A task can hold ops from both sides of
    another task's ops in program order (the last RoPE task: the sub of the first halves, then the add of
    the second halves, whose muls are tasks of their own): it waits for those later-listed writers of the
    same root that start before it ends in program order, unless such a writer already waits for it."""
    by_id = {t.id: t for t in tasks}
    first = {t.id: min(t.record_ops, default=-1) for t in tasks}
    # the earliest first op of the later-listed tasks of each task's root: a task whose ops all come
    # before it has no such writer, and its reads need not be looked up again (most tasks, at long T)
    later_first: dict[int, int] = {}
    root_min: dict[int, int] = {}
    for t in sorted(tasks, key=lambda x: -x.id):
        later_first[t.id] = root_min.get(t.root, 1 << 62)
        root_min[t.root] = min(root_min.get(t.root, 1 << 62), first[t.id])
    for t in tasks:
        last = max(t.record_ops, default=-1)
        if later_first[t.id] >= last:
            continue
        for uid, box, _v in t.reads:
            for w in _overlapping(writers, uid, box, rows_per_bucket):
                if (w > t.id and w not in t.preds and by_id[w].root == t.root and first[w] < last
                        and not _waits_for(by_id, w, t.id)):
                    fire("later-listed-writer-edge")
                    t.preds.add(w)


def _buckets(box: Box, rows: int) -> range:
    """The row buckets (``rows`` rows each) a box touches: the index of writers by tensor and rows."""
    return range(box[0] // rows, (max(box[1], box[0] + 1) - 1) // rows + 1)


def _overlapping(writers: dict[int, dict[int, list[tuple[Box, int]]]], uid: int, box: Box,
                 rows_per_bucket: Any) -> list[int]:
    """The tasks that wrote a box of ``uid`` overlapping ``box``."""
    by_bucket = writers.get(uid)
    if not by_bucket:
        return []
    r0, r1, c0, c1 = box  # overlap() inlined: this runs once per read of every task
    out = []
    for k in _buckets(box, rows_per_bucket(uid)):
        for wbox, w in by_bucket.get(k, ()):
            if r0 < wbox[1] and wbox[0] < r1 and c0 < wbox[3] and wbox[2] < c1:
                out.append(w)
    return out


def _waits_for(by_id: dict[int, Task], a: int, b: int) -> bool:
    """Whether task ``a`` waits (directly or not) for task ``b`` of its root."""
    root, todo, seen = by_id[a].root, [a], {a}
    while todo:
        for p in by_id[todo.pop()].preds:
            if p == b:
                return True
            if p not in seen and by_id[p].root == root:
                seen.add(p)
                todo.append(p)
    return False


def sync_tasks(tasks: list[Task], roots: Sequence[RootInfo], aliases: Aliases,
               reads_of: dict[int, set[int]] | None = None, fire: Fire = ignore) -> None:
    """HUB tasks: one per complete join between task sets, per root start (views), per root end (assembles),
    and one per root of views and reshapes only, ahead of the tasks of later roots that read them (rule
    reshape-root-sync: the online flash attention's per-sequence reshape of q, a sync task before the two
    head copies of each sequence in PyPTO 0.2.0).
    ``reads_of``: task id -> the tensor uids its recorded ops read; ``fire`` records the rules applied."""
    _join_syncs(tasks, fire)
    # the work tasks of each root and every task's successors, as the joins left them
    by_root: dict[int, list[Task]] = defaultdict(list)
    succs: dict[int, list[Task]] = defaultdict(list)
    for t in tasks:
        if t.kind != "HUB":
            by_root[t.root].append(t)
        for p in t.preds:
            succs[p].append(t)
    for r, info in enumerate(roots):
        _root_syncs(tasks, r, info, by_root.get(r, []), aliases, succs, fire)
    _reshape_root_syncs(tasks, roots, by_root, succs, reads_of or {}, fire)
    _link_successors(tasks)


def _join_syncs(tasks: list[Task], fire: Fire) -> None:
    """Rule sync-join-from-three: the tasks of a group wait through one sync task for the ``SYNC_MIN`` or
    more tasks they all wait for (each keeps its own other predecessors), and the members with the same
    predecessors left through another; groups of a root waiting for the same tasks share the sync task."""
    by_group: dict[int, list[Task]] = defaultdict(list)
    for t in list(tasks):
        by_group[t.group].append(t)
    hubs: dict[tuple[int, frozenset[int]], Task] = {}  # (root, predecessors) -> its sync task
    for members in by_group.values():
        if len(members) < 2:
            continue
        common = frozenset.intersection(*(frozenset(m.preds) for m in members))
        joins = [(common, members)] if len(common) >= SYNC_MIN else []
        clusters: dict[frozenset[int], list[Task]] = defaultdict(list)
        for m in members:
            clusters[frozenset(m.preds) - (common if joins else frozenset())].append(m)
        joins += [(c, ms) for c, ms in clusters.items() if len(ms) >= 2 and len(c) >= SYNC_MIN]
        for preds, cluster in joins:
            fire("sync-join-from-three")
            hub = hubs.get((cluster[0].root, preds))
            if hub is None:
                hub = hubs[(cluster[0].root, preds)] = Task(len(tasks), "HUB", "", cluster[0].root, -1, preds=set(preds))
                tasks.append(hub)
            for m in cluster:
                m.preds = (m.preds - preds) | {hub.id}


def _root_syncs(tasks: list[Task], r: int, info: RootInfo, members: list[Task], aliases: Aliases,
                succs: dict[int, list[Task]], fire: Fire) -> None:
    """The sync tasks at root ``r``'s start (rule root-start-sync: ahead of ``SYNC_MIN`` or more readers
    of its views) and end (rule root-end-sync: after the writers of its assembles)."""
    if info["views"]:
        readers = [t for t in members if any(v for _u, _b, v in t.reads)]
        if len(readers) >= SYNC_MIN:
            fire("root-start-sync")
            hub = Task(len(tasks), "HUB", "", r, -1)
            tasks.append(hub)
            for t in _first_of(readers, succs):
                t.preds.add(hub.id)
    if info["assembles"]:
        writers = [t for t in members if any(uid in aliases.write for uid, _b in t.writes)]
        if writers:
            fire("root-end-sync")
            tasks.append(Task(len(tasks), "HUB", "", r, -1, preds={t.id for t in writers}))


def _reshape_root_syncs(tasks: list[Task], roots: Sequence[RootInfo], by_root: dict[int, list[Task]],
                        succs: dict[int, list[Task]], reads_of: dict[int, set[int]], fire: Fire) -> None:
    """Rule reshape-root-sync: a root of views and reshapes only (no task of its own) is a sync task
    ahead of the first readers, in the loop iterations it opens, of what it made."""
    readers_of: dict[int, list[Task]] = defaultdict(list)  # uid -> the tasks that read it, in id order
    for t in tasks:
        if t.kind != "HUB":
            for uid in reads_of.get(t.id, ()):
                readers_of[uid].append(t)
    for r, info in enumerate(roots):
        made = info.get("made") or set()
        if by_root.get(r) or not made:
            continue
        frames = info["loops"]
        found = {t.id: t for uid in made for t in readers_of.get(uid, ())
                 if t.root > r and roots[t.root]["loops"][:len(frames)] == frames}
        readers = [found[i] for i in sorted(found)]
        if readers:  # the sync task is root r's (PyPTO numbers it so) and runs with its first reader's device task
            fire("reshape-root-sync")
            hub = Task(len(tasks), "HUB", "", r, -1)
            hub.device = readers[0].device
            tasks.append(hub)
            for t in _first_of([t for t in readers if t.device == readers[0].device], succs):
                t.preds.add(hub.id)


def _link_successors(tasks: list[Task]) -> None:
    """Each sync task in its root's device task (one of a root with no tasks keeps the device it was given);
    every task's ``succs`` from the ``preds``, in id order."""
    device_of = {t.root: t.device for t in tasks if t.kind != "HUB"}
    for t in tasks:
        t.succs = []
        if t.kind == "HUB":
            t.device = device_of.get(t.root, t.device)
    for t in sorted(tasks, key=lambda x: x.id):
        for p in sorted(t.preds):
            tasks[p].succs.append(t.id)


def _first_of(readers: list[Task], succs: dict[int, list[Task]]) -> list[Task]:
    """The readers no other reader of their root leads to. A sync task's edge to a later one is implied,
    and PyPTO 0.2.0 leaves it out (rule root-start-sync: the MLA prolog's root-start sync task has 7
    successors at T=1, the tasks with no other predecessor); it matters because each successor costs its resolver ``resolve_cycles``.
    ``succs``: task id -> the tasks that wait for it."""
    seen: set[int] = set()
    todo = [s for t in readers for s in succs.get(t.id, ()) if s.root == t.root]
    while todo:
        x = todo.pop()
        if x.id not in seen:
            seen.add(x.id)
            todo.extend(s for s in succs.get(x.id, ()) if s.root == x.root)
    return [t for t in readers if t.id not in seen]


def device_tasks(tasks: list[Task], roots: Sequence[RootInfo], runtime: RuntimeOptions,
                 fire: Fire = ignore) -> list[list[int]]:
    per = max(1, int(runtime.stitch_function_max_num or 1))
    device_of_root, dev, used = [], 0, 0
    for r, info in enumerate(roots):
        # a loop with submit_before_loop=True: what ran before it is submitted as a device task of its own
        split = r > 0 and info.get("submit_before_loop") and roots[r - 1].get("outer") != info.get("outer")
        if used >= per or (split and used):
            if split and used and used < per:
                fire("submit-before-loop-device-task")
            dev, used = dev + 1, 0
        device_of_root.append(dev)
        used += 1
    devices: list[list[int]] = [[] for _ in range(max(device_of_root, default=0) + 1)]
    for t in tasks:
        t.device = device_of_root[t.root] if roots else 0
        devices[t.device].append(t.id)
    for t in tasks:  # a device task starts after the previous one has finished: no edges across them
        t.preds = {p for p in t.preds if tasks[p].device == t.device}
    return devices
