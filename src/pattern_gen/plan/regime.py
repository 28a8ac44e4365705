"""A skeleton's regime (its special shape class) applied to a request: the first regime whose rule
holds for the request's dims and parameters replaces the skeleton's unroll candidates, tiles,
option advice and cache policy, sets the slot parameters it needs and its defaults, and may align a
dim otherwise (``multiple_of``)."""

from __future__ import annotations

from typing import Any, Mapping

from ..cards import model as m
from ..vocab.errors import Problem
from ..vocab.text import yaml_word

__all__ = ["select_regime", "apply_regime", "regime_params", "regime_note", "dim_steps", "dim_step_problems"]


def select_regime(skeleton: m.SkeletonCard, dims: Mapping[str, int], params: Mapping[str, Any]) -> m.Regime | None:
    return next((r for r in skeleton.regimes if r.selects(dims, params)), None)


def regime_params(
    regime: m.Regime, params: dict[str, Any], defaults: dict[str, Any], given: Mapping[str, Any], skeleton_id: str
) -> list[Problem]:
    """Set the regime's parameters in ``params``; a value the request gave otherwise is a problem.
    The regime's defaults replace the card's in ``defaults`` and, where the request gave none, in
    ``params``."""
    problems = []
    for key, value in regime.slot_defaults.items():
        defaults[key] = value
        if key not in given:
            params[key] = value
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
    loop = skeleton.loop.model_copy(update={"candidates": list(regime.unroll), "default": list(regime.unroll)})
    return skeleton.model_copy(update={"performance": performance, "loop": loop})


def regime_note(skeleton_id: str, regime: m.Regime) -> str:
    text = f"{skeleton_id} {regime.name} regime ({regime.trigger()}): {' '.join(regime.doc.split())}"
    if regime.warning:
        text += f" Warning: {' '.join(regime.warning.split())}"
    return text


def dim_steps(skeleton: m.SkeletonCard, dim: str) -> set[int]:
    """Every alignment ``dim`` may have: its own ``multiple_of`` and any regime's."""
    return {skeleton.dims[dim].multiple_of} | {r.multiple_of[dim] for r in skeleton.regimes if dim in r.multiple_of}


def dim_step_problems(skeleton: m.SkeletonCard, regime: m.Regime | None, dims: Mapping[str, int]) -> list[Problem]:
    """A given dim that is not a multiple of its step here: the regime's if one applies, else the
    dim's own (a regime that would take the value is named, with what selects it)."""
    problems = []
    for key in skeleton.dims:
        spec, value = skeleton.dims[key], dims[key]
        step = regime.multiple_of.get(key, spec.multiple_of) if regime is not None else spec.multiple_of
        if value % step == 0:
            continue
        lower, upper = value // step * step, (value // step + 1) * step
        near = f"{lower} or {upper}" if lower else str(upper)
        where = f" in {skeleton.id}'s {regime.name} regime ({regime.trigger()})" if regime is not None and key in regime.multiple_of else ""
        others = [r for r in skeleton.regimes if r is not regime and key in r.multiple_of and value % r.multiple_of[key] == 0
                  and (key not in r.dims or r.dims[key].holds(value))]
        elsewhere = "".join(f"; {skeleton.id}'s {r.name} regime takes it when {r.trigger()}" for r in others)
        problems.append(Problem(
            "bad-dim", f"dim {key}={value} must be a multiple of {step}{where} ({spec.doc or 'alignment'}); use --dim {key}={near}{elsewhere}",
        ))
    return problems
