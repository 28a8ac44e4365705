"""The golden test's token counts and input seeds: one rule, read by the resolver (the largest T
sizes the caches an instance must hold) and by the renderer (the test's parameters).

Token counts: two passes of the largest unroll factor, one pass of every path of the list (a tail
the smaller paths take), 3 and 1. Seeds: more than one, so a result that holds for one draw of the
inputs by luck (a rounding that lands on the right side of a boundary) is not taken for a rule.
"""

from __future__ import annotations

from typing import Sequence

from .unroll import path_counts

__all__ = ["SEEDS", "FAST_LANE_MAX_T", "VERIFY_T", "test_values", "largest_test_T", "verify_T"]

#: input seeds every token count of a generated golden test runs with
SEEDS: tuple[int, ...] = (0, 1)

#: the README's test command (the fast lane) runs generated golden cases up to this many tokens;
#: larger ones (SK-05's T = 512 and 257 at unroll 256: its attention grows with T², ~10 s a case at
#: the seed dims) run in the slow lane, which CI runs too (the root conftest.py marks them)
FAST_LANE_MAX_T = 256


def test_values(unroll: Sequence[int]) -> list[int]:
    """T values of the golden test, largest first: two passes of the largest factor, one pass of
    every path of the list (their sum: 128 + 16 + 1 = 145 for [128, 16, 1]; factor + 1 for a
    single factor), 3 and 1."""
    return sorted({2 * unroll[0], sum(set(unroll) | {1}), 3, 1}, reverse=True)


#: PyPTO's CPU verifier (slow) runs at a tiny T and at a decode batch: at 3 no INT8 rounding tie
#: happens to flip, at 16 about one in six rows holds one (the card's tie rule must hold there)
VERIFY_T: tuple[int, ...] = (3, 16)


def verify_T(unroll: Sequence[int]) -> list[int]:
    """Where PyPTO's CPU verifier runs: VERIFY_T, and — when neither takes two paths of the list
    (3 with [2, 1] does; 3 and 16 with [128, 16, 1] do not) — the smallest factor above 1 plus 1,
    so the verifier checks a pass of a factor followed by the 1 path."""
    Ts = list(VERIFY_T)
    if not any(len(path_counts(T, unroll)) > 1 for T in Ts):
        step = min((f for f in unroll if f > 1), default=None)
        if step is not None:
            Ts.append(step + 1)
    return sorted(set(Ts))


def largest_test_T(unroll: Sequence[int]) -> int:
    """The most tokens the golden test or the verifier writes (a cache must hold a slot for each)."""
    return max(*test_values(unroll), *verify_T(unroll))
