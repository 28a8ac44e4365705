"""``estimate(record)``: tasks from the record, their cost, their schedule, and the summary."""

from __future__ import annotations

import gc
import weakref
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..options import no_effect_warnings
from ..platform import Profile, load_platform
from ..record import RunRecord
from .core import run_tasks
from .graph import Graph, Task, build_graph
from .params import CostParams
from .schedule import schedule

__all__ = ["Estimate", "estimate"]

#: id(record) -> (weak reference to it, {profile key: Estimate}); entries go when the record does
_CACHE: dict[int, tuple[weakref.ref, dict]] = {}


def _cached(record: RunRecord) -> dict:
    entry = _CACHE.get(id(record))
    if entry is None or entry[0]() is not record:
        rid = id(record)
        entry = (weakref.ref(record, lambda _r, rid=rid: _CACHE.pop(rid, None)), {})
        _CACHE[rid] = entry
    return entry[1]


_PIPES = {"cube": ("CUBE", "AIC"), "vector": ("VECTOR", "AIV"), "mte_in": ("MTE_IN", "ALL"),
          "mte1": ("MTE1", "AIC"), "mte_out": ("MTE_OUT", "ALL")}


@dataclass
class Estimate:
    """The result of the cost model for one kernel run."""

    kernel: str
    profile: Profile
    params: CostParams
    graph: Graph
    t0: int  #: first task start (cycles)
    t1: int  #: last task end (cycles)
    notes: list[str] = field(default_factory=list)

    @property
    def rules_fired(self) -> tuple[str, ...]:
        """The ids of the cost rules (``ptosim.cost.rules``) this estimate applied, in the table's order."""
        return self.graph.fired.ids()

    @property
    def tasks(self) -> list[Task]:
        return self.graph.tasks

    @property
    def work_tasks(self) -> list[Task]:
        """The AIC and AIV tasks (no sync tasks), listed once: the summary walks them several times."""
        work = self.__dict__.get("_work")
        if work is None or work[0] != len(self.graph.tasks):
            work = self.__dict__["_work"] = (len(self.graph.tasks), [t for t in self.graph.tasks if t.kind != "HUB"])
        return work[1]

    @property
    def e2e_cycles(self) -> int:
        return max(0, self.t1 - self.t0)

    @property
    def e2e_us(self) -> float:
        return self.params.us(self.e2e_cycles)

    def utilization(self) -> dict[str, float]:
        span = max(1, self.e2e_cycles)
        n = {"AIC": self.profile.aic, "AIV": self.profile.aiv, "ALL": self.profile.aic + self.profile.aiv}
        out: dict[str, float] = {}
        busy: dict[str, int] = defaultdict(int)
        for t in self.work_tasks:  # one pass; each pipe still sums its tasks in task order
            for pipe, c in t.busy.items():
                busy[pipe] += c
        for key, (pipe, kind) in _PIPES.items():
            out[key] = min(1.0, busy.get(pipe, 0) / (n[kind] * span))
        out["aicore"] = min(1.0, sum(t.duration for t in self.work_tasks) / (n["ALL"] * span))
        return out

    def per_label_us(self) -> dict[str, float]:
        acc: dict[str, float] = defaultdict(float)
        for t in self.work_tasks:
            acc[t.label or "(unlabelled)"] += self.params.us(t.duration)
        return {k: round(v, 3) for k, v in sorted(acc.items(), key=lambda kv: -kv[1])}

    def per_path_us(self) -> dict[str, float]:
        """Summed task time per path of the outermost ``loop_unroll`` (its factor: each is a compiled
        path in PyPTO; ``"outside"`` for tasks of no loop pass), with the passes each path ran."""
        acc: dict[str, float] = defaultdict(float)
        for t in self.work_tasks:
            loops = self.graph.roots[t.root]["loops"] if t.root < len(self.graph.roots) else []
            acc[f"{loops[0][3]}" if loops else "outside"] += self.params.us(t.duration)
        return {k: round(v, 3) for k, v in sorted(acc.items(), key=lambda kv: (kv[0] == "outside", -int(kv[0]) if kv[0] != "outside" else 0))}

    def per_label_tasks(self) -> dict[str, int]:
        """Task count per ``label/kind``, keyed as PyPTO's swimlane is summarised (AIC/AIV only)."""
        acc: dict[str, int] = defaultdict(int)
        for t in self.work_tasks:
            acc[f"{t.label or '(unlabelled)'}/{t.kind}"] += 1
        return dict(sorted(acc.items()))

    def summary(self) -> dict[str, Any]:
        kinds = defaultdict(int)
        for t in self.graph.tasks:
            kinds[t.kind] += 1
        hits = sum(t.l2_hits for t in self.work_tasks)
        misses = sum(t.l2_misses for t in self.work_tasks)
        return {
            "kernel": self.kernel,
            "platform": self.profile.name,
            "e2e_us": round(self.e2e_us, 3),
            "cycles": self.e2e_cycles,
            "tasks": kinds["AIC"] + kinds["AIV"],
            "tasks_by_kind": {"AIC": kinds["AIC"], "AIV": kinds["AIV"], "sync": kinds["HUB"]},
            "device_tasks": len([d for d in self.graph.devices if d]),
            "roots": len(self.graph.roots),
            "utilization": {k: round(v, 4) for k, v in self.utilization().items()},
            "per_label_us": self.per_label_us(),
            "per_path_us": self.per_path_us(),
            "per_label_tasks": self.per_label_tasks(),
            "l2": {"hits": hits, "misses": misses},
            "notes": list(self.notes),
        }

    def report(self) -> str:
        s = self.summary()
        k = s["tasks_by_kind"]
        u = s["utilization"]
        lines = [
            f"{self.kernel} on {s['platform']}: {s['e2e_us']:.2f} µs end to end ({s['cycles']} cycles at "
            f"{self.params.cost.cycles_per_us:g}/µs); {s['tasks']} tasks ({k['AIC']} AIC, {k['AIV']} AIV, {k['sync']} sync) "
            f"in {s['device_tasks']} device task(s), {s['roots']} root(s)",
            "utilisation: " + ", ".join(f"{name} {u[key]:.1%}" for key, name in (
                ("cube", "Cube"), ("vector", "Vector"), ("mte_in", "MTE_IN"), ("mte1", "MTE1"), ("mte_out", "MTE_OUT")))
            + f"; AI cores busy {u['aicore']:.1%}",
            "time per label (summed task time): " + ", ".join(f"{lab} {us:.2f} µs" for lab, us in s["per_label_us"].items()),
            f"L2: {s['l2']['hits']} hits, {s['l2']['misses']} misses" + ("" if self.params.cost.l2.enabled else " (L2 model off)"),
        ]
        lines += [f"note: {n}" for n in s["notes"]]
        return "\n".join(lines)


