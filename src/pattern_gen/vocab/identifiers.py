"""Which card words may become Python names or name tokens in generated files.

A card's tensor, dim, stage and loop names become identifiers of the generated kernel; its enum
choices and platform names become tokens of instance (folder) names. Both are checked here, when
the card is read, so no card text can reach code or a path in any other shape.
"""

from __future__ import annotations

import builtins
import keyword
import re

__all__ = ["IDENTIFIER", "TOKEN", "PYTHON_RESERVED", "identifier_problem", "token_problem"]

#: a Python identifier in ASCII (no unicode look-alikes: ``tіle`` with a Cyrillic і is not ``tile``)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a token of an instance name: no separator (``-``, ``.``, ``/``), so it cannot climb out of a folder
TOKEN = re.compile(r"[A-Za-z0-9_]+")

#: names a card may never take: keywords (soft ones too) and every builtin (shadowing ``str`` or
#: ``__import__`` in a generated module is a trap, however it is meant)
PYTHON_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))


def identifier_problem(name: str) -> str | None:
    """Why ``name`` cannot be a name in generated code (None: it can)."""
    if not IDENTIFIER.fullmatch(name):
        return "must be an ASCII name: a letter or _, then letters, digits or _"
    if name in PYTHON_RESERVED:
        return f"{name!r} is a Python keyword or builtin; pick another name"
    if name.startswith("__") and name.endswith("__"):
        return f"{name!r} is a dunder name, which Python reserves; pick another name"
    return None


def token_problem(value: str) -> str | None:
    """Why ``value`` cannot be part of an instance name (None: it can)."""
    if not TOKEN.fullmatch(value):
        return "becomes part of instance (folder) names: use letters, digits and _ only"
    return None
