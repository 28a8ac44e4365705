"""Checks of what cards say about parameters: predicates and ``{param: NAME}`` references.

Also the enumeration of parameter combinations the flow checks (and the docs) expand.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Mapping

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..vocab.errors import Problem, did_you_mean
from ..vocab.predicates import AllOf, AnyOf, Match, Not, Predicate, same_value
from ..vocab.text import yaml_word

__all__ = ["param_combinations", "predicate_problems", "param_ref_problems", "value_problem"]


def param_combinations(specs: Mapping[str, m.ParamSpec], fixed: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every combination of the enumerable parameters (bool, enum, int with choices)."""
    fixed = dict(fixed or {})
    names, choices = [], []
    for name, spec in specs.items():
        if name in fixed:
            continue
        values = list(spec.valid_values or [])
        if values:
            # the default first: the first combination is the default one, and a problem is
            # reported with the combination closest to the defaults
            names.append(name)
            choices.append([spec.default] + [v for v in values if v != spec.default])
    defaults = {n: s.default for n, s in specs.items()}
    for combo in itertools.product(*choices):
        env = dict(defaults)
        env.update(fixed)
        env.update(zip(names, combo))
        yield env


def value_problem(spec: m.ParamSpec, value: Any) -> str | None:
    """``"; valid values: …"`` with a spelling hint when ``value`` is not a value of ``spec``."""
    valid = spec.valid_values
    if valid is None or any(same_value(value, v) for v in valid):
        return None
    return f"; valid values: {', '.join(map(yaml_word, valid))}" + did_you_mean(yaml_word(value), [yaml_word(v) for v in valid])


# --- predicates ------------------------------------------------------------------------------------


def _matches(pred: Predicate) -> Iterator[Match]:
    if isinstance(pred, Match):
        yield pred
    elif isinstance(pred, (AllOf, AnyOf)):
        for p in pred.parts:
            yield from _matches(p)
    elif isinstance(pred, Not):
        yield from _matches(pred.part)


def _walk_whens(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Predicate]]:
    """Every ``when`` predicate inside a card model, with its YAML path."""
    if isinstance(obj, m.Strict):
        for name, info in type(obj).model_fields.items():
            value = getattr(obj, name)
            key = info.alias or name
            if name == "when" and value is not None:
                yield path + ("when",), value
            else:
                yield from _walk_whens(value, path + (key,))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk_whens(v, path + (i,))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_whens(v, path + (k,))


def predicate_problems(cat: Catalogue, card: Any, known: Mapping[str, m.ParamSpec | None]) -> list[Problem]:
    """Predicates must read known parameters (``None``: any value) and compare with valid values."""
    problems = []
    for path, pred in _walk_whens(card):
        for match in _matches(pred):
            if match.param not in known:
                problems.append(
                    Problem(
                        "bad-predicate",
                        f"predicate reads unknown parameter {match.param!r}" + did_you_mean(match.param, known),
                        **cat.where(card.id, path),
                    )
                )
                continue
            spec = known[match.param]
            if spec is None:
                continue
            for value in match.values:
                invalid = value_problem(spec, value)
                if invalid:
                    problems.append(
                        Problem("bad-predicate", f"predicate compares {match.param!r} with {value!r}{invalid}", **cat.where(card.id, path))
                    )
    return problems


# --- {param: NAME} -----------------------------------------------------------------------------------


def _walk_param_refs(obj: Any, path: tuple[Any, ...] = (), field: str = "") -> Iterator[tuple[tuple[Any, ...], str, m.ParamRef]]:
    """Every ``{param: NAME}`` inside a card model: (YAML path, the field it sits in, the ref)."""
    if isinstance(obj, m.ParamRef):
        yield path, field, obj
    elif isinstance(obj, m.Strict):
        for name, info in type(obj).model_fields.items():
            key = info.alias or name
            yield from _walk_param_refs(getattr(obj, name), path + (key,), key)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk_param_refs(v, path + (i,), field)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_param_refs(v, path + (k,), field)


_DTYPE_FIELDS = ("to", "out_dtype", "dtype")


def _values_of(spec: m.ParamSpec) -> str:
    if spec.type == "bool":
        return "true/false"
    if spec.choices:
        return ", ".join(map(yaml_word, spec.choices))
    return f"any {spec.type}"


def param_ref_problems(cat: Catalogue, card: Any, param_sets: Mapping[str, Mapping[str, m.ParamSpec]]) -> list[Problem]:
    """``{param: NAME}`` must name a parameter every expansion has (``param_sets``: the parameter
    tables the card is expanded with, by the atom that brings them), and a parameter used as a dtype
    must only have dtypes as values."""
    problems = []
    for path, field, ref in _walk_param_refs(card):
        where = cat.where(card.id, path)
        for owner, specs in param_sets.items():
            if ref.param not in specs:
                problems.append(
                    Problem(
                        "unknown-param",
                        f"{{param: {ref.param}}} names a parameter {owner} does not have; parameters: {', '.join(specs) or 'none'}"
                        + did_you_mean(ref.param, specs),
                        **where,
                    )
                )
                break
            spec = specs[ref.param]
            if field in _DTYPE_FIELDS and (spec.type != "enum" or not set(map(str, spec.choices or [])) <= set(m.DTYPES)):
                problems.append(
                    Problem(
                        "bad-param-value",
                        f"{{param: {ref.param}}} is used as a dtype, but {ref.param!r} takes {_values_of(spec)}",
                        **where,
                    )
                )
                break
    return problems


def reads_param(card: Any, name: str) -> bool:
    """Does any ``when`` or ``{param: ...}`` of ``card`` read the parameter ``name``?"""
    return any(match.param == name for _path, pred in _walk_whens(card) for match in _matches(pred)) or any(
        ref.param == name for _path, _field, ref in _walk_param_refs(card)
    )