def _notes(record: RunRecord, profile: Profile, graph: Graph) -> list[str]:
    notes: list[str] = []
    for msg in record.warnings:
        if msg not in notes:
            notes.append(msg)
    for scope in record.scopes.values():
        po = scope.get("pass")
        if po is None:
            continue
        for msg in no_effect_warnings(po, cv_mix=profile.cv_mix, platform=profile.name):
            if msg not in notes:
                notes.append(msg)
    mode = graph.runtime.device_sched_mode
    if mode:
        notes.append(f"device_sched_mode={mode}: modelled as "
                     + {1: "L2 affinity", 2: "fair dispatch (extra cost per dispatch)", 3: "L2 affinity + fair dispatch"}[mode]
                     + "; PyPTO 0.2.0's SIM showed no effect of this option")
    nc = sorted({r.name for r in graph.refs.values() if not r.cacheable})
    if nc:
        notes.append(f"NONE_CACHEABLE: {', '.join(nc)} bypass L2 (always DDR, never evict other tensors)")
    notes.extend(graph.notes)
    return notes


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while the graph is built and scheduled. The build makes millions
    of objects that live until it ends and frees almost none of them, so each full collection walks
    all of them and the record again for nothing: a fused pre-attention + attention at T=512 spent 13 of
    31 s of its build in the collector. At the end they go to the oldest generation (``gc.freeze`` then
    ``gc.unfreeze``: two list splices) instead of staying young, where the first young collection
    after would walk them all (4 M objects, 1.7 s at T=512) to find them alive; the few cycles a build
    leaves (a closure or two per vector group) go at the next full collection."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def estimate(record: RunRecord, profile: Profile | str | None = None, *,
             params: CostParams | Mapping[str, Any] | None = None) -> Estimate:
    """Cost estimate of one kernel run (``kernel.last_record``) on ``profile`` (default: the record's platform).

    ``params`` replaces cost coefficients (a CostParams, or a mapping shaped like the ``cost:`` section,
    e.g. ``{"l2": {"enabled": True}}``) — used by
    the calibration benchmark; normally they come from the profile's ``cost:`` section.
    """
    prof = load_platform(profile if profile is not None else record.platform)
    key = (prof.name, prof.source, len(record.ops))
    if params is None:  # a kernel run is estimated once per profile (write_trace and summary share it)
        cached = _cached(record).get(key)
        if cached is not None:
            return cached
    if isinstance(params, CostParams):
        cp = params
    else:
        cp = CostParams.from_profile(prof, params)
    with _gc_paused():
        graph = build_graph(record, cp)
        run_tasks(graph.tasks, graph.devices, cp, graph.fired)
        if cp.cost.l2.enabled and any(not r.cacheable for r in graph.refs.values()):
            graph.fired("none-cacheable-bypasses-l2")
        schedule(graph.tasks, graph.devices, prof.aic, prof.aiv, cp, graph.runtime.device_sched_mode, graph.fired)
    work = [t for t in graph.tasks if t.kind != "HUB"]
    t0 = min((t.start for t in work), default=0)
    t1 = max((t.end for t in work), default=0)
    est = Estimate(record.kernel, prof, cp, graph, t0, t1, _notes(record, prof, graph))
    if params is None:
        _cached(record)[key] = est
    return est
