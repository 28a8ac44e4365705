"""Scheduling tasks on the cores: a model of PyPTO's AICPU schedulers (``machine/AICPUMachine.cpp``).

``aicpu_count`` scheduler threads each own an equal share of the AIC and AIV cores. A thread loops:
it **polls** each of its cores (``completion_cycles`` each, all accounted at the round's start); for
every task found finished it **resolves** the successors (``resolve_cycles`` each; a successor whose
last dependency this was enters the thread's local ready queue at that moment); then, when the
round's cycles have passed, it **dispatches** ready tasks (one global FIFO per core type) to its idle
cores, ``scheduler_cycles`` per task, each task starting when its dispatch is done.
The device moves one task from each local queue to the global queue per simulation step, a step
being any scheduler event or tile-op boundary on a busy core (``DeviceMachine::RunAtBegin``), after
the schedulers of that step: so a freshly resolved task waits for the next step. A core starting a
task steps once per tile op on consecutive cycles (``task_start_steps`` at most) as it allocates and
issues them (PyPTO 0.2.0's ready-queue counters: 5 tasks moved within 3 cycles of an AIC task's start). A poll that resolves
anything also asks for a step when its first resolve ends; PyPTO keeps a single "next cycle", so that
step is lost if another one comes first (a quiet device then waits for the next scheduler event).
Sync (HUB) tasks are processed by a dispatching thread at no cost, their successors resolved on the
spot (PyPTO's merged swimlane draws them as 1 us "fake" tasks in later device tasks, but its cost
model runs them in 1 cycle). Device tasks run one after the other, the next one submitted
``device_task_switch_cycles`` after the previous one's last completion was resolved.

The rules (``ptosim.cost.rules``): aicpu-schedulers, sync-task-costs-nothing, resolve-end-is-a-step,
one-next-cycle, task-start-steps.

``device_sched_mode``: 0 FIFO; 1 L2 affinity (a core prefers a ready task of the root it ran last);
2 fair (each dispatch costs ``fair_extra_cycles`` more); 3 both.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from dataclasses import dataclass

from .params import CostParams
from .fired import Fire, ignore
from .tasks import Task

__all__ = ["schedule"]

_POLL, _DISPATCH, _TICK = 0, 1, 2  # same-time order: schedulers first, then device steps

#: False: queue every step a running task asks for, duplicates included (tests compare the two)
ONE_STEP_EVENT = True


@dataclass
class _Core:
    index: int  #: lane number - 1 (AIC first, then AIV)
    kind: str
    task: int = -1
    end: int = 0
    last_root: int = -1


def _owners(n_aic: int, n_aiv: int, n_cpu: int) -> list[list[_Core]]:
    cpus: list[list[_Core]] = [[] for _ in range(max(1, n_cpu))]
    per_c = -(-n_aic // len(cpus)) if n_aic else 1
    per_v = -(-n_aiv // len(cpus)) if n_aiv else 1
    for i in range(n_aic):
        cpus[min(i // per_c, len(cpus) - 1)].append(_Core(i, "AIC"))
    for i in range(n_aiv):
        cpus[min(i // per_v, len(cpus) - 1)].append(_Core(n_aic + i, "AIV"))
    return [sorted(c, key=lambda k: (k.kind != "AIC", k.index)) for c in cpus]


class _DeviceRun:
    """The simulation of one device task."""

    def __init__(self, tasks: list[Task], members: list[int], cpus: list[list[_Core]], params: CostParams,
                 start_at: int, sched_mode: int) -> None:
        self.tasks, self.cpus, self.p = tasks, cpus, params
        self.affinity = sched_mode in (1, 3)
        self.sched_cost = params.cost.sched.scheduler_cycles + (params.cost.sched.fair_extra_cycles if sched_mode in (2, 3) else 0)
        self.left = {t: len(tasks[t].preds) for t in members}
        self.remaining = len(members)
        self.ready: dict[str, list[tuple[int, int, int]]] = {"AIC": [], "AIV": [], "HUB": []}
        self.local: list[deque[tuple[int, int]]] = [deque() for _ in cpus]
        self.queued = 0  #: tasks in the local queues (a step with none moves nothing: most steps)
        self.seq = 0
        self.last_done = start_at
        self.events: list[tuple[int, int, int, int]] = []
        self.eseq = 0
        self._ticks: dict[int, tuple[list[tuple[int, int]], list[int]]] = {}  #: id(op_times) -> (it, tick ends)
        self.last_step = -1
        #: times of the plain step events (payload -1) in the queue: a second one at the same time
        #: would find the step done (every event at a time comes before any step of it), so it is not queued
        self.tick_at: set[int] = set()
        #: those steps, (time, eseq), apart from the events: a run of them is worked off in one tight
        #: loop (``_steps_before``), in the order they would have had among the events
        self.steps: list[tuple[int, int]] = []
        self.applied: set[str] = set()  #: the rules this run applied
        # submitted in PyPTO's task-id order (root << 20 | index): a sync task of an earlier root first
        # (rule ready-in-task-id-order)
        for t in sorted(members, key=lambda i: (tasks[i].root, i)):
            if self.left[t] == 0:
                self._global(t, start_at)
                if tasks[t].kind == "HUB":
                    self.applied.add("ready-in-task-id-order")

    def push(self, time: int, kind: int, payload: int) -> None:
        heapq.heappush(self.events, (time, kind, self.eseq, payload))
        self.eseq += 1

    def _global(self, tid: int, visible: int) -> None:
        bisect.insort(self.ready[self.tasks[tid].kind], (visible, self.seq, tid))
        self.seq += 1

    def finish(self, tid: int, base: int, cpu: int) -> int:
        """``tid`` is done; thread ``cpu`` resolves its successors from ``base``. Returns the cycles spent."""
        self.remaining -= 1
        cost = 0
        for s in self.tasks[tid].succs:
            if s not in self.left:
                continue
            cost += self.p.cost.sched.resolve_cycles
            self.left[s] -= 1
            if self.left[s] == 0:
                self.enqueue(cpu, base + cost, s)
        self.last_done = max(self.last_done, base + cost)
        return cost

    def enqueue(self, cpu: int, at: int, tid: int) -> None:
        """Task ``tid`` enters scheduler ``cpu``'s local queue, resolved at cycle ``at``."""
        self.local[cpu].append((at, tid))
        self.queued += 1

    def step(self, now: int) -> None:
        """A device step: one task per local queue moves to the global queue (visible next step)."""
        if now == self.last_step:
            return
        self.last_step = now
        if not self.queued:
            return
        for q in self.local:
            if q and q[0][0] <= now:
                _t, tid = q.popleft()
                self.queued -= 1
                self._global(tid, now + 1)

    def run(self, pending: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Run until every task is done; ``pending`` is each scheduler's next (time, phase). Returns the
        same for the next device task (the scheduler threads keep their rhythm across device tasks)."""
        for a, (t, phase) in enumerate(pending):
            self.push(t, phase, a)
        guard = 0
        while self.remaining > 0:
            guard += 1
            if guard > 50_000_000 or not self.events:  # pragma: no cover - a dependency cycle
                raise RuntimeError("cost model scheduler did not converge (dependency cycle?)")
            if self.steps:
                self._steps_before(self.events[0])
            now, kind, _s, x = heapq.heappop(self.events)
            if kind == _TICK:
                # a step asked for at a poll (payload: the poll's time) happens only if no other step
                # came in between: PyPTO keeps one "next cycle", and later steps do not ask again
                if self.last_step <= x:
                    if now != self.last_step:  # step() would return at once: most ticks
                        if self.queued:
                            self.step(now)
                        else:  # step() inlined: a step with nothing queued only marks the cycle
                            self.last_step = now
                else:
                    self.applied.add("one-next-cycle")
                continue
            if kind == _POLL:
                cost, stepped = 0, False
                for core in self.cpus[x]:
                    cost += self.p.cost.sched.completion_cycles
                    if core.task >= 0 and core.end <= now:
                        tid, core.task = core.task, -1
                        cost += self.finish(tid, now + cost, x)
                        if not stepped:  # the first resolve's end asks for a step (see run)
                            self.push(now + cost, _TICK, now)
                            stepped = True
                            self.applied.add("resolve-end-is-a-step")
                self.push(now + cost, _DISPATCH, x)
            else:
                self.push(self.dispatch(x, now), _POLL, x)
            if now != self.last_step:  # step() inlined where nothing is queued, as for a tick
                if self.queued:
                    self.step(now)
                else:
                    self.last_step = now
        out = [(0, _POLL)] * len(self.cpus)
        for t, kind, _s, x in self.events:
            if kind in (_POLL, _DISPATCH):
                out[x] = (t, kind)
        return out

    def _steps_before(self, event: tuple[int, int, int, int]) -> None:
        """The plain steps that come before ``event`` (same time: after a scheduler event, and by queue
        order after a step asked at a poll). They push no event, so they run here one after the other."""
        steps, at, pop = self.steps, self.tick_at, heapq.heappop
        t_ev, k_ev, s_ev = event[0], event[1], event[2]
        while steps:
            now, seq = steps[0]
            if now > t_ev or (now == t_ev and (k_ev != _TICK or seq > s_ev)):
                return
            pop(steps)
            at.discard(now)
            if now != self.last_step:
                if self.queued:
                    self.step(now)
                else:  # step() inlined: a step with nothing queued only marks the cycle
                    self.last_step = now

    def _tick_ends(self, op_times: list[tuple[int, int]]) -> list[int]:
        """The op ends (from the task's start) a running task asks steps at: every n-th distinct op
        span, at most ~64. Tasks with the same pipe simulation share their op_times list (core.py),
        so this is worked out once per distinct list."""
        hit = self._ticks.get(id(op_times))
        if hit is None or hit[0] is not op_times:
            ends = [end for _s, end in sorted(set(op_times))[:: max(1, len(op_times) // 64)]]
            hit = self._ticks[id(op_times)] = (op_times, ends)
        return hit[1]

    def dispatch(self, a: int, t: int) -> int:
        tasks, ready = self.tasks, self.ready
        while ready["HUB"] and ready["HUB"][0][0] <= t:  # sync tasks
            at, _s, hid = ready["HUB"].pop(0)
            hub = tasks[hid]
            hub.start = hub.end = t
            self.finish(hid, t, a)  # no thread time: the successors' readiness is delayed only
            self.applied.add("sync-task-costs-nothing")
        sc = 0
        for core in self.cpus[a]:
            q = ready[core.kind]
            if core.task >= 0 or not q or q[0][0] > t + sc:
                continue
            pick = 0
            if self.affinity:
                for i, (at, _s, tid) in enumerate(q):
                    if at > t + sc:
                        break
                    if tasks[tid].root == core.last_root:
                        pick = i
                        break
            _at, _s, tid = q.pop(pick)
            sc += self.sched_cost
            task = tasks[tid]
            task.start, task.core = t + sc, core.index
            task.end = task.start + task.duration
            core.task, core.end, core.last_root = tid, task.end, task.root
            starts = min(len(task.ops), self.p.cost.sched.task_start_steps)
            if starts:
                self.applied.add("task-start-steps")
            # push() inlined: a step per tile a cycle apart from the start, up to ~64 asked while it runs
            # and one at its end; only the first step at a time is queued (see tick_at)
            steps, start, eseq, at = self.steps, task.start, self.eseq, self.tick_at
            for when in (*range(start, start + starts), *[start + e for e in self._tick_ends(task.op_times)], task.end):
                if when not in at or not ONE_STEP_EVENT:
                    at.add(when)
                    heapq.heappush(steps, (when, eseq))
                    eseq += 1
            self.eseq = eseq
        return t + sc if sc else t + 1


def schedule(tasks: list[Task], devices: list[list[int]], n_aic: int, n_aiv: int, params: CostParams,
             sched_mode: int = 0, fire: Fire = ignore) -> int:
    """Set start/end/core of every task; return the cycle the last device task was seen finished.
    ``fire`` records the rules applied."""
    cpus = _owners(n_aic, n_aiv, params.cost.sched.aicpu_count)
    pending = [(0, _POLL)] * len(cpus)
    now = 0
    for d, members in enumerate(devices):
        if not members:
            continue
        start_at = now + (params.cost.sched.device_task_switch_cycles if d > 0 else 0)
        run = _DeviceRun(tasks, members, cpus, params, start_at, sched_mode)
        fire("aicpu-schedulers")
        pending = run.run(pending)
        now = run.last_done
        for rule in sorted(run.applied):
            fire(rule)
    return now
