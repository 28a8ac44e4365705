"""How values are written for people — CLI tables, docs pages, messages: as a card spells them."""

from __future__ import annotations

import re

from typing import Any, Mapping

__all__ = ["parse_int", "parse_float", "yaml_word", "plain", "utilisation", "quote"]


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
    units = estimate.get("utilization", {})
    # a fixed order: a fresh estimate and one read back from a cache (JSON with sorted keys) print alike
    order = [u for u in _UNIT_ORDER if u in units] + sorted(u for u in units if u not in _UNIT_ORDER)
    return ", ".join(f"{k} {units[k]:.{digits}%}" for k in order)


_UNIT_ORDER = ("cube", "vector", "mte_in", "mte1", "mte_out", "aicore")


def quote(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters: a hostile value (5,000 digits,
    a pasted file) is named by its start and its length, never echoed whole."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 20]}…{text[-8:]} ({len(text)} characters)"


#: a number typed on a command line or in a manifest: ASCII digits only (Python's int() and float()
#: also take '２５６', '1_000' and surrounding spaces, which a card value never means), short
_INT_TEXT = re.compile(r"[+-]?[0-9]{1,30}")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,4})?|[+-]?(?:inf|nan)", re.IGNORECASE)


def parse_int(value: object) -> int:
    """``value`` as an int: an int (not a bool) or its plain ASCII decimal text; else ValueError."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if not _INT_TEXT.fullmatch(text):
        raise ValueError(f"not an integer: {value!r}")
    return int(text)


def parse_float(value: object) -> float:
    """``value`` as a float: a number, or its plain ASCII decimal text; else ValueError."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    if not _FLOAT_TEXT.fullmatch(text):
        raise ValueError(f"not a number: {value!r}")
    return float(text)
