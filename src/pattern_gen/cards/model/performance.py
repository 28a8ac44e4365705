"""A card's performance table: option advice, cache policies and tile shapes."""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import Field, model_validator

from ...vocab.fields import ALWAYS, Level, Role, Shape, Strict, When

__all__ = ["OPERATION_KEYS", "OptionAdvice", "CachePolicyAdvice", "CubeTile", "TileInstead", "TileAdvice", "Performance"]

#: the keys ``operation_options`` advice may set (PyPTO's operation options; the runtime and pass
#: options are ptosim's option models)
OPERATION_KEYS = ("combine_axis", "force_combine_axis")


class OptionAdvice(Strict):
    key: str
    value: Any
    level: Level
    why: str
    when: When = ALWAYS  #: parameter predicate for conditional advice
    platforms: list[str] | None = None  #: only on these platforms (e.g. a regression elsewhere)


class CachePolicyAdvice(Strict):
    role: Role = "weight"
    policy: Literal["NONE_CACHEABLE"] = "NONE_CACHEABLE"
    level: Level
    why: str
    #: plan facts the advice needs, e.g. {reads_per_iteration: 1}
    requires: dict[str, Any] = Field(default_factory=dict)


class CubeTile(Strict):
    m: tuple[int, int]
    k: Union[tuple[int, int], tuple[int, int, int]]
    n: tuple[int, int]
    #: ``set_cube_tile_shapes(..., enable_split_k=True)``: K split across cores, partial sums added
    #: in FP32 (needs an FP32/INT32 output; the order of the additions is not fixed)
    split_k: bool = False


class TileInstead(Strict):
    """A vec tile to use instead of the advised one at given dim values — where the advised tile
    is known not to run (a measured failure of the target, named in ``why``)."""

    #: each dim's values the exception covers (all must hold)
    dims: dict[str, list[int]] = Field(min_length=1)
    vec: Shape
    why: str = Field(min_length=1)

    def holds(self, values: Any) -> bool:
        return all(values.get(d) in v for d, v in self.dims.items())


class TileAdvice(Strict):
    vec: Shape | None = None
    cube: CubeTile | None = None
    why: str = ""
    #: vec tiles only: the exceptions, the first that holds wins
    instead: list[TileInstead] = Field(default_factory=list)

    def text(self) -> str:
        """``vec [8, 2048]`` or ``cube m=[16, 16] k=[512, 1024] n=[128, 128] split-K``."""
        if self.vec is not None:
            return f"vec {list(self.vec)}"
        c = self.cube
        return f"cube m={list(c.m)} k={list(c.k)} n={list(c.n)}" + (" split-K" if c.split_k else "")  # type: ignore[union-attr]

    @model_validator(mode="after")
    def _one(self) -> "TileAdvice":
        if (self.vec is None) == (self.cube is None):
            raise ValueError("give exactly one of 'vec' or 'cube'")
        if self.instead and self.vec is None:
            raise ValueError("'instead' takes vec tiles: give it with 'vec'")
        return self


class Performance(Strict):
    runtime_options: list[OptionAdvice] = Field(default_factory=list)
    pass_options: list[OptionAdvice] = Field(default_factory=list)
    operation_options: list[OptionAdvice] = Field(default_factory=list)
    cache_policy: list[CachePolicyAdvice] = Field(default_factory=list)
    #: tile per stage label (after splicing: e.g. ``proj.matmul``); ``default_vec`` covers the rest
    tiles: dict[str, TileAdvice] = Field(default_factory=dict)
    evidence: str = ""
    direction: str = ""
    #: a skeleton's word for a stage whose tile cannot fit the platform (what to use instead),
    #: appended to the tile-unfit refusal
    unfit: str = ""
