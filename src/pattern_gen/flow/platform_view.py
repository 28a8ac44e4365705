"""What an expansion asks of a platform profile, and the answers it got.

Typing a flow reads the profile only through a ``PlatformView``: a handful of questions ("is FP8 a
dtype here?", "does a BF16 x BF16 matmul give FP32?"), each answered once and remembered. An
expansion is a pure function of the cards, the parameters and these answers, so a second platform
that gives the same answer to every question the first was asked gets the same expansion — the
same kernel or the same error — without expanding again (``agrees``). The catalogue checks expand
every card on every platform; most expansions ask nothing the platforms disagree on.

The questions are data (``QUESTIONS``): each names the profile reading that answers it. A
question whose answer only words an error message (the dtypes an op accepts, the profile's name) is
asked only on that error's path, so it keeps two platforms apart only where the message differs.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ptosim.dtypes import dtype_from_name
from ptosim.platform import Profile

__all__ = ["PlatformView", "QUESTIONS"]


def _names(dtypes: Any) -> tuple[str, ...]:
    return tuple(sorted(d.short for d in dtypes))


#: question -> how a profile answers it (arguments are dtype and op names: hashable, comparable)
QUESTIONS: Mapping[str, Callable[..., Any]] = {
    "name": lambda p: p.name,
    "dtype": lambda p, dt: any(d.short == dt for d in p.dtypes),
    "feature": lambda p, f: p.has_feature(f),
    "cast": lambda p, src, dst: p.can_cast(dtype_from_name(src), dtype_from_name(dst)),
    "op_accepts": lambda p, op, dt: p.op_accepts(op, dtype_from_name(dt)),
    "op_dtypes": lambda p, op: _names(p.op_dtypes.get(op, ())),
    "matmul_out": lambda p, a, b, out, scaled: dtype_from_name(out) in p.matmul_outputs(dtype_from_name(a), dtype_from_name(b), scaled=scaled),
    "bias_ok": lambda p, a, b, bias: dtype_from_name(bias) in p.matmul_bias_dtypes(dtype_from_name(a), dtype_from_name(b)),
    "bias_dtypes": lambda p, a, b: _names(p.matmul_bias_dtypes(dtype_from_name(a), dtype_from_name(b))),
}


class PlatformView:
    """One expansion's window on ``profile``: every question asked, with its answer."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.answers: dict[tuple[Any, ...], Any] = {}

    def ask(self, question: str, *args: Any) -> Any:
        key = (question, *args)
        if key not in self.answers:
            self.answers[key] = QUESTIONS[question](self.profile, *args)
        return self.answers[key]

    @property
    def name(self) -> str:
        return self.ask("name")

    def agrees(self, other: Profile) -> bool:
        """Would ``other`` answer every question asked so far the same way?"""
        return all(QUESTIONS[key[0]](other, *key[1:]) == answer for key, answer in self.answers.items())
