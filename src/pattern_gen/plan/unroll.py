"""The token loop's ``unroll_list``: how a request spells it, how a name encodes it, which paths a
token count takes.

PyPTO 0.2.0's ``loop_unroll`` compiles one path per factor of the list (de-duplicated, sorted
descending, 1 appended) and covers T greedily, largest factor first: T=37 with [32, 4, 1] runs
32 + 4 + 1 (``ptosim.control.unroll_schedule``). A plan keeps the list as PyPTO runs it — strictly
descending and ending with 1 — so ``unroll=128`` and ``unroll=128,1`` are one kernel. A request's
list must already be in that order (a list that reads otherwise is refused, not reordered: the
user may have meant something else), each factor one of the card's candidates or 1, and each
dividing the larger ones (otherwise PyPTO 0.2.0's sub-loops overrun T or repeat tokens, measured).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Sequence

from ptosim.control import unroll_schedule

__all__ = ["UnrollError", "parse_unroll", "chain_break", "unroll_token", "parse_unroll_token", "unroll_text", "list_key", "path_counts", "describe_paths"]


class UnrollError(ValueError):
    """A spelled list that is not an unroll list of the card (the message names the value)."""


def _factor(item: Any) -> int:
    if isinstance(item, bool):
        raise UnrollError(f"{item!r} is not a factor (a positive integer)")
    if isinstance(item, int):
        value = item
    elif isinstance(item, str) and re.fullmatch(r"\s*\d+\s*", item):
        value = int(item)
    else:
        raise UnrollError(f"{item!r} is not a factor (a positive integer)")
    if value < 1:
        raise UnrollError(f"{value} is not a factor (a positive integer)")
    return value


def parse_unroll(raw: Any, candidates: Sequence[int]) -> tuple[int, ...]:
    """``128`` / ``"128,16,1"`` / ``[128, 16]`` -> ``(128, 16, 1)``; UnrollError names what is wrong."""
    if isinstance(raw, (list, tuple)):
        items = list(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        text = text[1:-1] if text.startswith("[") and text.endswith("]") else text  # [128, 16] as YAML writes it
        items = [] if not text.strip() else text.split(",")
    else:
        items = [raw]
    if not items:
        raise UnrollError("the list is empty; give at least one factor, e.g. " + ",".join(map(str, candidates[:1])))
    factors = [_factor(i) for i in items]
    allowed = set(candidates) | {1}
    for f in factors:
        if f not in allowed:
            raise UnrollError(f"{f} is not one of the candidates {', '.join(map(str, sorted(allowed, reverse=True)))}")
    twice = sorted((f for f, n in Counter(factors).items() if n > 1), reverse=True)
    if twice:
        raise UnrollError(f"{twice[0]} is listed twice; list each factor once")
    for a, b in zip(factors, factors[1:]):
        if b > a:
            raise UnrollError(f"{b} follows {a}: list the factors largest first, e.g. {','.join(map(str, sorted(factors, reverse=True)))}")
    broken = chain_break(factors)
    if broken is not None:
        small, large = broken
        raise UnrollError(
            f"{small} does not divide {large}: PyPTO 0.2.0 then runs a pass past the last token or runs tokens twice "
            "(each factor's sub-loop ends at T minus the remainder of all of T); list factors that divide each other"
        )
    return tuple(factors) if factors[-1] == 1 else (*factors, 1)


def chain_break(factors: Sequence[int]) -> tuple[int, int] | None:
    """``(small, large)`` of the first factor that does not divide a larger one, or None: PyPTO's
    path selection is the greedy cover only for lists whose factors divide each other."""
    for i, small in enumerate(factors):
        for large in factors[:i]:
            if large % small:
                return small, large
    return None


def unroll_token(factors: Sequence[int]) -> str:
    """The name's spelling: ``(128, 16, 1)`` -> ``128_16``; the appended 1 is implied (``(1,)`` -> ``1``)."""
    shown = [f for f in factors if f != 1] or [1]
    return "_".join(map(str, shown))


def parse_unroll_token(text: str) -> tuple[int, ...] | None:
    """``128_16`` -> ``(128, 16, 1)``; None when ``text`` is not a factor list."""
    if not re.fullmatch(r"\d+(?:_\d+)*", text):
        return None
    factors = [int(x) for x in text.split("_")]
    return tuple(factors) if factors[-1] == 1 else (*factors, 1)


def unroll_text(factors: Sequence[int]) -> str:
    """How a list prints: ``[128, 16, 1]``."""
    return "[" + ", ".join(map(str, factors)) + "]"


def list_key(factors: Sequence[int]) -> str:
    """A list as a key (a curve's, in JSON): ``128,16,1``."""
    return ",".join(map(str, factors))


def path_counts(T: int, factors: Sequence[int]) -> list[tuple[int, int]]:
    """``[(factor, passes)]`` that T tokens take, largest factor first (factors not taken left out)."""
    counts = Counter(f for _, f in unroll_schedule(0, T, 1, list(factors)))
    return [(f, counts[f]) for f in sorted(counts, reverse=True)]


def describe_paths(T: int, factors: Sequence[int]) -> str:
    """``T=37: 32 + 4 + 1``; repeated passes as ``2×128 + 1``."""
    parts = [f"{n}×{f}" if n > 1 else str(f) for f, n in path_counts(T, factors)]
    return f"T={T}: " + (" + ".join(parts) if parts else "no pass")
