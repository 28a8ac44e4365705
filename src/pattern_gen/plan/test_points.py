"""The golden test's token counts and input seeds: one rule, read by the resolver (the largest T
sizes the caches an instance must hold) and by the renderer (the test's parameters).

Token counts: a multiple of the unroll factor, a tail (factor + 1) where the factor-1 path takes a
large share of the rows, 3 and 1. Seeds: more than one, so a result that holds for one draw of the
inputs by luck (a rounding that lands on the right side of a boundary) is not taken for a rule.
"""

from __future__ import annotations

__all__ = ["SEEDS", "FAST_LANE_MAX_T", "VERIFY_T", "test_values", "largest_test_T", "verify_T"]

#: input seeds every token count of a generated golden test runs with
SEEDS: tuple[int, ...] = (0, 1)

#: the README's test command (the fast lane) runs generated golden cases up to this many tokens;
#: larger ones (SK-05's T = 512 and 257 at unroll 256: its attention grows with T², ~10 s a case at
#: the seed dims) run in the slow lane, which CI runs too (the root conftest.py marks them)
FAST_LANE_MAX_T = 256


def test_values(unroll: int) -> list[int]:
    """T values of the golden test, largest first: 2 x factor, factor + 1, 3 and 1."""
    return sorted({2 * unroll, unroll + 1, 3, 1}, reverse=True)


#: PyPTO's CPU verifier (slow) runs at a tiny T and at a decode batch: at 3 no INT8 rounding tie
#: happens to flip, at 16 about one in six rows holds one (the card's tie rule must hold there)
VERIFY_T: tuple[int, ...] = (3, 16)


def largest_test_T(unroll: int) -> int:
    """The most tokens the golden test or the verifier writes (a cache must hold a slot for each)."""
    return max(*test_values(unroll), *VERIFY_T)


def verify_T(unroll: int) -> list[int]:
    """Where PyPTO's CPU verifier runs: VERIFY_T (the unroll factor does not change which T it
    can run; the caches are sized for them, ``largest_test_T``)."""
    return list(VERIFY_T)
