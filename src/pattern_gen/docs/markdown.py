"""Markdown pieces every page uses: escaped table cells, tables, card links."""

from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable

from ..vocab.text import plain

__all__ = ["esc", "text", "front_matter", "fmt", "table", "card_link"]


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_UNSAFE_LINK = re.compile(r"\]\(\s*(?=(?:javascript|vbscript|data|file):)", re.I)
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "{": "&#123;", "}": "&#125;"}


def text(value: Any) -> str:
    """Card text on a page: shown, never interpreted as HTML. Outside code spans ``& < >`` become
    entities (no tag, no autolink), ``{ }`` too (no attr_list attributes such as ``onclick``), and a
    link to a ``javascript:``/``data:`` URL loses its link syntax; Markdown emphasis and code spans
    still render (code spans escape their own content). The one helper for every card field."""
    source = str(value)
    out, last = [], 0
    for m in _CODE_SPAN.finditer(source):
        out.append(_plain(source[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(_plain(source[last:]))
    return "".join(out)


def _plain(part: str) -> str:
    part = "".join(_HTML.get(ch, ch) for ch in part)
    return _UNSAFE_LINK.sub("]\\(", part)


def front_matter(value: Any) -> str:
    """A YAML front-matter scalar (a page title, a tag): quoted, and HTML-escaped, since mkdocs'
    templates print titles and tags into the navigation without escaping them."""
    return json.dumps(html.escape(" ".join(str(value).split()), quote=False))


def esc(value: Any) -> str:
    """A table cell: card text made safe (``text``), ``|`` escaped, one line."""
    return text(value).replace("|", "\\|").replace("\n", " ").strip()


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
