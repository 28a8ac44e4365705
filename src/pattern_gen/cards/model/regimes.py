"""A skeleton's special shape classes: settings that replace the general ones when a rule over
the dims and parameters holds (the upstream card's "trigger rule", e.g. SK-03's mhc_pre class)."""

from __future__ import annotations

from typing import Any, Mapping, Union

from pydantic import Field, PositiveInt, model_validator

from ...vocab.fields import ALWAYS, Strict, Token, When
from .performance import CachePolicyAdvice, OptionAdvice, TileAdvice

__all__ = ["DimBound", "Regime"]

_WORDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


class DimBound(Strict):
    """Bounds a dim must meet for the regime (all that are given)."""

    ge: int | None = None
    gt: int | None = None
    le: int | None = None
    lt: int | None = None

    @model_validator(mode="after")
    def _some(self) -> "DimBound":
        if all(getattr(self, k) is None for k in _WORDS):
            raise ValueError("give at least one of ge, gt, le, lt")
        return self

    def holds(self, value: int) -> bool:
        checks = {"ge": value.__ge__, "gt": value.__gt__, "le": value.__le__, "lt": value.__lt__}
        return all(checks[k](b) for k in _WORDS if (b := getattr(self, k)) is not None)

    def describe(self, dim: str) -> str:
        return " and ".join(f"{dim} {_WORDS[k]} {b}" for k in _WORDS if (b := getattr(self, k)) is not None)


class Regime(Strict):
    """Selected when every dim bound and ``when`` hold; its settings replace the skeleton's."""

    name: Token
    doc: str
    dims: dict[str, DimBound] = Field(min_length=1)
    when: When = ALWAYS
    #: slot parameters the regime needs (a request that sets another value is refused)
    params: dict[str, Union[bool, int, float, str]] = Field(default_factory=dict)
    #: slot parameters' defaults in the regime (a request may set another value)
    slot_defaults: dict[str, Union[bool, int, float, str]] = Field(default_factory=dict)
    #: a dim's alignment in the regime, replacing the dim's own ``multiple_of`` (what PyPTO takes
    #: at these shapes, measured)
    multiple_of: dict[str, PositiveInt] = Field(default_factory=dict)
    #: the unroll candidates of the regime (replace the loop's)
    unroll: list[PositiveInt] = Field(min_length=1)
    #: tiles by stage label or glob, before the skeleton's
    tiles: dict[str, TileAdvice] = Field(default_factory=dict)
    #: replace the skeleton's advice with the same key
    runtime_options: list[OptionAdvice] = Field(default_factory=list)
    pass_options: list[OptionAdvice] = Field(default_factory=list)
    #: replaces the skeleton's cache-policy advice (an empty list: set none)
    cache_policy: list[CachePolicyAdvice] | None = None
    #: printed with the plan
    warning: str = ""

    @model_validator(mode="after")
    def _defaults_not_needed(self) -> "Regime":
        both = sorted(set(self.params) & set(self.slot_defaults))
        if both:
            raise ValueError(f"{', '.join(both)} is both needed (params) and a default (slot_defaults); keep it in one")
        return self

    def trigger(self) -> str:
        parts = [b.describe(d) for d, b in self.dims.items()]
        if self.when.describe() != "always":
            parts.append(self.when.describe())
        return " and ".join(parts)

    def selects(self, dims: Mapping[str, int], params: Mapping[str, Any]) -> bool:
        return all(d in dims and b.holds(dims[d]) for d, b in self.dims.items()) and self.when.holds(params)
