"""Recording the rules an estimate applied: the cost code calls ``fire(rule_id)`` with an id of
``rules.RULES`` once per decision it takes by that rule."""

from __future__ import annotations

from typing import Callable

from .rules import BY_ID, RULES

__all__ = ["Fire", "Fired", "ignore"]

#: what the cost code calls to record a rule it applied
Fire = Callable[[str], None]


def ignore(rule_id: str) -> None:
    """A ``Fire`` that records nothing (the default where a caller asks for no record)."""


class Fired:
    """The rules an estimate applied: call it with a rule id (an unknown id is a KeyError)."""

    __slots__ = ("_ids",)

    def __init__(self) -> None:
        self._ids: dict[str, None] = {}

    def __call__(self, rule_id: str) -> None:
        if rule_id not in self._ids:
            if rule_id not in BY_ID:
                raise KeyError(f"no cost rule {rule_id!r} in ptosim.cost.rules")
            self._ids[rule_id] = None

    def ids(self) -> tuple[str, ...]:
        """The rules fired, in the table's order."""
        return tuple(r.id for r in RULES if r.id in self._ids)
