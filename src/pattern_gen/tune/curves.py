"""Estimated time against T for each unroll candidate of a plan alone and for its own unroll list
(the instance pages' plot): where the crossovers are, and how the chosen list compares.

Every point is a full kernel run on ptosim plus the cost model, so the curves of the committed
instances are kept (``docs build`` stores them beside the docs sources) under a key made of the
instance's content hash and a fingerprint of the simulator and the platform profile: they are
recomputed only when the kernel, ptosim or the profile changes.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..catalogue.catalogue import Catalogue
from ..plan.kernel_plan import KernelPlan
from ..plan.unroll import list_key
from .evaluate import Evaluator
from .space import tuning_space

__all__ = ["CURVE_TS", "curve_ts", "unroll_curves", "simulator_fingerprint"]

#: token counts of the plot (log-spaced: decode to a prefill chunk)
CURVE_TS = (1, 4, 16, 64, 256)
#: a kernel with a phase after the token loop (SK-05's attention) adds the same per-token work to
#: every unroll candidate; its plot stops at 64 tokens (at 256 the attention's tasks dominate and
#: the cost model needs minutes and gigabytes per point)
PHASED_MAX_T = 64


def curve_ts(plan: KernelPlan) -> tuple[int, ...]:
    """The token counts of a plan's plot."""
    if any(s.stage.after_loop for s in plan.stages):
        return tuple(T for T in CURVE_TS if T <= PHASED_MAX_T)
    return CURVE_TS


def simulator_fingerprint(profile_source: str | Path | None) -> str:
    """A digest of ptosim's sources and the platform profile: what an estimate depends on besides
    the kernel itself."""
    import ptosim

    h = hashlib.sha256()
    root = Path(ptosim.__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    if profile_source is not None and Path(profile_source).is_file():
        h.update(Path(profile_source).read_bytes())
    return h.hexdigest()[:16]


def unroll_curves(
    cat: Catalogue,
    plan: KernelPlan,
    Ts: Sequence[int] | None = None,
    *,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[int, dict[int, float]]:
    """``{"128,1": {T: µs}}`` for the plan's unroll list and every unroll candidate of its skeleton
    alone (its tiles and options as they are); a list the platform refuses is left out."""
    Ts = curve_ts(plan) if Ts is None else Ts
    space = tuning_space(plan, cat.card(plan.skeleton).loop.candidates, all_unrolls=True)
    weights: Mapping[int, float] = {int(T): 1.0 / len(Ts) for T in Ts}
    configs = [space.default.with_pick(0, i) for i in range(len(space.axes[0].choices))]
    with tempfile.TemporaryDirectory(prefix="pattern-gen-curves-") as work, Evaluator(cat, space, weights, Path(work), jobs=jobs, progress=progress) as ev:
        points = ev.evaluate(configs, bound=False)
    return {list_key(space.unroll(p.config)): dict(sorted(p.us.items())) for p in points if p.ok}
