"""Checks of a card's tile advice: a ``vec`` tile shape may only name dims its stage has.

The resolver evaluates a tile shape with the plan's dim values; a name the stage does not have
would fail there (or, worse, silently take a skeleton dim of the same name), so it is reported
here, at the tile entry, with the names the card may use.
"""

from __future__ import annotations

from typing import Any

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..vocab.errors import Problem, did_you_mean
from ..vocab.expr import ExprError, Name, evaluate, names, parse

__all__ = ["tile_problems", "tile_names", "io_shape_problems", "dim_default_problems"]


def _input_dims(card: m.AtomCard) -> list[str]:
    """The dims an atom's stages know: every bare name on an axis of an input (its shape or a
    case's), which ``flow.expand`` binds to the caller's dim when the atom is called or spliced."""
    found: dict[str, None] = {}
    for decl in card.inputs.values():
        for shape in [decl.shape] + [c.shape for c in decl.cases if c.shape is not None]:
            for axis in shape:
                try:
                    node = parse(axis)
                except ExprError:
                    continue  # a malformed expression is a schema problem of its own
                if isinstance(node, Name):
                    found[node.name] = None
    return list(found)


def tile_names(card: Any) -> list[str]:
    """The names a ``vec`` tile of ``card`` may use: a skeleton's dims, token axis and unroll
    factor (the values a plan has), an atom's input dims."""
    if card.kind == "skeleton":
        return list(dict.fromkeys([*card.dims, card.token_axis, card.loop.factor]))
    return _input_dims(card)


def tile_problems(cat: Catalogue, card: Any) -> list[Problem]:
    problems: list[Problem] = []
    valid = tile_names(card)
    for stage, advice in card.performance.tiles.items():
        for i, axis in enumerate(advice.vec or []):
            try:
                used = names(parse(axis))
            except ExprError:
                continue  # already a card-schema problem (``model.base._expr``)
            for name in sorted(used - set(valid)):
                entry = f" (in {axis!r})" if str(axis) != name else ""
                problems.append(
                    Problem(
                        "bad-expression",
                        f"tile {stage!r}: vec names unknown dim {name!r}{entry}; valid dims: {', '.join(valid) or 'none'}"
                        + did_you_mean(name, valid),
                        **cat.where(card.id, ("performance", "tiles", stage, "vec", i)),
                    )
                )
    return problems


def io_shape_problems(cat: Catalogue, card: Any) -> list[Problem]:
    """A skeleton's input and output shapes may only name its dims, token axis and loop names, and
    must be whole numbers at the default dims: the resolver evaluates them for every kernel, and a
    shape under a non-default parameter (an MX scale's ``[N, K/32]``) is otherwise first evaluated
    by a user's ``new``."""
    if card.kind != "skeleton":
        return []
    valid = [*card.dims, card.token_axis, card.loop.factor, card.loop.index]
    first = card.loop.candidates[0]
    values = {**{k: d.default for k, d in card.dims.items()}, card.token_axis: first, card.loop.factor: first, card.loop.index: 0}
    problems: list[Problem] = []
    for group in ("inputs", "outputs"):
        for name, decl in getattr(card, group).items():
            shapes = [((group, name, "shape"), decl.shape)]
            shapes += [((group, name, "cases", i, "shape"), c.shape) for i, c in enumerate(decl.cases) if c.shape is not None]
            for path, shape in shapes:
                for i, axis in enumerate(shape):
                    where = cat.where(card.id, (*path, i))
                    try:
                        node = parse(axis)
                        unknown = sorted(names(node) - set(valid))
                        if unknown:
                            raise ExprError(f"unknown name {unknown[0]!r}; valid names: {', '.join(valid)}" + did_you_mean(unknown[0], valid))
                        value = evaluate(node, values)
                        if value != int(value) or value <= 0:
                            raise ExprError(f"is {value} at the default dims ({', '.join(f'{k}={v}' for k, v in values.items() if k in card.dims)}); "
                                            "an axis must be a positive whole number")
                    except ExprError as exc:
                        problems.append(Problem("bad-expression", f"{group[:-1]} {name!r}: shape axis {axis!r}: {exc}", **where))
    return problems


def dim_default_problems(cat: Catalogue, card: Any) -> list[Problem]:
    """A parameter whose default follows a dim (``rsqrt_default_of``) needs that dim in every
    skeleton that builds it, as its slot atom or a fixed stage."""
    if card.kind != "skeleton":
        return []
    problems: list[Problem] = []
    users = [(None, a.id) for a in cat.slot_atoms(card)] + [(item.as_, item.use) for item in card.fixed_stages if item.use in cat.cards]
    for stage, atom_id in users:
        for name, spec in cat.effective_params(atom_id).items():
            if spec.rsqrt_default_of is not None and spec.rsqrt_default_of not in card.dims:
                where = f"stage {stage!r} ({atom_id})" if stage else f"slot atom {atom_id}"
                problems.append(Problem("undefined-name", f"{where}: parameter {name!r} defaults to 1/sqrt({spec.rsqrt_default_of}), and {card.id} has no dim "
                                        f"{spec.rsqrt_default_of!r}; dims: {', '.join(card.dims)}", **cat.where(card.id, ("dims",))))
    return problems
