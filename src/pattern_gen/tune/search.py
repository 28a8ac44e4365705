"""Searching the space: which configurations to estimate, and the ranking.

``coordinate`` (the default): every unroll candidate with the card's tiles and options; then, from
each of the ``beam`` best, one axis at a time — every alternative of every other axis is estimated
around the current point, the improving ones are combined, and the better of the combination and
the best single move becomes the new point, until nothing improves. The axes barely interact (a
vec stage's rows do not change a cube stage's cost), so this finds the exhaustive optimum at a
fraction of the runs (checked in the tests on SK-03). ``exhaustive``: every configuration.

The objective is the expected time of one call under the T distribution (the weighted mean of the
end-to-end estimates); the ranking breaks ties by the configuration, so it is deterministic.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from ..catalogue.catalogue import Catalogue
from ..output.instances import read_instance, run_instance
from ..plan.kernel_plan import Request
from ..plan.resolver import resolve
from ..vocab.errors import PatternGenError, Problem
from .evaluate import Evaluator, Point
from .space import Config, Space, tuning_space

__all__ = ["TuneResult", "tune", "STRATEGIES", "MAX_EXHAUSTIVE"]

STRATEGIES = ("coordinate", "exhaustive")
#: an exhaustive sweep larger than this is refused (it would run for many minutes)
MAX_EXHAUSTIVE = 512
_ROUNDS = 4


@dataclass
class TuneResult:
    space: Space
    weights: dict[int, float]
    strategy: str
    ranked: list[Point]  #: estimated configurations, best first
    pruned: list[Point]  #: those the resolver or ptosim refused, with the reason
    default: Point
    seconds: float = 0.0
    checked: dict[str, bool] = field(default_factory=dict)  #: configuration -> its golden test passed

    def best_single(self, T: int) -> Point | None:
        """The fastest configuration at ``T`` whose unroll list is one factor (with the 1 PyPTO
        appends), the card's tiles and options: what a single ``unroll=`` would give there."""
        singles = [p for p in self.ranked + self.pruned
                   if T in p.us and len(self.space.unroll(p.config)) <= 2 and not any(p.config.picks[1:])]
        return min(singles, key=lambda p: (p.us[T], p.config.picks), default=None)

    @property
    def best(self) -> Point:
        return self.ranked[0]

    def speedup(self, point: Point) -> float:
        """How much faster than the card defaults, under the T distribution."""
        assert point.score is not None and self.default.score is not None
        return self.default.score / point.score if point.score > 0 else float("inf")


def _key(p: Point) -> tuple:
    """Faster first; on a tie, fewer changes from the card defaults (a change that does not pay is
    not proposed), then the configuration itself."""
    return (p.score, sum(1 for c in p.config.picks[1:] if c), p.config.picks)


def _moves(space: Space, at: Config) -> list[Config]:
    return [at.with_pick(a, c) for a in range(1, len(space.axes)) for c in range(len(space.axes[a].choices)) if c != at.picks[a]]


def _combined(current: Point, better: list[Point]) -> Config | None:
    """Each axis's best improving move at once (None when only one axis improves)."""
    per_axis: dict[int, Point] = {}
    for p in better:
        axis = next(i for i, (x, y) in enumerate(zip(p.config.picks, current.config.picks)) if x != y)
        if axis not in per_axis or _key(p) < _key(per_axis[axis]):
            per_axis[axis] = p
    if len(per_axis) < 2:
        return None
    picks = list(current.config.picks)
    for axis, p in per_axis.items():
        picks[axis] = p.config.picks[axis]
    return Config(tuple(picks))


def _coordinate(ev: Evaluator, space: Space, beam: int) -> None:
    # each factor alone at every T first (no early stop: the table compares the winner with the
    # best single factor at each T), then every list the candidates make
    singles = [space.default.with_pick(0, i) for i, u in enumerate(space.axes[0].choices) if len(u) <= 2]
    ev.evaluate(singles, bound=False)
    unroll = ev.evaluate([space.default.with_pick(0, i) for i in range(len(space.axes[0].choices))])
    currents = sorted((p for p in unroll if p.ok), key=_key)[:beam]
    # the beam's points move in lockstep: one batch of runs per round keeps every worker busy
    for _ in range(_ROUNDS):
        if not currents:
            break
        moves = {id(c): _moves(space, c.config) for c in currents}
        ev.evaluate([m for ms in moves.values() for m in ms])
        steps: list[tuple[Point, list[Point]]] = []
        for c in currents:
            better = [p for p in (ev.points[m] for m in moves[id(c)]) if p.ok and _key(p) < _key(c)]
            if better:
                steps.append((c, better))
        combos = [_combined(c, better) for c, better in steps]
        ev.evaluate([k for k in combos if k is not None])
        nxt = []
        for (c, better), combo in zip(steps, combos):
            options = better + ([ev.points[combo]] if combo is not None and ev.points[combo].ok else [])
            nxt.append(min(options, key=_key))
        currents = list({p.config: p for p in nxt}.values())


def tune(
    cat: Catalogue,
    base: Request,
    weights: Mapping[int, float],
    *,
    strategy: str = "coordinate",
    beam: int = 2,
    jobs: int | None = None,
    seed: int = 0,
    check: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> TuneResult:
    """Tune ``base`` (a request: the defaults of what is not tuned) for the T ``weights``.

    ``check``: how many of the best configurations run their golden test afterwards (at the Ts
    their test module uses), so a proposal is known to be right, not only fast."""
    if strategy not in STRATEGIES:
        raise PatternGenError(Problem("bad-option", f"--strategy {strategy!r}: choose {' or '.join(STRATEGIES)}"))
    started = time.perf_counter()
    plan = resolve(cat, base)  # bad input is refused here, before any run
    if plan.target != "ptosim":
        raise PatternGenError(Problem("unknown-target", f"tune estimates with ptosim's cost model; drop --target {plan.target} (tune, then generate the winner for {plan.target})"))
    space = tuning_space(plan, cat.card(plan.skeleton).loop.candidates)
    if strategy == "exhaustive" and space.size() > MAX_EXHAUSTIVE:
        raise PatternGenError(Problem("bad-option", f"--strategy exhaustive: the space has {space.size()} configurations (> {MAX_EXHAUSTIVE}); use the coordinate search, or fix axes with --param unroll=/--tile/--option"))
    total = sum(weights.values())
    norm = {int(T): w / total for T, w in sorted(weights.items())}
    with tempfile.TemporaryDirectory(prefix="pattern-gen-tune-") as work, Evaluator(cat, space, norm, Path(work), jobs=jobs, seed=seed, progress=progress) as ev:
        default = ev.evaluate([space.default])[0]
        if not default.ok:
            raise PatternGenError(Problem("composition-refused", f"the card defaults cannot be estimated: {default.refused}"))
        if strategy == "exhaustive":
            ev.evaluate(list(space.all_configs()))
        else:
            _coordinate(ev, space, beam)
        points = list(ev.points.values())
        result = TuneResult(space, norm, strategy, sorted((p for p in points if p.ok), key=_key),
                            [p for p in points if not p.ok], default)
        for p in result.ranked[:max(0, check)]:
            result.checked[space.describe(p.config)] = _passes(p)
    result.seconds = time.perf_counter() - started
    return result


def _passes(point: Point) -> bool:
    """The configuration's golden test, at the Ts its test module runs."""
    assert point.folder is not None
    return all(run_instance(point.folder, T=T, estimate=False).passed for T in read_instance(point.folder)["test_T"])
