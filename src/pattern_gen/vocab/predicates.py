"""Parameter predicates: the declarative ``when:`` form of the cards (never ``eval``).

Forms::

    when: {has_gamma: true}                    # equality
    when: {quant_mode: [int8_w8a8, mxfp8]}     # membership
    when: {has_bias: false, out_dtype: BF16}   # all keys must hold
    when: {any: [{has_bias: true}, {out_dtype: FP32}]}
    when: {not: {quant_mode: none}}
    when: {all: [...]}

A predicate is parsed once into a small tree; ``holds(env)`` evaluates it against a mapping of
parameter values, and ``params()`` lists the parameters it reads (for the compiler's checks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Union

from .text import yaml_word

__all__ = ["Predicate", "parse_predicate", "PredicateError", "TRUE", "same_value"]


class PredicateError(ValueError):
    pass


@dataclass(frozen=True)
class Match:
    param: str
    values: tuple[Any, ...]

    def holds(self, env: Mapping[str, Any]) -> bool:
        value = env.get(self.param, _MISSING)
        return any(same_value(value, v) for v in self.values)

    def params(self) -> set[str]:
        return {self.param}

    def to_data(self) -> Any:
        return {self.param: self.values[0] if len(self.values) == 1 else list(self.values)}

    def describe(self) -> str:
        vals = " or ".join(yaml_word(v) for v in self.values)
        return f"{self.param} = {vals}"


@dataclass(frozen=True)
class AllOf:
    parts: tuple["Predicate", ...]

    def holds(self, env: Mapping[str, Any]) -> bool:
        return all(p.holds(env) for p in self.parts)

    def params(self) -> set[str]:
        return set().union(*(p.params() for p in self.parts)) if self.parts else set()

    def to_data(self) -> Any:
        names = [p.param for p in self.parts if isinstance(p, Match)]
        if len(names) == len(self.parts) and len(set(names)) == len(names):
            out: dict[str, Any] = {}
            for p in self.parts:
                out.update(p.to_data())
            return out
        return {"all": [p.to_data() for p in self.parts]}

    def describe(self) -> str:
        return " and ".join(p.describe() for p in self.parts) if self.parts else "always"


@dataclass(frozen=True)
class AnyOf:
    parts: tuple["Predicate", ...]

    def holds(self, env: Mapping[str, Any]) -> bool:
        return any(p.holds(env) for p in self.parts)

    def params(self) -> set[str]:
        return set().union(*(p.params() for p in self.parts)) if self.parts else set()

    def to_data(self) -> Any:
        return {"any": [p.to_data() for p in self.parts]}

    def describe(self) -> str:
        return "(" + " or ".join(p.describe() for p in self.parts) + ")"


@dataclass(frozen=True)
class Not:
    part: "Predicate"

    def holds(self, env: Mapping[str, Any]) -> bool:
        return not self.part.holds(env)

    def params(self) -> set[str]:
        return self.part.params()

    def to_data(self) -> Any:
        return {"not": self.part.to_data()}

    def describe(self) -> str:
        return f"not ({self.part.describe()})"


def same_value(a: Any, b: Any) -> bool:
    """Equality as a card means it: ``true`` is not ``1`` (Python says ``True == 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


Predicate = Union[Match, AllOf, AnyOf, Not]
TRUE: Predicate = AllOf(())
_MISSING = object()


#: nesting of any/all/not; real guards use one or two levels
MAX_NESTING = 16


def parse_predicate(data: Any, _depth: int = 0) -> Predicate:
    """Parse the YAML form; PredicateError says what is wrong with it."""
    if _depth > MAX_NESTING:
        raise PredicateError(f"predicate nested more than {MAX_NESTING} levels deep")
    if data is None:
        return TRUE
    if isinstance(data, (AllOf, AnyOf, Not, Match)):
        return data
    if not isinstance(data, Mapping):
        raise PredicateError(f"a predicate is a mapping such as {{has_gamma: true}}, got {data!r}")
    parts: list[Predicate] = []
    for key, value in data.items():
        if key in ("any", "all"):
            if not isinstance(value, list) or not value:
                raise PredicateError(f"'{key}' takes a non-empty list of predicates, got {value!r}")
            subs = tuple(parse_predicate(v, _depth + 1) for v in value)
            parts.append(AnyOf(subs) if key == "any" else AllOf(subs))
        elif key == "not":
            parts.append(Not(parse_predicate(value, _depth + 1)))
        elif not isinstance(key, str) or not key.isidentifier():
            raise PredicateError(f"predicate key {key!r} is not a parameter name")
        else:
            values = tuple(value) if isinstance(value, list) else (value,)
            if not values:
                raise PredicateError(f"'{key}' lists no values")
            for v in values:
                if isinstance(v, (dict, list)) or v is None:
                    raise PredicateError(f"'{key}' compares with scalars only, got {v!r}")
            parts.append(Match(key, values))
    return parts[0] if len(parts) == 1 else AllOf(tuple(parts))
