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

__all__ = ["py_literal", "comment_text", "docstring_text", "NonFinite", "LINE", "COMMENT", "wrapped_literal", "comment_lines", "wrapped_call"]

#: the longest line of generated code (the generated folder's ruff.toml says the same)
LINE = 120
#: the longest comment (from its ``#``) a generated line carries; longer text wraps onto more lines
COMMENT = 99

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


def wrapped_literal(head: str, value: Any, tail: str = "", pad: str = "") -> list[str]:
    """``pad + head + literal + tail`` as lines no longer than ``LINE``, laid out as ``ruff format``
    lays out a literal: on one line where it fits, else one entry per line with a trailing comma
    (recursively for an entry that does not fit either)."""
    one = pad + head + py_literal(value) + tail
    if len(one) <= LINE or not isinstance(value, (dict, list, tuple)) or not value:
        return [one]
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    inner = pad + "    "
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    lines = [pad + head + opening]
    for key, item in items:
        lines += wrapped_literal("" if key is None else py_literal(key) + ": ", item, ",", inner)
    return lines + [pad + closing + tail]


def comment_lines(text: Any, pad: str = "", first: str = "") -> list[str]:
    """Card text as ``#`` comment lines of at most ``COMMENT`` characters each (``first`` opens the
    first line, e.g. a stage's label), words kept whole."""
    words = (first + " " + comment_text(text)).split() if first else comment_text(text).split()
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= COMMENT:
            lines[-1] += " " + word
        else:
            lines.append("# " + word)
    return [pad + line for line in lines]


def _top_level_args(text: str) -> list[str]:
    """The comma-separated parts of an argument list, splitting only outside brackets and strings."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


def wrapped_call(code: str, pad: str) -> list[str]:
    """One line of code ending in a call, as ``ruff format`` lays it out under ``pad``: the line as
    it is where it fits, else the arguments on one indented line, else one argument a line."""
    opening = code.find("(")
    if len(pad + code) <= LINE or opening < 0 or not code.endswith(")"):
        return [code]
    head, args = code[: opening + 1], code[opening + 1 : -1]
    if len(pad + "    " + args) <= LINE:
        return [head, "    " + args, ")"]
    return [head] + ["    " + a + "," for a in _top_level_args(args)] + [")"]
