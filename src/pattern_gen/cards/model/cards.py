"""The cards: atoms and skeletons, and the constraint catalogue they cite."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    Field,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ...vocab.fields import ALWAYS, ExprValue, LoopName, Name, Strict, When
from .decls import ParamSpec, TensorDecl
from .performance import Performance
from .regimes import Regime
from .stages import Item, UseItem

__all__ = [
    "Variant",
    "Upgrade",
    "Refusal",
    "AtomCard",
    "DimSpec",
    "LoopSpec",
    "SlotSpec",
    "SkeletonCard",
    "Card",
    "Constraint",
    "ConstraintCatalogue",
]


class Variant(Strict):
    name: str
    when: When = ALWAYS
    doc: str = ""


class Upgrade(Strict):
    when: When
    to: str
    reason: str


class Refusal(Strict):
    """A parameter combination the card refuses, with the reason shown to the user."""

    when: When
    reason: str


#: a stage's unit in a CV flow: ``V``/``C`` (atoms) or numbered ``V1``, ``C2`` (skeletons)
FlowUnit = Annotated[str, Field(pattern=r"^[VC][0-9]*$")]


class _CardBase(Strict):
    id: str = Field(pattern=r"^(AT|SK)-\d\d$")
    title: str
    summary: str
    #: slot selectors and site tags: lower-case words (a tag is matched, shown and linked by its spelling)
    tags: list[Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$")]] = Field(min_length=1)
    #: the units of the stages that compute, in order (empty for an atom that only views data)
    flow: list[FlowUnit]
    upstream_flow: list[FlowUnit]
    examples: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    params: dict[Name, ParamSpec] = Field(default_factory=dict)
    inputs: dict[Name, TensorDecl]
    outputs: dict[Name, TensorDecl]
    constraints: list[str] = Field(default_factory=list)
    performance: Performance = Field(default_factory=Performance)
    variants: list[Variant] = Field(default_factory=list)
    refuse: list[Refusal] = Field(default_factory=list)
    numerics: str = ""
    doc: str = ""
    upstream_notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _output_roles(cls, data: Any) -> Any:
        """Outputs default to role ``output`` (inputs default to ``activation``)."""
        if isinstance(data, dict) and isinstance(data.get("outputs"), dict):
            outputs = {}
            for name, decl in data["outputs"].items():
                if isinstance(decl, dict) and "role" not in decl:
                    decl = {**decl, "role": "output"}
                outputs[name] = decl
            data = {**data, "outputs": outputs}
        return data


class AtomCard(_CardBase):
    kind: Literal["atom"]
    #: symbolic scalars the atom reads (a loop index, a block number), bound by the caller's
    #: ``bind:`` to its own scalars; name -> what it means
    scalars: dict[Name, str] = Field(default_factory=dict)
    stages: list[Item] = Field(min_length=1)
    upgrades: list[Upgrade] = Field(default_factory=list)


class DimSpec(Strict):
    #: the dim must be a multiple of this (e.g. 32 for MX blocks along K); the resolver divides by
    #: it. Before ``default``, so that the default's validator sees it.
    multiple_of: int = Field(default=1, gt=0)
    #: the dim must be a multiple of another dim of the card (GQA: NQ of NKV)
    multiple_of_dim: Name | None = None
    #: the dim may be at most this expression of the card's dims (an MoE's top_k: KG*E/G eligible experts)
    at_most: ExprValue | None = None
    default: int = Field(gt=0)
    doc: str = ""

    @field_validator("default")
    @classmethod
    def _default_aligned(cls, value: int, info: ValidationInfo) -> int:
        """A default the dim's own ``multiple_of`` rejects would only fail when a kernel is built."""
        step = info.data.get("multiple_of")
        if step and value % step:
            lower, upper = value // step * step, (value // step + 1) * step
            near = f"{lower} or {upper}" if lower else str(upper)
            raise ValueError(f"must be a multiple of {step} (its own 'multiple_of: {step}'); got {value}; use e.g. {near}")
        return value


