"""Parameters and tensor declarations of a card."""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ..errors import did_you_mean
from .base import ALWAYS, DType, DTypeList, ParamRef, Role, Shape, Strict, When

__all__ = ["ParamSpec", "DeclCase", "ToleranceRule", "TensorDecl"]


class ParamSpec(Strict):
    """One instantiation parameter: its type, choices or bounds, default and meaning."""

    type: Literal["bool", "enum", "float", "int"]
    #: before ``default``, so that the default's validator sees them
    choices: list[Union[str, int]] | None = None
    default: Union[bool, int, float, str]
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    doc: str = ""

    @field_validator("default")
    @classmethod
    def _default_in_choices(cls, value: Any, info: ValidationInfo) -> Any:
        """Reported at the ``default:`` line, with the closest choice."""
        choices = info.data.get("choices")
        if info.data.get("type") == "enum" and choices and value not in choices:
            raise ValueError(
                f"must be one of the choices {', '.join(map(str, choices))}; got {value!r}"
                + did_you_mean(str(value), [str(c) for c in choices])
            )
        return value

    @property
    def valid_values(self) -> list[Any] | None:
        """The values the parameter may take: true/false, the choices, or None (any of its type)."""
        return [True, False] if self.type == "bool" else self.choices

    @model_validator(mode="after")
    def _consistent(self) -> "ParamSpec":
        if self.type == "enum":
            if not self.choices:
                raise ValueError("an enum parameter needs 'choices'")
        elif self.choices is not None and self.type != "int":
            raise ValueError(f"'choices' is only for enum and int parameters, not {self.type}")
        if self.type == "bool" and not isinstance(self.default, bool):
            raise ValueError(f"a bool parameter needs a true/false default, got {self.default!r}")
        if self.type in ("float", "int"):
            if isinstance(self.default, (bool, str)):
                raise ValueError(f"a {self.type} parameter needs a numeric default, got {self.default!r}")
            if self.type == "int" and not isinstance(self.default, int):
                raise ValueError(f"an int parameter needs an int default, got {self.default!r}")
        return self


class DeclCase(Strict):
    """A shape or dtype that applies when ``when`` holds; every matching case applies, in order."""

    when: When
    shape: Shape | None = None
    dtype: Union[DType, DTypeList, ParamRef, None] = None


class ToleranceRule(Strict):
    """A looser golden comparison for an output, where the card says why (first match applies)."""

    when: When = ALWAYS
    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)
    ratio: float | None = Field(default=None, ge=0, le=1)
    why: str


class TensorDecl(Strict):
    shape: Shape
    dtype: Union[DType, DTypeList, ParamRef]
    role: Role = "activation"
    when: When = ALWAYS
    cases: list[DeclCase] = Field(default_factory=list)
    #: outputs only: overrides of the dtype's default (atol, rtol, ratio) of the golden test
    tolerance: list[ToleranceRule] = Field(default_factory=list)
    doc: str = ""
