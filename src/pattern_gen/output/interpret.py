"""One line that reads a cost estimate: what bounds the kernel, and the biggest lever the cards name.

The bound is the pipe with the most busy time (MTE_IN loads, MTE1 L1->L0 moves, the Cube, the
Vector unit, MTE_OUT stores), or scheduling when no pipe is near the AI cores' busy time (task
launch and dependency latency dominate). The lever comes from the plan's own data: the token loop
(how many passes ``loop_unroll`` makes at this T with the instance's unroll list, and what the
card's other unroll candidates would make) and the label that costs most.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..plan.unroll import describe_paths, path_counts

__all__ = ["interpret_estimate"]

_PIPES = {
    "mte_in": "MTE_IN-bound (GM loads)",
    "mte1": "MTE1-bound (L1->L0 moves)",
    "cube": "cube-bound",
    "vector": "vector-bound",
    "mte_out": "MTE_OUT-bound (GM stores)",
}
#: a pipe busy for less than this share of the AI cores' busy time bounds nothing
_SCHEDULING_SHARE = 0.5


def interpret_estimate(estimate: Mapping[str, Any], T: int, unroll: Sequence[int], candidates: Sequence[int]) -> str:
    """``"MTE_IN-bound: T=37: 32 + 4 + 1; …"`` for an estimate of ``T`` tokens of a kernel whose
    token loop runs ``unroll_list=unroll``."""
    u = estimate.get("utilization") or {}
    pipes = {k: float(u.get(k, 0.0)) for k in _PIPES}
    top = max(pipes, key=lambda k: pipes[k])
    busy = float(u.get("aicore", 0.0))
    bound = _PIPES[top] if busy and pipes[top] >= _SCHEDULING_SHARE * busy else "scheduling-bound (task launch and hand-off latency)"
    factors = list(unroll)
    passes = sum(n for _, n in path_counts(T, factors))
    paths = describe_paths(T, factors)
    missing = sorted((c for c in candidates if 1 < c < factors[0] and c not in factors), reverse=True)
    fewer = sum(n for _, n in path_counts(T, sorted(set(factors) | set(missing), reverse=True))) if missing else passes
    larger = sorted(c for c in candidates if c > factors[0])
    labels = estimate.get("per_label_us") or {}
    costly = max(labels, key=lambda k: labels[k]) if labels else None
    if fewer < passes:
        lever = (
            f"{passes} loop passes ({paths}); the card's candidates {'/'.join(map(str, missing))} added to the "
            f"unroll list would make {fewer}"
        )
    elif top in ("mte_in", "mte1") and larger:
        lever = (
            f"weights re-read per loop pass ({passes} passes: {paths}); "
            f"a larger unroll candidate ({'/'.join(map(str, larger))}) cuts passes"
        )
    elif costly is not None:
        lever = f"{paths}; most time in {costly} ({labels[costly]:.1f} µs of tasks): its tile shape and options are the lever"
    else:
        lever = f"{passes} loop passes ({paths})"
    return f"{bound}: {lever}"


def per_phase(summary: Mapping[str, Any], stages: Any) -> dict[str, float] | None:
    """Task time of the token loop (phase 1) and of the stages after it (phase 2: SK-05's
    attention), from the per-label times; None for a kernel of one phase."""
    after = {s.get("label") for s in stages or [] if isinstance(s, Mapping) and s.get("after_loop")}
    per = summary.get("per_label_us") or {}
    if not after or not per:
        return None
    phase2 = sum(v for k, v in per.items() if k in after)
    return {"phase 1 (token loop)": sum(per.values()) - phase2, "phase 2 (after the loop)": phase2}
