"""Cross-card checks of a loaded catalogue (``pattern-gen validate``).

A step of its own above ``flow``: the catalogue loads and cross-references the cards, the checks
then run the flow expander over every parameter combination on every platform, so they consume
``flow`` and cannot live inside ``catalogue`` (which ``flow`` builds on). Nothing but the CLI's
``validate`` (and the tests) imports them.

Each check returns problems rather than raising, so one run reports everything:
dependencies exist and are declared, no cycles, predicates name real parameters and values,
constraint ids exist, option advice is valid PyPTO, tile shapes name real dims, skeleton slots
are fillable, and — for every parameter combination the guards allow, on every platform — the
flow expands: names are defined before use, dtypes are legal for each op, and the declared
``flow`` matches the stages built.

Modules: ``references`` (names, cycles), ``options`` (performance advice), ``tiles`` (the dims
tile shapes name), ``params`` (predicates, ``{param: NAME}``, parameter combinations), ``flows``
(the expansions).
"""

from __future__ import annotations

from typing import Any, Iterable

from ..catalogue.catalogue import Catalogue
from ..vocab.errors import Problem
from .flows import atom_problems, skeleton_problems
from .options import option_problems
from .params import param_combinations
from .references import cycle_problems, dependencies, reference_problems
from .tiles import dim_default_problems, io_shape_problems, tile_problems

__all__ = ["check_catalogue", "param_combinations"]


def _dedupe(problems: Iterable[Problem]) -> list[Problem]:
    """One problem per place and message: the same broken op seen from several cards, parameter
    combinations and platforms is reported once (with the first context it was found in)."""
    out: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    for p in problems:
        key = (p.code, p.file, p.line, p.col, p.message.rsplit(" (", 1)[0] if p.message.endswith(")") else p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def check_catalogue(cat: Catalogue) -> list[Problem]:
    """All cross-card problems of a loaded catalogue (empty list = valid)."""
    problems: list[Problem] = []
    for card in cat.sorted_cards():
        problems += reference_problems(cat, card)
        problems += option_problems(cat, card)
        problems += tile_problems(cat, card)
        problems += io_shape_problems(cat, card)
        problems += dim_default_problems(cat, card)
    problems += cycle_problems(cat)
    if problems:
        return _dedupe(problems)
    broken: set[str] = set()
    deps = {cid: dependencies(cat, cid) for cid in cat.cards}
    # atoms before skeletons (a skeleton's slot takes any atom with the right tag), and a card
    # after every card it builds on (a card has more dependencies than each of its own)
    for card in sorted(cat.sorted_cards(), key=lambda c: (c.kind == "skeleton", len(deps[c.id]))):
        if deps[card.id] & broken:
            broken.add(card.id)  # its own flow is checked once the cards it builds on are fixed
            continue
        found = atom_problems(cat, card) if card.kind == "atom" else skeleton_problems(cat, card, broken)
        if found:
            broken.add(card.id)
        problems += found
    return _dedupe(problems)
