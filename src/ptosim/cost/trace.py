"""Chrome Trace Event JSON of a cost estimate: one lane per core, as PyPTO's merged swimlane.

Opens in https://ui.perfetto.dev and chrome://tracing. Layout:

* ``"M"`` metadata: one process ("<kernel> on <platform>"), one thread (lane) per core named
  ``AIC_1 .. AIC_<aic>``, ``AIV_<aic+1> .. AIV_<aic+aiv>`` (PyPTO's swimlane numbering) and a
  ``HUB_<n>`` lane for sync tasks.
* ``"X"`` events: one per task, named like PyPTO's ``{device}-{root}-{task}-{root}-{group}(label)``;
  ``ts``/``dur`` in µs (cycles / ``cycles_per_us``, 1800 as PyPTO); ``args`` carry the task id,
  label, root and loop iteration, the recorded ops, the operands copied in and out (name, shape,
  dtype, bytes), the tile-op counts, per-pipe busy cycles, L2 hits and PyPTO-style merge hints.
* ``"s"``/``"f"`` flow arrows from each task's last-finishing predecessor (through sync tasks).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from typing import Any

from ..record import RunRecord
from .lower import nbytes_of
from .model import Estimate, estimate
from .params import CostParams
from .tasks import Task

__all__ = ["lane_names", "trace_events", "write_trace"]

PID = 1


def lane_names(aic: int, aiv: int) -> dict[int, str]:
    """tid -> lane name: AIC_1..AIC_aic, AIV_(aic+1)..AIV_(aic+aiv), then the sync lane."""
    names = {i + 1: f"AIC_{i + 1}" for i in range(aic)}
    names.update({aic + i + 1: f"AIV_{aic + i + 1}" for i in range(aiv)})
    names[aic + aiv + 8] = f"HUB_{aic + aiv + 8}"
    return names


def _operand(est: Estimate, uid: int, box: tuple[int, int, int, int]) -> dict[str, Any]:
    ref = est.graph.refs.get(uid)
    rows, cols = box[1] - box[0], box[3] - box[2]
    dtype = ref.dtype if ref is not None else "?"
    return {"name": ref.name if ref is not None else f"t{uid}", "shape": [rows, cols], "dtype": dtype,
            "bytes": rows * cols * nbytes_of(dtype), "offset": [box[0], box[2]]}


def trace_events(source: RunRecord | Estimate, profile: Any = None) -> dict[str, Any]:
    """The trace as a dict (``{"traceEvents": [...], "displayTimeUnit": "ns", ...}``)."""
    est = source if isinstance(source, Estimate) else estimate(source, profile)
    events = _lane_events(est)
    hub_tid = est.profile.aic + est.profile.aiv + 8
    by_root_index: Counter[int] = Counter()  # a task's index within its root, as in PyPTO's task names
    for t in est.graph.tasks:
        events.append(_task_event(est, t, by_root_index[t.root], hub_tid))
        by_root_index[t.root] += 1
    events += _flow_events(est.graph.tasks, est.params)
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"generator": "ptosim.cost", "summary": est.summary()}}


def _lane_events(est: Estimate) -> list[dict[str, Any]]:
    """The ``"M"`` metadata: the process and one named, ordered thread per lane."""
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": PID, "tid": 0, "args": {"name": f"{est.kernel} on {est.profile.name}"}},
        {"ph": "M", "name": "process_sort_index", "pid": PID, "tid": 0, "args": {"sort_index": 0}},
    ]
    for tid, name in lane_names(est.profile.aic, est.profile.aiv).items():
        events.append({"ph": "M", "name": "thread_name", "pid": PID, "tid": tid, "args": {"name": name}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": tid, "args": {"sort_index": tid}})
    return events


def _task_event(est: Estimate, t: Task, idx: int, hub_tid: int) -> dict[str, Any]:
    """The ``"X"`` event of task ``t``, the ``idx``-th of its root, on its core's lane (or the sync lane)."""
    p, roots = est.params, est.graph.roots
    args: dict[str, Any] = {
        "taskId": t.id, "label": t.label, "kind": t.kind, "device_task": t.device, "root": t.root,
        "loop": roots[t.root]["loops"] if t.root < len(roots) else [],
        "cycles": t.end - t.start,
    }
    if t.kind != "HUB":
        args.update(_work_args(est, t))
    else:
        args["preds"] = len(t.preds)
        args["succs"] = len(t.succs)
    return {"name": f"{t.device}-{t.root}-{idx}-{t.root}-{max(t.group, 0)}({t.label})",
            "cat": "event" if t.kind != "HUB" else "sync", "ph": "X", "pid": PID,
            "tid": hub_tid if t.kind == "HUB" else t.core + 1, "ts": round(p.us(t.start), 4),
            "dur": round(max(p.us(max(t.end - t.start, 0)), 0.001), 4), "id": t.id, "args": args}


def _work_args(est: Estimate, t: Task) -> dict[str, Any]:
    """What an AIC or AIV task did: its recorded ops, operands, tile ops, pipe time, L2 and merge hint."""
    args = {
        "ops": [f"{est.graph.op_names.get(s, '?')}#{s}" for s in t.record_ops],
        "ioperand-hint": [_operand(est, u, b) for u, b, _v in t.reads],
        "ooperand-hint": [_operand(est, u, b) for u, b in t.writes],
        "tile_ops": dict(Counter(o.name for o in t.ops)),
        "pipe_busy_cycles": dict(t.busy),
        "l2": {"hits": t.l2_hits, "misses": t.l2_misses},
    }
    if t.merge:
        args["event-hint"] = t.merge
    return args


def _flow_events(tasks: list[Task], p: CostParams) -> list[dict[str, Any]]:
    """``"s"``/``"f"`` arrows into each work task from its last-finishing work predecessor."""
    events: list[dict[str, Any]] = []
    flow = 0
    for t in tasks:
        if t.kind == "HUB":
            continue
        work = _work_preds(tasks, t)
        if not work:
            continue
        src = max(work, key=lambda w: w.end)
        flow += 1
        common = {"cat": "machine-view-last-dep", "name": "machine-view-last-dep", "pid": PID, "id": flow}
        events.append({**common, "ph": "s", "tid": src.core + 1, "ts": round(p.us(src.end) - 0.0005, 4)})
        events.append({**common, "ph": "f", "bp": "e", "tid": t.core + 1, "ts": round(p.us(t.start), 4)})
    return events


def _work_preds(tasks: list[Task], t: Task) -> list[Task]:
    """The work (non-sync) tasks ``t`` waits for, looking through sync tasks."""
    preds, seen = list(t.preds), set()
    work = []
    while preds:
        q = preds.pop()
        if q in seen:
            continue
        seen.add(q)
        if tasks[q].kind == "HUB":
            preds.extend(tasks[q].preds)
        else:
            work.append(tasks[q])
    return work


def write_trace(record: RunRecord | Estimate, path: str | os.PathLike[str], profile: Any = None) -> Estimate:
    """Write the trace of ``record`` (or of an Estimate) to ``path``; returns the Estimate."""
    est = record if isinstance(record, Estimate) else estimate(record, profile)
    data = trace_events(est)
    target = os.fspath(path)
    # beside the target, then renamed: an interrupted run leaves the earlier timeline whole
    fd, tmp = tempfile.mkstemp(prefix=".trace-", suffix=".tmp", dir=os.path.dirname(os.path.abspath(target)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, separators=(",", ":"))
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # what open() would have given, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return est
