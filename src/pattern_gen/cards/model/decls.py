"""Parameters and tensor declarations of a card."""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, Union

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ...vocab.errors import did_you_mean
from ...vocab.fields import (
    ALWAYS,
    DType,
    DTypeList,
    ParamRef,
    ExprValue,
    Name,
    Role,
    Shape,
    Strict,
    Token,
    When,
)

__all__ = ["ParamSpec", "DeclCase", "ToleranceRule", "TensorDecl"]


#: bound key -> (holds for value v and bound b, the rule in words)
_BOUNDS: dict[str, tuple[Callable[[float, float], bool], str]] = {
    "gt": (lambda v, b: v > b, "greater than"),
    "ge": (lambda v, b: v >= b, "at least"),
    "le": (lambda v, b: v <= b, "at most"),
}


def _broken_bound(value: float, spec: Mapping[str, Any]) -> str | None:
    """``"greater than 0 (its own 'gt: 0')"`` for the first bound ``value`` breaks, else None."""
    for key, (holds, words) in _BOUNDS.items():
        bound = spec.get(key)
        if bound is not None and not holds(value, bound):
            return f"{words} {bound:g} (its own '{key}: {bound:g}')"
    return None


class ParamSpec(Strict):
    """One instantiation parameter: its type, choices or bounds, default and meaning."""

    type: Literal["bool", "enum", "float", "int"]
    #: choices and bounds come before ``default``, so that the default's validator sees them (and a
    #: default the card's own rules reject is reported at its line, not when a kernel is built)
    choices: list[Union[Token, int]] | None = None
    gt: float | None = None
    ge: float | None = None
    le: float | None = None
    default: Union[bool, int, float, str]
    #: float parameters: the default is 1/sqrt(this dim of the skeleton that builds the kernel)
    #: (a softmax scale follows the head dim); ``default`` is its value at the card's reference dims
    rsqrt_default_of: Name | None = None
    doc: str = ""

    @field_validator("default")
    @classmethod
    def _default_in_choices(cls, value: Any, info: ValidationInfo) -> Any:
        """Reported at the ``default:`` line, with the closest choice or the bound it breaks."""
        kind = info.data.get("type")
        choices = info.data.get("choices")
        if kind in ("enum", "int") and choices and value not in choices:
            raise ValueError(
                f"must be one of the choices {', '.join(map(str, choices))}; got {value!r}"
                + did_you_mean(str(value), [str(c) for c in choices])
            )
        if kind in ("float", "int") and isinstance(value, (int, float)) and not isinstance(value, bool):
            broken = _broken_bound(value, info.data)
            if broken:
                raise ValueError(f"must be {broken}; got {value!r}; change the default or the bound")
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
        if self.rsqrt_default_of is not None and self.type != "float":
            raise ValueError(f"'rsqrt_default_of' derives a float default; this parameter is {self.type}")
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
    #: the share of elements that may differ from the golden at all (16-bit float outputs; see
    #: ptosim.testing.DIFFER_RATIO); 1 turns the check off where the kernel rounds differently by design
    differ: float | None = Field(default=None, ge=0, le=1)
    #: an output downstream of an integer rounding (or its codes): it may move as far as the codes
    #: whose FP32 value before the rounding lies within this many FP32 ulps (2^-17, the spacing of
    #: the codes' top octave) of a rounding boundary move it by rounding the other way
    #: (ptosim.testing.tie_bands) — and no further
    ties: float | None = Field(default=None, gt=0, le=1024)
    why: str


class TensorDecl(Strict):
    shape: Shape
    dtype: Union[DType, DTypeList, ParamRef]
    role: Role = "activation"
    when: When = ALWAYS
    cases: list[DeclCase] = Field(default_factory=list)
    #: outputs only: overrides of the dtype's default (atol, rtol, ratio) of the golden test
    tolerance: list[ToleranceRule] = Field(default_factory=list)
    #: an ``index`` input: the ``cache`` output whose rows its values select. The kernel's host
    #: refuses a value outside the cache (PyPTO 0.2.0's scatter stops at one), a repeated slot, and
    #: a -1 (skip) before a real slot; -1 is allowed only for padding tokens at the end
    index_into: str | None = None
    #: a ``block_table`` input: the paged cache's tokens per block (the host checks the lengths
    #: against the table's coverage)
    block_size: ExprValue | None = None
    doc: str = ""
