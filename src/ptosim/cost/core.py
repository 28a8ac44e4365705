"""Inside one task: the pipes of a core run its tile ops; copies go through an L2 model.

Each pipe (MTE_IN, MTE1, CUBE, VECTOR, MTE_OUT) issues its ops in order; an op starts
``issue_gap`` cycles after both its pipe is free and its inputs are ready, as in PyPTO's pipe
swimlane; the task ends ``task_tail`` cycles after its last op.

L2 (PyPTO's cache model: 20 MiB, hit 50, miss +150 cycles): copy-ins of GM blocks are looked up
in an LRU cache in program order within each device task. The level-1 copy time stands for a hit
(PyPTO fitted it on hardware with a warm L2 and its SIM runs without the cache model); a miss — a
block's first read in the device task, a block evicted since, or any ``NONE_CACHEABLE`` tensor —
adds ``miss_extra_latency``. ``NONE_CACHEABLE`` tensors never occupy L2, so they evict nothing.
Copy-outs allocate their block (write-allocate), so a later read of it hits.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict

from .params import CostParams
from .fired import Fire, ignore
from .tasks import Task

__all__ = ["run_tasks", "L2Cache"]


class L2Cache:
    def __init__(self, size: int) -> None:
        self.size = size
        self.used = 0
        self.blocks: OrderedDict[tuple, int] = OrderedDict()

    def clear(self) -> None:
        self.blocks.clear()
        self.used = 0

    def access(self, key: tuple, nbytes: int, cacheable: bool) -> bool:
        """True on a hit. A miss of a cacheable block inserts it (evicting least recently used)."""
        if not cacheable:
            return False
        if key in self.blocks:
            self.blocks.move_to_end(key)
            return True
        if nbytes > self.size:
            return False
        self.blocks[key] = nbytes
        self.used += nbytes
        while self.used > self.size:
            _k, b = self.blocks.popitem(last=False)
            self.used -= b
        return False


def _place(busy: list[tuple[int, int]], earliest: int, length: int, gap: int) -> int:
    """Earliest start >= ``earliest`` where [start, start + length) fits between the pipe's busy spans."""
    start = earliest
    for a, b in busy:  # sorted by start
        if start + length + gap <= a:
            break
        if b + gap > start:
            start = b + gap
    return start


def _simulate(task: Task, cycles: list[int], params: CostParams) -> None:
    """Pipes issue ops as soon as inputs and pipe allow, filling idle gaps (PyPTO orders tile ops
    out of order across the subgraphs of a merged task); within one subgraph this is program order
    (rule tile-op-issue-gap)."""
    gap = params.cost.issue_gap_cycles
    spans: dict[str, list[tuple[int, int]]] = {}
    ends: list[int] = []
    times: list[tuple[int, int]] = []
    busy: dict[str, int] = {}
    for op, c in zip(task.ops, cycles):
        ready = max((ends[d] for d in op.deps), default=gap)
        pipe = spans.setdefault(op.pipe, [])
        if not pipe or ready + gap >= pipe[-1][1] + gap:  # common case: after everything on the pipe
            start = max(ready, pipe[-1][1] if pipe else gap) + gap
            pipe.append((start, start + c))
        else:
            start = _place(pipe, ready + gap, c, gap)
            bisect.insort(pipe, (start, start + c))
        end = start + c
        ends.append(end)
        times.append((start, end))
        busy[op.pipe] = busy.get(op.pipe, 0) + c
    task.op_times = times
    task.busy = busy
    task.duration = (max(ends) + params.cost.task_tail_cycles) if ends else 0


def run_tasks(tasks: list[Task], devices: list[list[int]], params: CostParams, fire: Fire = ignore) -> None:
    """Cost every task: L2 lookups in program order per device task, then the pipe simulation (the
    tile ops priced by rule tileop-level1-latency, L2 by rule l2-off-in-sim)."""
    if any(t.ops for t in tasks):
        fire("tileop-level1-latency")
        fire("tile-op-issue-gap")
        fire("l2-off-in-sim")
    l2 = L2Cache(params.cost.l2.size_bytes)
    cache: dict[tuple, tuple[int, dict, list]] = {}
    for dev in devices:
        l2.clear()
        for tid in dev:
            task = tasks[tid]
            if task.kind == "HUB":
                continue
            cycles = []
            hits = misses = 0
            for op in task.ops:
                c = op.cycles
                if op.gm is not None and params.cost.l2.enabled:
                    uid, box, cacheable = op.gm
                    hit = l2.access((uid, box), op.nbytes, cacheable)
                    if op.name == "COPY_IN":
                        if hit:
                            hits += 1
                        else:
                            misses += 1
                            c += params.cost.l2.miss_extra_latency
                cycles.append(c)
            task.l2_hits, task.l2_misses = hits, misses
            key = tuple((op.pipe, c, op.deps) for op, c in zip(task.ops, cycles))
            if key in cache:
                task.duration, busy, times = cache[key]
                # shared, not copied: nothing changes them after this (a copy per task cost ~1 KB each at long T)
                task.busy, task.op_times = busy, times
            else:
                _simulate(task, cycles, params)
                cache[key] = (task.duration, task.busy, task.op_times)
