"""How values are written for people — CLI tables, docs pages, messages: as a card spells them."""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["yaml_word", "plain", "utilisation", "quote"]


def yaml_word(value: Any) -> str:
    """A value as a card spells it (``true``, not ``True``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def plain(value: Any, *, mappings: bool = False) -> str:
    """A value for a table cell: bools as card words, lists joined with commas; with ``mappings``
    a dict as ``{key: value, …}`` in the same words (otherwise as Python prints it)."""
    if isinstance(value, bool):
        return yaml_word(value)
    if isinstance(value, list):
        return ", ".join(plain(x, mappings=mappings) for x in value)
    if mappings and isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {plain(x, mappings=True)}" for k, x in value.items()) + "}"
    return str(value)


def utilisation(estimate: Mapping[str, Any], digits: int) -> str:
    """The unit utilisation of a cost estimate as percentages: ``cube 41%, vector 73%``."""
    return ", ".join(f"{k} {v:.{digits}%}" for k, v in estimate.get("utilization", {}).items())


def quote(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters: a hostile value (5,000 digits,
    a pasted file) is named by its start and its length, never echoed whole."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 20]}…{text[-8:]} ({len(text)} characters)"
