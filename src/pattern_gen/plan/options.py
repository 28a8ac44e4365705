"""Runtime, pass and operation options and cache policies of a plan, from the cards' advice.

Levels: ``must`` is always set, ``recommended`` is set unless ``--option`` gives
another value (``--option key=`` with no value unsets it), ``conditional`` follows its predicate (parameters for options, plan facts such as
``reads_per_iteration`` for cache policies). The skeleton's advice wins over its atoms'. Values
are validated with ptosim's option models, so a plan never carries an option PyPTO would refuse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ptosim.errors import OptionError
from ptosim.options import (
    PASS_KEYS,
    RUNTIME_KEYS,
    validate_pass_options,
    validate_runtime_options,
)

from ..cards import model as m
from ..cards.model.performance import OPERATION_KEYS
from ..cards.yamlsrc import load_located
from ..flow import CUBE_OPS, CStage, Var
from ..vocab.errors import PatternGenError, Problem, did_you_mean
from ..vocab.text import quote

__all__ = ["OptionPlan", "plan_options", "parse_option_arg", "OPERATION_KEYS"]

#: an option value is a number, a flag or a small dict; longer text is a mistake (or an attack)
MAX_OPTION_TEXT = 200


@dataclass
class OptionPlan:
    runtime: dict[str, Any] = field(default_factory=dict)
    pass_: dict[str, Any] = field(default_factory=dict)
    operation: dict[str, Any] = field(default_factory=dict)
    levels: dict[str, str] = field(default_factory=dict)
    cache_policy: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def group(self, name: str) -> dict[str, Any]:
        """The options of a group: ``runtime``, ``pass`` or ``operation``."""
        return {"runtime": self.runtime, "pass": self.pass_, "operation": self.operation}[name]


def _group_of(key: str) -> str | None:
    if key in RUNTIME_KEYS:
        return "runtime"
    if key in PASS_KEYS:
        return "pass"
    if key in OPERATION_KEYS:
        return "operation"
    return None


def parse_option_arg(text: str) -> tuple[str, Any]:
    """``key=value`` with a YAML value (``vec_nbuffer_setting={0: 4}``)."""
    if "=" not in text:
        raise PatternGenError(Problem("bad-option", f"--option {text!r}: expected key=value"))
    key, _, raw = text.partition("=")
    key = key.strip()
    if len(raw) > MAX_OPTION_TEXT:
        raise PatternGenError(Problem("bad-option", f"--option {key[:40]}: the value is {len(raw)} characters; option values are short (at most {MAX_OPTION_TEXT})"))
    if not raw.strip():
        return key, None
    try:  # the checked YAML reader: aliases cannot expand past its node budget
        value = load_located(raw, "--option").data
    except PatternGenError:
        raise PatternGenError(Problem("bad-option", f"--option {key[:40]}: cannot read the value {raw[:60]!r} (YAML)")) from None
    return key, value


def _validate(group: str, key: str, value: Any) -> str | None:
    try:
        if group == "runtime":
            validate_runtime_options({key: value})
        elif group == "pass":
            validate_pass_options({key: value}, source="jit")
        elif not isinstance(value, bool):
            return f"{key} must be true or false, got {quote(value)}"
    except OptionError as exc:
        return exc.message
    return None


def _weight_reads(stages: Iterable[CStage], weights: Iterable[str]) -> dict[str, int]:
    """How many Cube ops read each weight per loop iteration (through reshapes of it too)."""
    alias: dict[str, str] = {w: w for w in weights}
    counts = {w: 0 for w in alias}
    for stage in stages:
        for op in stage.ops:
            if op.op == "reshape" and isinstance(op.args[0], Var) and op.args[0].name in alias and op.out:
                alias[op.out] = alias[op.args[0].name]
            if op.op in CUBE_OPS:
                for a in op.args:
                    if isinstance(a, Var) and a.name in alias:
                        counts[alias[a.name]] += 1
    return counts


def plan_options(
    advice_cards: list[Any],
    env: Mapping[str, Any],
    platform: str,
    user: Mapping[str, Any],
    stages: list[CStage],
    roles: Mapping[str, str],
) -> OptionPlan:
    """Options for a plan. ``advice_cards`` in priority order (skeleton first); ``stages`` are the
    loop's stages (the cache policies count weight reads per iteration)."""
    plan = OptionPlan()
    problems: list[Problem] = []
    seen: set[str] = set()
    for card in advice_cards:
        perf: m.Performance = card.performance
        for group_name, items in (("runtime", perf.runtime_options), ("pass", perf.pass_options), ("operation", perf.operation_options)):
            for advice in items:
                if advice.key in seen:
                    continue
                if advice.platforms is not None and platform not in advice.platforms:
                    continue
                if advice.level == "conditional" and not advice.when.holds(env):
                    continue
                seen.add(advice.key)
                plan.group(group_name)[advice.key] = advice.value
                plan.levels[advice.key] = f"{advice.level} ({card.id})"
    for key, value in user.items():
        group = _group_of(key)
        if group is None:
            valid = sorted(RUNTIME_KEYS) + sorted(PASS_KEYS) + list(OPERATION_KEYS)
            problems.append(Problem("bad-option", f"--option {key}: unknown option; valid: {', '.join(valid)}" + did_you_mean(key, valid)))
            continue
        if value is None:  # ``--option key=``: leave the option unset (the tuner tries this)
            level = plan.levels.get(key, "")
            if key in plan.group(group):
                del plan.group(group)[key]
                plan.notes.append(f"--option {key}= unsets the {level.split(' (')[0]}-level setting of {level.split('(')[-1].rstrip(')')}")
            plan.levels[key] = "user (--option, unset)"
            continue
        message = _validate(group, key, value)
        if message:
            problems.append(Problem("bad-option", f"--option {key}={value!r}: {message}"))
            continue
        level = plan.levels.get(key, "")
        if level.startswith("must") and plan.group(group).get(key) != value:
            plan.notes.append(f"--option {key} overrides a must-level setting of {level.split('(')[-1].rstrip(')')}")
        plan.group(group)[key] = value
        plan.levels[key] = "user (--option)"
    if problems:
        raise PatternGenError(problems)
    weights = [n for n, r in roles.items() if r == "weight"]
    reads = _weight_reads(stages, weights)
    for card in advice_cards:
        for advice in card.performance.cache_policy:
            for name in weights:
                if name in plan.cache_policy:
                    continue
                if reads.get(name, 0) == 0:
                    continue  # not a matmul weight (e.g. a norm gamma)
                facts = {"reads_per_iteration": reads.get(name, 0)}
                if advice.level == "conditional" and any(facts.get(k) != v for k, v in advice.requires.items()):
                    plan.notes.append(
                        f"{name}: {advice.policy} not set — needs {advice.requires}, the plan has {facts} ({card.id})"
                    )
                    continue
                plan.cache_policy[name] = advice.policy
                plan.notes.append(f"{name}: {advice.policy} ({advice.level}, {card.id}): read {reads[name]}x per iteration")
    return plan
