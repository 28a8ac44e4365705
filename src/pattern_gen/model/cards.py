"""The cards: atoms and skeletons, and the constraint catalogue they cite."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, model_validator

from .base import ALWAYS, Name, Strict, When
from .decls import ParamSpec, TensorDecl
from .performance import Performance
from .stages import Item

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
    tags: list[str] = Field(min_length=1)
    flow: list[FlowUnit] = Field(min_length=1)
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
    stages: list[Item] = Field(min_length=1)
    upgrades: list[Upgrade] = Field(default_factory=list)


class DimSpec(Strict):
    default: int = Field(gt=0)
    doc: str = ""
    #: the dim must be a multiple of this (e.g. 32 for MX blocks along K)
    multiple_of: int = 1


class LoopSpec(Strict):
    kind: Literal["loop_unroll"] = "loop_unroll"
    name: str = "TOKEN_LOOP"
    index: Name = "t_off"
    factor: Name = "tile"
    candidates: list[int] = Field(min_length=1)
    submit_before_loop: bool = False


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
    left_out: list[str] = Field(default_factory=list)


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
