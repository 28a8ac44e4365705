"""Checks of a card's performance advice: option keys and values are valid PyPTO."""

from __future__ import annotations

from typing import Any, Callable

from ptosim.errors import OptionError
from ptosim.options import validate_pass_options, validate_runtime_options

from ..cards.model.performance import OPERATION_KEYS
from ..catalogue.catalogue import Catalogue
from ..vocab.errors import Problem, did_you_mean

__all__ = ["option_problems"]


def option_problems(cat: Catalogue, card: Any) -> list[Problem]:
    problems = []
    perf = card.performance
    validators: dict[str, Callable[[dict[str, Any]], Any]] = {
        "runtime_options": validate_runtime_options,
        "pass_options": lambda options: validate_pass_options(options, source="jit"),
    }
    for group, validate in validators.items():
        for i, advice in enumerate(getattr(perf, group)):
            try:
                validate({advice.key: advice.value})
            except OptionError as exc:
                field = "key" if getattr(exc, "code", None) == "unknown-option" else "value"
                problems.append(Problem("bad-option", f"{group}: {exc.message}", **cat.where(card.id, ("performance", group, i, field))))
    for i, advice in enumerate(perf.operation_options):
        path = ("performance", "operation_options", i)
        if advice.key not in OPERATION_KEYS:
            problems.append(
                Problem(
                    "bad-option",
                    f"operation_options: unknown key {advice.key!r}; valid keys: {', '.join(OPERATION_KEYS)}" + did_you_mean(advice.key, OPERATION_KEYS),
                    **cat.where(card.id, path + ("key",)),
                )
            )
        elif not isinstance(advice.value, bool):
            problems.append(
                Problem("bad-option", f"operation_options: {advice.key} takes true/false, got {advice.value!r}", **cat.where(card.id, path + ("value",)))
            )
    for advice in list(perf.runtime_options) + list(perf.pass_options):
        for p in advice.platforms or []:
            if p not in cat.platforms:
                problems.append(Problem("unknown-platform", f"advice names unknown platform {p!r}", **cat.where(card.id, ("performance",))))
    return problems
