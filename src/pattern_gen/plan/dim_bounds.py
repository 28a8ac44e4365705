"""A skeleton's dim bounds (``at_most``: an expression of its dims), checked on a request's dims."""

from __future__ import annotations

from collections.abc import Mapping

from ..cards import model as m
from ..vocab.errors import Problem
from ..vocab.expr import ExprError, evaluate, names, parse

__all__ = ["bound_problems"]


def bound_problems(skeleton: m.SkeletonCard, dims: Mapping[str, int]) -> list[Problem]:
    """Each dim's ``at_most`` bound, with the given dims over the card's defaults."""
    full = {k: s.default for k, s in skeleton.dims.items()} | dict(dims)
    out = []
    for key, spec in skeleton.dims.items():
        if spec.at_most is None:
            continue
        try:
            bound = evaluate(spec.at_most, full)
        except (ExprError, ZeroDivisionError):
            continue  # a bound over a dim refused above
        if full[key] > bound:
            given = ", ".join(f"{k}={full[k]}" for k in sorted(names(parse(str(spec.at_most)))))
            out.append(Problem("bad-dim", f"dim {key}={full[key]} must be at most {spec.at_most} = {bound} with {given} "
                                          f"({spec.doc or 'a bound of the card'}); change --dim {key}"))
    return out
