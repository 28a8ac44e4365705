"""pattern-gen's errors: one message per problem, a closed set of codes, a place to point at.

Every problem a user can cause (a malformed card, an unknown parameter, an illegal composition,
a tile that does not fit) is a ``Problem`` with a ``code`` from ``ErrorCode``, a message that
states the rule, the offending value and the fix, and — for card files — ``file:line:col``.
``PatternGenError`` carries one or more problems; the CLI prints them and exits with code 2.
The codes are documented on the docs site (``docs/errors.md``), and a test keeps both in step.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence, get_args

__all__ = [
    "ErrorCode",
    "ERROR_CODES",
    "Problem",
    "PatternGenError",
    "FlowError",
    "closest",
    "did_you_mean",
]

ErrorCode = Literal[
    "yaml-syntax",
    "card-schema",
    "card-id",
    "duplicate-id",
    "unknown-card",
    "dependency-cycle",
    "flow-mismatch",
    "undefined-name",
    "bad-predicate",
    "bad-expression",
    "dtype-illegal",
    "rank-mismatch",
    "shape-mismatch",
    "reshape-size",
    "reserved-name",
    "unknown-constraint",
    "unknown-platform",
    "bad-profile",
    "unknown-target",
    "bad-config",
    "model-config",
    "missing-golden",
    "slot-mismatch",
    "unknown-param",
    "bad-param-value",
    "bad-dim",
    "tile-unfit",
    "composition-refused",
    "bad-option",
    "bad-path",
    "bad-name",
    "hand-edited",
    "manifest",
    "instance",
    "pypto-failure",
]

ERROR_CODES: tuple[str, ...] = get_args(ErrorCode)


_LONG_WORD = 300
_LONG = re.compile(r"\S{%d,}" % _LONG_WORD)


def _shorten(match: "re.Match[str]") -> str:
    word = match.group(0)
    return f"{word[:60]}…{word[-12:]} ({len(word)} characters)"


#: C0 and C1 controls and the Unicode line separators: anything a terminal or ``splitlines`` breaks on
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _visible(text: str) -> str:
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text) if _CONTROL.search(text) else text


@dataclass(frozen=True)
class Problem:
    """One thing wrong, and where: ``file:line:col: message [code]``."""

    code: ErrorCode
    message: str
    file: str | None = None
    line: int | None = None
    col: int | None = None

    def __post_init__(self) -> None:
        # a safety net under the messages that quote a value (``text.quote``): whatever reaches a
        # message, a run of hundreds of characters without a space is shortened, not echoed, and a
        # control character (a newline in a path given on the command line) is shown escaped, so
        # a problem stays one line
        message = self.message
        if len(message) > _LONG_WORD and _LONG.search(message):
            message = _LONG.sub(_shorten, message)
        object.__setattr__(self, "message", _visible(message))
        if self.file is not None:
            object.__setattr__(self, "file", _visible(str(self.file)))

    @property
    def where(self) -> str:
        if self.file is None:
            return ""
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}" + (f":{self.col}" if self.col else "")

    def __str__(self) -> str:
        where = self.where
        return f"{where + ': ' if where else ''}{self.message} [{self.code}]"

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.file or "", self.line or 0, self.col or 0, self.message)


class PatternGenError(Exception):
    """Bad input: one or more problems. The CLI prints each and exits with code 2."""

    def __init__(self, problems: Problem | Sequence[Problem], refused_by: str | None = None) -> None:
        items = [problems] if isinstance(problems, Problem) else list(problems)
        if not items:
            raise ValueError("PatternGenError needs at least one problem")
        self.problems: list[Problem] = sorted(items, key=Problem.sort_key)
        #: the card whose ``refuse:`` rule the request matched (the cards' own "not a kernel"), if that
        #: is the problem: callers tell it from every other refusal by this, not by the wording
        self.refused_by = refused_by
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def code(self) -> str:
        return self.problems[0].code


class FlowError(Exception):
    """A problem in a card's flow, with the card and the YAML path of the offending node (the
    caller turns the path into ``file:line:col``). Raised by the flow expander and by the
    catalogue's card lookup (an unknown card named by a call), so it lives below both."""

    def __init__(self, code: ErrorCode, message: str, card: str, path: tuple[Any, ...]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.card = card
        self.path = path


def closest(word: str, options: Iterable[str]) -> str | None:
    """The closest valid spelling of ``word`` (None if nothing is close)."""
    matches = difflib.get_close_matches(str(word), [str(o) for o in options], n=1, cutoff=0.5)
    return matches[0] if matches else None


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` or an empty string."""
    options = list(options)
    match = closest(word, options)
    return f"; did you mean {match!r}?" if match and match != word else ""
