"""Estimating configurations: each is resolved and rendered as ``pattern-gen new`` would (a
refusal prunes it, with the resolver's own message), then its kernel runs on ptosim at every T of
the distribution and the cost model prices the run.

Rendering happens here, in one process (it needs the catalogue); the runs are independent jobs
(configuration x T) for a pool of worker processes, which keep each T's inputs (the golden's
``make_inputs``) for every kernel of the request: the tuned axes never change the inputs.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ptosim.control import unroll_schedule
from threadpoolctl import threadpool_limits

from ..catalogue.catalogue import Catalogue
from ..output.instances import call_instance, estimate_instance, load_instance_module, write_instance
from ..vocab.errors import PatternGenError
from .space import Config, Space
from ..vocab.paths import read_text_file

__all__ = ["Point", "Evaluator", "weighted_time", "MAX_PASSES"]

#: the most loop passes a run may take (T=1024 token by token is 1024; more is minutes per run)
MAX_PASSES = 2048


@dataclass
class Point:
    """What one configuration costs (or why it cannot be built)."""

    config: Config
    name: str = ""
    folder: Path | None = None
    refused: str | None = None  #: the resolver's (or ptosim's) reason, when pruned
    us: dict[int, float] = field(default_factory=dict)  #: T -> end-to-end µs
    bound: dict[int, str] = field(default_factory=dict)  #: T -> what bounds it
    tasks: dict[int, int] = field(default_factory=dict)
    score: float | None = None  #: weighted mean µs over the T distribution
    #: a lower bound of the score when the search stopped estimating it (it could not win)
    lower: float | None = None

    @property
    def ok(self) -> bool:
        return self.refused is None and self.score is not None


def weighted_time(us: Mapping[int, float], weights: Mapping[int, float]) -> float:
    """The expected time of one call under the T distribution (weights sum to 1)."""
    return sum(weights[T] * us[T] for T in weights)


# --- worker side ---------------------------------------------------------------------------------

def _one_blas_thread() -> None:
    """A worker runs one job at a time: its BLAS must not start a thread per core as well (two
    workers x two OpenBLAS threads on two cores ran the SK-03 sweep 1.8x slower)."""
    threadpool_limits(1)


_INPUTS: dict[tuple[str, int, int], Any] = {}


def _job(folder: str, T: int, seed: int, inputs_from: str) -> dict[str, Any]:
    """One kernel at one T, in a worker: the estimate summary, or ``{"error": ...}``. The inputs
    are those of ``inputs_from``'s golden (the default configuration's: the same for all)."""
    path = Path(folder)
    try:
        key = (inputs_from, T, seed)
        if key not in _INPUTS:
            if len(_INPUTS) > 8:  # a worker keeps a few T's inputs, not every one it saw
                _INPUTS.clear()
            _INPUTS[key] = call_instance(load_instance_module(Path(inputs_from), "golden"), "make_inputs", T, seed=seed)
        summary = estimate_instance(path, T, seed=seed, inputs=_INPUTS[key])
    except PatternGenError as exc:
        return {"error": "; ".join(p.message for p in exc.problems)}
    return {
        "e2e_us": float(summary["e2e_us"]),
        "tasks": int(summary["tasks"]),
        "bound": str(summary.get("interpretation", "")),
    }


# --- parent side ---------------------------------------------------------------------------------


class Evaluator:
    """Estimates configurations of ``space`` at the Ts of ``weights``; remembers every result."""

    def __init__(
        self,
        cat: Catalogue,
        space: Space,
        weights: Mapping[int, float],
        workdir: Path,
        *,
        jobs: int | None = None,
        seed: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.cat, self.space, self.weights, self.workdir, self.seed = cat, space, dict(weights), workdir, seed
        self.jobs = max(1, jobs if jobs is not None else (os.cpu_count() or 1))
        self.points: dict[Config, Point] = {}
        self.progress = progress
        self._pool: ProcessPoolExecutor | None = None
        self._inputs_from: str | None = None
        self._by_kernel: dict[tuple[str, tuple[int, ...]], Config] = {}
        self._kernels: dict[Config, str] = {}  #: a configuration's kernel key (``_kernel_key``)
        self._runs: dict[tuple[str, int, tuple], dict[str, Any]] = {}  #: results by ``_run_key``
        self._done = self._total = 0

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # forkserver, not fork: forking the caller copies its whole address space, and a caller
            # holding gigabytes (a test worker after the long-T goldens, a notebook with torch) got
            # ENOMEM from fork() on CI; the server is a fresh interpreter that imports numpy and
            # ptosim once and forks small workers from itself.
            if "forkserver" in multiprocessing.get_all_start_methods():
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(["numpy", "ptosim", "pattern_gen.tune.evaluate"])
            else:
                context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_one_blas_thread)
        return self._pool

    def _render(self, config: Config) -> Point:
        point = Point(config)
        try:
            plan, folder, _report = write_instance(self.cat, self.space.request(config), self.workdir / f"c{len(self.points)}")
        except PatternGenError as exc:
            point.refused = "; ".join(p.message for p in exc.problems)
            return point
        point.name, point.folder = plan.name, folder
        if self._inputs_from is None:
            self._inputs_from = str(folder)
        return point

    def _kernel_key(self, config: Config, point: Point) -> str:
        """The kernel's code without its name and its unroll list: two configurations that render
        the same kernel (a tile the fitting would have chosen anyway) cost the same at a T where
        their lists take the same paths, and are run once (``_run``)."""
        assert point.folder is not None
        text = read_text_file(point.folder / "kernel.py", errors="replace")
        text = "\n".join(line for line in text.splitlines() if not line.startswith("# content-hash:"))  # a digest of the rest
        for token in (point.name, point.name.replace("-", "_"), str(list(self.space.unroll(config)))):
            text = text.replace(token, "")
        return hashlib.sha256(text.encode()).hexdigest()

    def _run_key(self, config: Config, T: int) -> tuple[str, int, tuple]:
        """What a run's estimate depends on: the kernel and the paths T takes through its list
        (at T=1024 every list holding 128 runs 8 x 128 — one run for all of them), and whether the
        loop is unrolled at all (``ptosim.cost.partition.unrolled``: a list above [1])."""
        factors = self.space.unroll(config)
        return (self._kernels[config], T, (factors[0] > 1, *(f for _, f in unroll_schedule(0, T, 1, list(factors)))))

    @property
    def incumbent(self) -> float:
        """The best weighted time estimated so far (infinity before the first)."""
        return min((p.score for p in self.points.values() if p.score is not None), default=float("inf"))

    def evaluate(self, configs: Sequence[Config], *, bound: bool = True) -> list[Point]:
        """Points of ``configs`` (cached ones are not estimated again).

        The Ts run smallest first, all configurations of a stage in parallel; a configuration whose
        partial weighted time already reaches the best complete one is not run at the larger Ts
        (branch and bound: every term is positive, so it cannot win) and keeps that lower bound.
        ``bound=False`` runs every configuration at every T (a plot needs every point)."""
        fresh = [c for c in dict.fromkeys(configs) if c not in self.points]
        twins: dict[Config, Config] = {}
        for c in fresh:
            self.points[c] = p = self._render(c)
            if p.folder is not None:
                self._kernels[c] = self._kernel_key(c, p)
                key = (self._kernels[c], self.space.unroll(c))
                if key in self._by_kernel:
                    twins[c] = self._by_kernel[key]
                else:
                    self._by_kernel[key] = c
        alive = [c for c in fresh if self.points[c].folder is not None and c not in twins]
        self._total += len(alive) * len(self.weights)
        for T in sorted(self.weights):
            for c in list(alive):  # a run of thousands of loop passes is minutes of cost model
                passes = len(unroll_schedule(0, T, 1, list(self.space.unroll(c))))
                if passes > MAX_PASSES:
                    self.points[c].refused = (f"T={T}: {passes} loop passes with unroll {list(self.space.unroll(c))} (> {MAX_PASSES}): "
                                              "not estimated; a token-by-token loop at this T is no candidate")
                    alive.remove(c)
                    self._total -= len(self.weights) - len(self.points[c].us)
            best = self.incumbent if bound else float("inf")
            for c in list(alive):
                partial = weighted_time(self.points[c].us, {t: w for t, w in self.weights.items() if t in self.points[c].us})
                if self.points[c].refused is not None or partial >= best:
                    if self.points[c].refused is None:
                        self.points[c].lower = partial
                    alive.remove(c)
                    self._total -= len(self.weights) - len(self.points[c].us)
            self._run([(c, T) for c in alive])
            for c in alive:
                p = self.points[c]
                if p.refused is None and len(p.us) == len(self.weights):
                    p.score = weighted_time(p.us, self.weights)
        for c, twin in twins.items():
            p, q = self.points[c], self.points[twin]
            p.refused, p.us, p.bound, p.tasks, p.score, p.lower = q.refused, dict(q.us), dict(q.bound), dict(q.tasks), q.score, q.lower
        return [self.points[c] for c in configs]

    def _run(self, runs: list[tuple[Config, int]]) -> None:
        """Estimate ``runs``; a run whose key (``_run_key``) was estimated before, or is in this
        batch already, takes that result."""
        groups: dict[tuple[str, int, tuple], list[tuple[Config, int]]] = {}
        for c, T in runs:
            key = self._run_key(c, T)
            if key in self._runs:
                self._record(c, T, self._runs[key])
            else:
                groups.setdefault(key, []).append((c, T))
        if not groups:
            return
        inputs = self._inputs_from or ""

        def finish(key: tuple[str, int, tuple], res: dict[str, Any]) -> None:
            self._runs[key] = res
            for c, T in groups[key]:
                self._record(c, T, res)

        if self.jobs == 1 or len(groups) == 1:
            for key, members in groups.items():
                c, T = members[0]
                finish(key, _job(str(self.points[c].folder), T, self.seed, inputs))
            return
        futures: dict[Future, tuple[str, int, tuple]] = {
            self._executor().submit(_job, str(self.points[members[0][0]].folder), members[0][1], self.seed, inputs): key
            for key, members in groups.items()
        }
        for fut in as_completed(futures):
            finish(futures[fut], fut.result())

    def _record(self, config: Config, T: int, res: Mapping[str, Any]) -> None:
        point = self.points[config]
        if "error" in res:
            point.refused = point.refused or f"T={T}: {res['error']}"
        else:
            point.us[T], point.tasks[T], point.bound[T] = res["e2e_us"], res["tasks"], res["bound"]
        self._done += 1
        if self.progress is not None:
            self.progress(self._done, self._total)

