"""Markdown pieces every page uses: escaped table cells, tables, card links."""

from __future__ import annotations

from typing import Any, Iterable

from ..vocab.text import plain

__all__ = ["esc", "fmt", "table", "card_link"]


def esc(text: Any) -> str:
    """A table cell: ``|`` escaped, one line."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def fmt(value: Any) -> str:
    """A value as a card spells it, dicts included (``{0: 2}``)."""
    return plain(value, mappings=True)


def table(header: list[str], rows: Iterable[list[Any]]) -> str:
    rows = list(rows)
    if not rows:
        return "_none_\n"
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def card_link(cid: str, depth: int = 1) -> str:
    return f"[{cid}]({'../' * depth}cards/{cid}.md)"
