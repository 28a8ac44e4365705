"""What a flow expansion reads (a ``CardSource``) and produces: typed values, concrete ops, stages,
and the errors it raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol

from ..cards.model import ParamSpec
from ..vocab.errors import FlowError  # raised here; lives in vocab, the catalogue raises it too
from ..vocab.expr import Expr
from ..vocab.expr import render as render_expr
from ..vocab.ops import CUBE_OPS, UNIT_FREE_OPS
from ..vocab.targets import RESERVED

__all__ = [
    "CardSource",
    "UNIT_FREE_OPS",
    "CUBE_OPS",
    "RESERVED",
    "FlowError",
    "Unavailable",
    "Refused",
    "TType",
    "Var",
    "ScalarArg",
    "Arg",
    "COp",
    "CStage",
    "Expansion",
]


class CardSource(Protocol):
    """What the expander reads of the catalogue: a card by id, and a card's parameters (its own
    and those it inherits from the atoms it calls)."""

    def card(self, card_id: str, from_card: str | None = None, path: tuple[Any, ...] = ()) -> Any:
        """The card ``card_id``; unknown, a ``FlowError`` at ``from_card``'s ``path``."""
        ...

    def effective_params(self, card_id: str) -> Mapping[str, ParamSpec]:
        """The parameters of ``card_id`` by name."""
        ...


class Unavailable(Exception):
    """The combination needs a feature or dtype the platform does not have (not a card error)."""

    def __init__(self, reason: str, needs: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.needs = needs  # the missing feature or dtype, so callers can look for a platform that has it


class Refused(Unavailable):
    """The combination matches a card's ``refuse`` rule."""

    def __init__(self, card: str, reason: str) -> None:
        super().__init__(f"{card}: {reason}")
        self.card = card


@dataclass(frozen=True)
class TType:
    """A value's dtype and (symbolic) shape."""

    dtype: str
    shape: tuple[Expr, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def shape_text(self) -> str:
        return "[" + ", ".join(render_expr(s) for s in self.shape) + "]"


@dataclass(frozen=True)
class Var:
    """An op argument that is a tensor, by its global name."""

    name: str


@dataclass(frozen=True)
class ScalarArg:
    """An op argument that is a number or an expression."""

    expr: Expr
    #: the parameter the value came from (rendered as a comment), if any
    param: str | None = None


Arg = Any  # Var | ScalarArg


@dataclass
class COp:
    """One concrete op: names resolved to globals, attributes evaluated, types inferred."""

    op: str
    out: str | None
    args: list[Arg]
    attrs: dict[str, Any]
    out_type: TType | None
    in_types: list[TType]
    card: str
    path: tuple[Any, ...]
    note: str = ""

    @property
    def is_identity_cast(self) -> bool:
        """A cast to the dtype its input already has (cards written for several input dtypes)."""
        return self.op == "cast" and bool(self.in_types) and self.in_types[0].dtype == self.attrs.get("to")


@dataclass
class CStage:
    """One stage of the kernel on one unit, with the card it came from."""

    label: str
    unit: str
    hoist: bool
    ops: list[COp]
    card: str
    title: str
    path: tuple[Any, ...]
    doc: str = ""
    #: the stage's label inside its own card (for the card's tile advice)
    local_label: str = ""
    #: the card's dim names in the kernel's terms (to evaluate the card's tile advice)
    dims: dict[str, Expr] = field(default_factory=dict)
    #: the stage runs after the token loop (a skeleton's ``after:`` phase)
    after_loop: bool = False
    #: (id, title) of the atoms whose ops a ``call:`` inlined here, in order — the cards the ops cite
    calls: list[tuple[str, str]] = field(default_factory=list)

    @property
    def compute(self) -> bool:
        """Whether the stage does V or C work (stages of views/assembles only do not count)."""
        return any(op.op not in UNIT_FREE_OPS for op in self.ops)


@dataclass
class Expansion:
    """The result: stages in order (hoisted ones in ``prologue``) and the type of every name."""

    prologue: list[CStage] = field(default_factory=list)
    stages: list[CStage] = field(default_factory=list)
    types: dict[str, TType] = field(default_factory=dict)
    inputs: dict[str, TType] = field(default_factory=dict)
    outputs: dict[str, TType] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    #: the names an ``assemble`` writes into (a skeleton must assemble every output)
    written: set[str] = field(default_factory=set)
    #: the open control blocks while expanding: (kind, loop index, card, path)
    blocks: list[tuple[str, str, str, tuple[Any, ...]]] = field(default_factory=list)
    cards_used: list[str] = field(default_factory=list)
