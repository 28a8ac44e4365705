"""Lookups the graph build repeats for every root or task, each worked out once per build: the options
in force in a scope, a merge setting's count for a group, the tensors of S-op roots a task reads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..options import MergeSetting, PassOptions, RuntimeOptions
from ..record import RunRecord
from .tasks import Task

__all__ = ["count", "forget_counts", "jit_scope", "reads_of_made", "scope_options"]


def jit_scope(record: RunRecord) -> Mapping[str, Any] | None:
    return next((s for s in record.scopes.values() if s.get("kind") == "jit"), None)


def scope_options(record: RunRecord, scope: int | None, jit: Mapping[str, Any] | None) -> tuple[RuntimeOptions, PassOptions]:
    """The options in force in ``scope`` (the kernel's own where it sets none); ``jit`` is
    ``jit_scope(record)``, found once per build (a scan per call cost seconds at long T)."""
    chosen = record.scopes.get(scope) if scope is not None else None
    src = chosen or jit
    if src is None:
        return RuntimeOptions(), PassOptions()
    return src.get("runtime") or RuntimeOptions(), src.get("pass") or PassOptions()


#: (id(setting), hash order, labels) -> _count's answer, for one build: a root's groups repeat a few
#: of these every iteration, and a lookup scans the setting's label keys
_COUNTS: dict[tuple, tuple[MergeSetting, tuple[int | None, Any]]] = {}


def count(setting: MergeSetting, hash_order: int, labels: list[str]) -> tuple[int | None, Any]:
    key = (id(setting), hash_order, *labels)
    hit = _COUNTS.get(key)
    if hit is None or hit[0] is not setting:  # the entry holds its setting: the id stays that setting's
        raw = setting.lookup(hash_order, labels)
        hit = _COUNTS[key] = (setting, (setting.granularity(hash_order, labels), raw))
    return hit[1]


def forget_counts() -> None:
    """Drop the merge counts (build_graph does, when done: the entries hold the record's settings)."""
    _COUNTS.clear()


def reads_of_made(record: RunRecord, tasks: list[Task], made: set[int]) -> dict[int, set[int]]:
    """Task id -> the tensors of ``made`` its recorded ops read, for the tasks that read any (a set per
    op or per task, most of them empty, cost ~100 MB at long T)."""
    if not made:
        return {}
    inputs: dict[int, set[int]] = {}
    # a view or reshape of a made tensor -> that tensor: its reader reads it (not so a copied view, rule
    # copied-view-task: its readers read the copy task's result)
    through: dict[int, int] = {}
    copied = {q for t in tasks if t.kind == "AIV" and len(t.record_ops) == 1 for q in t.record_ops}
    for o in record.ops:  # plain loops: no set made for the ops (and tasks) that read none, most of them
        for t in o.inputs:
            if t.uid in made:
                inputs.setdefault(o.seq, set()).add(t.uid)
            base = through.get(t.uid)
            if base is not None:
                inputs.setdefault(o.seq, set()).add(base)
        if o.unit == "S" and o.op in ("view", "reshape") and o.inputs and o.output is not None and o.seq not in copied:
            src = o.inputs[0].uid
            base = through.get(src, src if src in made else None)
            if base is not None and base != o.output.uid:
                through[o.output.uid] = base
    out: dict[int, set[int]] = {}
    for task in tasks:
        for q in task.record_ops:
            s = inputs.get(q)
            if s:
                out.setdefault(task.id, set()).update(s)
    return out
