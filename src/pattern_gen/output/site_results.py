"""What the docs site shows of each instance: ptosim's estimate at one token count and its
timeline, run in a worker process of its own (so a long run's memory is returned before the next
one starts) and cached beside the docs sources, keyed by the instance's content hash, the token
count and the simulator's fingerprint — a rebuild with nothing changed simulates nothing.
"""

from __future__ import annotations


import json
import multiprocessing
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..vocab.errors import PatternGenError
from .instances import read_instance, run_instance

__all__ = ["InstanceRun", "site_T", "simulate", "cached_runs"]


@dataclass
class InstanceRun:
    estimate: dict[str, Any] | None
    events: list[dict[str, Any]] = field(default_factory=list)
    lanes: dict[Any, str] = field(default_factory=dict)
    error: str = ""  #: why there is no estimate (the instance could not run)


def site_T(unroll: Sequence[int]) -> int:
    """The token count a page shows: one full tile of the largest unroll factor, at least 16 tokens."""
    return max(int(unroll[0]), 16)


def simulate(folder: str, T: int) -> InstanceRun:
    """Run an instance once at ``T`` with the timeline; the estimate carries T and the verdict."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        try:
            result = run_instance(Path(folder), T=T, profile=str(trace))
        except PatternGenError as exc:  # crosses a process boundary as text
            return InstanceRun(None, error=str(exc))
        if result.estimate is None or not trace.is_file():
            return InstanceRun(None)
        data = json.loads(trace.read_text(encoding="utf-8"))
    events = [e for e in data.get("traceEvents", []) if e.get("ph") in ("X", "M")]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    estimate = {**result.estimate, "T": result.T, "passed": result.passed}
    return InstanceRun(estimate, [e for e in events if e.get("ph") == "X"], lanes)


def cached_runs(
    folders: Mapping[str, Path],
    Ts: Mapping[str, int],
    fingerprint: Callable[[str], str],
    cache: Mapping[str, Any],
    progress: Callable[[str], None] = lambda name: None,
) -> tuple[dict[str, InstanceRun | None], dict[str, Any]]:
    """``({name: run, or None where the cache still holds}, new cache)``. ``fingerprint(name)``:
    the simulator's and the instance platform's digest. Misses run one at a time, each in a fresh
    worker process."""
    keys = {name: _key(folder, Ts[name], fingerprint(name)) for name, folder in folders.items()}
    runs: dict[str, InstanceRun | None] = {}
    entries: dict[str, Any] = {}
    todo = []
    for name in folders:
        old = cache.get(name) if isinstance(cache, Mapping) else None
        if isinstance(old, Mapping) and old.get("key") == keys[name]:
            runs[name] = None
            entries[name] = dict(old)
        else:
            todo.append(name)
    for name, run in _run_isolated(todo, folders, Ts):
        # as the cache will hold it (JSON: string keys, lists): a page renders the same from either
        run.estimate = json.loads(json.dumps(run.estimate))
        runs[name] = run
        entries[name] = {"key": keys[name], "estimate": run.estimate, "error": run.error}
        progress(name)
    return runs, dict(sorted(entries.items()))


def _key(folder: Path, T: int, fingerprint: str) -> str:
    meta = read_instance(folder)
    return f"{meta.get('content_hash', '')}|{fingerprint}|T={T}"


def _run_isolated(names: list[str], folders: Mapping[str, Path], Ts: Mapping[str, int]) -> Iterable[tuple[str, InstanceRun]]:
    """Each run in a new process of its own: its arrays and the cost model's graph are freed before
    the next starts (in one process the peak grew to 3.4 GB over the 44 manifest instances)."""
    context = multiprocessing.get_context("spawn")  # no fork of a parent holding BLAS threads
    for name in names:
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            yield name, pool.submit(simulate, str(folders[name]), Ts[name]).result()
