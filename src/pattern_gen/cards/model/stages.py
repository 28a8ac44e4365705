"""The items of a card's ``stages``: a stage of ops, a spliced atom (``use``), the skeleton's slot."""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Discriminator, Field, Tag, model_validator

from ...vocab.fields import ALWAYS, Name, ParamRef, Strict, Unit, When
from ...vocab.ops import Op

__all__ = ["Stage", "UseItem", "SlotItem", "Item", "item_tag"]


class Stage(Strict):
    """One stage on one unit. ``hoist`` stages run once before the token loop (loop-invariant);
    ``merge`` appends the ops to the stage before it (same unit and label) instead of opening one."""

    label: Name | None = None
    unit: Unit
    ops: list[Op] = Field(min_length=1)
    when: When = ALWAYS
    hoist: bool = False
    merge: bool = False
    doc: str = ""

    @model_validator(mode="after")
    def _labelled(self) -> "Stage":
        if self.label is None and not self.merge:
            raise ValueError("a stage needs a 'label' (or 'merge: true' to continue the stage before it)")
        return self


class UseItem(Strict):
    """Splice all stages of another atom here (labels become ``<as>`` or ``<as>.<label>``)."""

    use: str
    as_: Name = Field(alias="as")
    bind: dict[str, Name] = Field(default_factory=dict)
    params: dict[str, Union[bool, int, float, str, ParamRef]] = Field(default_factory=dict)
    out: dict[str, Name] = Field(default_factory=dict)
    when: When = ALWAYS
    doc: str = ""


class SlotItem(Strict):
    """The skeleton's user slot: ``--atoms`` decides which atom is spliced here."""

    slot: Name
    bind: dict[str, Name] = Field(default_factory=dict)
    out: dict[str, Name] = Field(default_factory=dict)
    doc: str = ""


def item_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("use", "slot"):
            if key in value:
                return key
        return "stage"
    return {UseItem: "use", SlotItem: "slot", Stage: "stage"}.get(type(value))


Item = Annotated[
    Union[Annotated[Stage, Tag("stage")], Annotated[UseItem, Tag("use")], Annotated[SlotItem, Tag("slot")]],
    Discriminator(item_tag),
]
