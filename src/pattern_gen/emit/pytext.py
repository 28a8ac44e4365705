"""The one way text from a card, profile, manifest or config reaches generated Python.

Cards come from many hands and CI runs what they generate, so no card string is ever spliced into
code as it is. It lands in one of three places, each with its helper here:

- a **literal** (a label, a loop name, a parameter value): ``py_literal`` — a double-quoted string
  with every quote, backslash, newline and non-printable character escaped, finite floats only,
  containers recursively;
- a **comment** (``# …``): ``comment_text`` — one line, every non-printable character (controls,
  ESC, bidi overrides: Trojan Source) shown as its escape;
- a **docstring**: ``docstring_text`` — a comment's text with backslashes and quotes escaped.

Identifiers (tensor, dim and stage names) are not made safe here: the card schema admits only
``[A-Za-z_][A-Za-z0-9_]*`` names that are not keywords, builtins or the kernel's own names
(``vocab.identifiers``).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["py_literal", "comment_text", "docstring_text", "NonFinite"]

#: a comment longer than this is cut (a card's prose belongs in its docs, not in every kernel line)
MAX_COMMENT = 2000


class NonFinite(ValueError):
    """A float that has no Python literal (``inf``/``nan`` would render as undefined names)."""


def py_literal(value: Any) -> str:
    """Python source that evaluates to ``value`` (str, bool, int, finite float, None, and lists,
    tuples and dicts of them; dict keys keep their type)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NonFinite(f"{value!r} has no Python literal")
        return repr(float(value))
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    raise TypeError(f"no literal for a {type(value).__name__}")


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quoted(text: str) -> str:
    """A double-quoted literal (the house style): backslash, quote and every non-printable
    character escaped, so nothing in ``text`` can end the string or hide in it."""
    return '"' + "".join(_ESCAPES.get(ch) or _visible(ch) for ch in text) + '"'


def _visible(ch: str) -> str:
    if ch.isprintable():
        return ch
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def comment_text(text: Any) -> str:
    """Card text for a ``#`` comment: one line of printable characters."""
    line = " ".join(str(text).split())
    line = "".join(_visible(ch) for ch in line)
    return line if len(line) <= MAX_COMMENT else line[: MAX_COMMENT - 1] + "…"


def docstring_text(text: Any) -> str:
    """Card text inside a triple-quoted docstring: a comment's text, backslashes and quotes escaped."""
    return comment_text(text).replace("\\", "\\\\").replace('"', '\\"')
