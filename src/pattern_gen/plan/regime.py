"""A skeleton's regime (its special shape class) applied to a request: the first regime whose rule
holds for the request's dims and parameters replaces the skeleton's unroll candidates, tiles,
option advice and cache policy, and sets the slot parameters it needs."""

from __future__ import annotations

from typing import Any, Mapping

from ..cards import model as m
from ..vocab.errors import Problem
from ..vocab.text import yaml_word

__all__ = ["select_regime", "apply_regime", "regime_params", "regime_note"]


def select_regime(skeleton: m.SkeletonCard, dims: Mapping[str, int], params: Mapping[str, Any]) -> m.Regime | None:
    return next((r for r in skeleton.regimes if r.selects(dims, params)), None)


def regime_params(regime: m.Regime, params: dict[str, Any], given: Mapping[str, Any], skeleton_id: str) -> list[Problem]:
    """Set the regime's parameters in ``params``; a value the request gave otherwise is a problem."""
    problems = []
    for key, value in regime.params.items():
        if key in given and str(params.get(key)) != str(value):
            problems.append(Problem(
                "bad-param-value",
                f"{skeleton_id}'s {regime.name} regime ({regime.trigger()}) needs {key}={yaml_word(value)}; "
                f"got {key}={yaml_word(params.get(key))} — drop the --param, or change the dims that select the regime",
            ))
        else:
            params[key] = value
    return problems


def _merged(base: list[m.OptionAdvice], over: list[m.OptionAdvice]) -> list[m.OptionAdvice]:
    keys = {a.key for a in over}
    return [a for a in base if a.key not in keys] + list(over)


def apply_regime(skeleton: m.SkeletonCard, regime: m.Regime) -> m.SkeletonCard:
    """The skeleton with the regime's settings in place of its own (a copy; the card is unchanged)."""
    perf = skeleton.performance
    tiles = {**regime.tiles, **{k: v for k, v in perf.tiles.items() if k not in regime.tiles}}  # the regime's first
    performance = perf.model_copy(update={
        "tiles": tiles,
        "runtime_options": _merged(perf.runtime_options, regime.runtime_options),
        "pass_options": _merged(perf.pass_options, regime.pass_options),
        "cache_policy": perf.cache_policy if regime.cache_policy is None else list(regime.cache_policy),
    })
    loop = skeleton.loop.model_copy(update={"candidates": list(regime.unroll)})
    return skeleton.model_copy(update={"performance": performance, "loop": loop})


def regime_note(skeleton_id: str, regime: m.Regime) -> str:
    text = f"{skeleton_id} {regime.name} regime ({regime.trigger()}): {' '.join(regime.doc.split())}"
    if regime.warning:
        text += f" Warning: {' '.join(regime.warning.split())}"
    return text