class LoopSpec(Strict):
    kind: Literal["loop_unroll"] = "loop_unroll"
    name: LoopName = "TOKEN_LOOP"
    index: Name = "t_off"
    factor: Name = "tile"
    #: unroll factors a request may list; each is a tile of tokens, so positive
    candidates: list[PositiveInt] = Field(min_length=1)
    #: the default ``unroll_list`` (largest first; 1 is appended as PyPTO does); absent: the first
    #: candidate alone
    default: list[PositiveInt] | None = None
    submit_before_loop: bool = False

    @field_validator("candidates")
    @classmethod
    def _distinct(cls, value: list[int]) -> list[int]:
        """A repeated factor would be generated and tested twice under one instance name."""
        twice = sorted({v for v in value if value.count(v) > 1})
        if twice:
            raise ValueError(f"lists {', '.join(map(str, twice))} more than once; list each unroll factor once")
        return value

    @model_validator(mode="after")
    def _default_of_candidates(self) -> "LoopSpec":
        if self.default is not None:
            foreign = [f for f in self.default if f not in self.candidates and f != 1]
            if foreign:
                raise ValueError(f"default lists {foreign[0]}, not one of the candidates {self.candidates}; add it to candidates or drop it")
            if any(b >= a for a, b in zip(self.default, self.default[1:])):
                raise ValueError(f"default {self.default} must list each factor once, largest first")
            broken = [(s, b) for i, s in enumerate(self.default) for b in self.default[:i] if b % s]
            if broken:
                raise ValueError(f"default lists {broken[0][0]}, which does not divide {broken[0][1]}: PyPTO 0.2.0 would run passes past T or tokens twice")
        return self

    def default_list(self) -> tuple[int, ...]:
        """The default unroll list as a plan holds it (ending with 1)."""
        factors = list(self.default or self.candidates[:1])
        return tuple(factors) if factors[-1] == 1 else (*factors, 1)


class SlotSpec(Strict):
    accepts: list[str] = Field(min_length=1)  #: tags of atoms that may fill the slot
    default: str
    doc: str = ""


class SkeletonCard(_CardBase):
    kind: Literal["skeleton"]
    dims: dict[Name, DimSpec]
    token_axis: Name = "T"
    loop: LoopSpec
    slots: dict[Name, SlotSpec] = Field(min_length=1, max_length=1)
    #: defaults this skeleton sets for its slot's parameters (e.g. weight_layout: kn)
    slot_defaults: dict[str, Union[bool, int, float, str]] = Field(default_factory=dict)
    prologue: list[Item] = Field(default_factory=list)
    stages: list[Item] = Field(min_length=1)
    #: a second phase after the token loop (SK-05's attention): it opens its own loops
    after: list[Item] = Field(default_factory=list)
    left_out: list[str] = Field(default_factory=list)
    #: special shape classes with their own settings (the first whose rule holds applies)
    regimes: list[Regime] = Field(default_factory=list)

    @model_validator(mode="after")
    def _regime_dims_known(self) -> "SkeletonCard":
        for r in self.regimes:
            unknown = sorted((set(r.dims) | set(r.multiple_of)) - set(self.dims))
            if unknown:
                raise ValueError(f"regime {r.name} names dim {', '.join(unknown)}, which the skeleton does not have; dims: {', '.join(self.dims)}")
        return self

    @property
    def fixed_stages(self) -> list[UseItem]:
        """The ``use:`` items of every phase (before, in and after the token loop)."""
        return [i for i in [*self.prologue, *self.stages, *self.after] if isinstance(i, UseItem)]


Card = Annotated[Union[AtomCard, SkeletonCard], Field(discriminator="kind")]


# --- the constraint catalogue -----------------------------------------------------------------------


class Constraint(Strict):
    id: str = Field(pattern=r"^C-(API|TILE|LOOP|DATA|SYM)-\d\d$")
    level: Literal["must", "should", "must_not"]
    rule: str
    consequence: str = ""
    source: str = ""


class ConstraintCatalogue(Strict):
    constraints: list[Constraint]
