"""The schema's building blocks: the strict base model, dtypes, predicates, expressions, names."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
)

from ptosim.vocabulary import CAST_MODES, DTYPE_NAMES

from .expr import ExprError, parse
from .identifiers import identifier_problem, token_problem
from .predicates import TRUE, Predicate, PredicateError, parse_predicate

__all__ = [
    "Strict",
    "Token",
    "LoopName",
    "DTYPES",
    "DType",
    "Unit",
    "Level",
    "CastModeName",
    "Role",
    "ALWAYS",
    "PREDICATE_JSON_SCHEMA",
    "When",
    "ExprValue",
    "Shape",
    "Name",
    "ParamRef",
    "Scalar",
    "Operand",
    "DTypeList",
    "DTypeValue",
]

#: card dtype and cast-mode spellings: ptosim's one table (``ptosim.vocabulary``)
DTYPES: tuple[str, ...] = DTYPE_NAMES
DType = Literal[DTYPE_NAMES]  # type: ignore[valid-type]
Unit = Literal["V", "C"]
Level = Literal["must", "recommended", "conditional"]
CastModeName = Literal[CAST_MODES]  # type: ignore[valid-type]


#: the default ``when``: always holds (written ``{}`` in the JSON Schema, as in a card)
ALWAYS: Any = Field(TRUE, json_schema_extra={"default": {}})


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, arbitrary_types_allowed=True)


def _predicate(value: Any) -> Predicate:
    try:
        return parse_predicate(value)
    except PredicateError as exc:
        raise ValueError(str(exc)) from None


def _expr(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"expected a number or an expression, got {value!r}")
    if isinstance(value, (int, float)):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a number or an expression such as 'NH*D', got {value!r}")
    try:
        parse(value)
    except ExprError as exc:
        raise ValueError(str(exc)) from None
    return value


_PREDICATE_SCALAR: dict[str, Any] = {"type": ["string", "number", "boolean"]}
#: JSON Schema of the ``when:`` form (``predicates.py``), for editors; the loader checks the rest
PREDICATE_JSON_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "description": (
        "Parameter predicate: {param: value}, {param: [v1, v2]} (membership), several keys (all hold), "
        "{any: [...]}, {all: [...]}, {not: {...}}"
    ),
    "properties": {
        "any": {"type": "array", "minItems": 1, "items": {"type": "object"}},
        "all": {"type": "array", "minItems": 1, "items": {"type": "object"}},
        "not": {"type": "object"},
    },
    "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"},
    "additionalProperties": {"anyOf": [_PREDICATE_SCALAR, {"type": "array", "minItems": 1, "items": _PREDICATE_SCALAR}]},
}

#: a predicate: parsed from the card's mapping, dumped (and shown in the JSON Schema) as that mapping
When = Annotated[
    Any,
    BeforeValidator(_predicate),
    PlainSerializer(lambda p: p.to_data(), return_type=Any),
    WithJsonSchema(PREDICATE_JSON_SCHEMA),
]
#: A shape entry, offset or scalar: an int, a float or an expression over dims and loop names.
ExprValue = Annotated[Union[int, float, str], BeforeValidator(_expr)]
Shape = list[ExprValue]
def _identifier(value: Any) -> Any:
    if isinstance(value, str):
        why = identifier_problem(value)
        if why:
            raise ValueError(why)
    return value


#: a name that becomes an identifier of the generated kernel (vocab.identifiers)
Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"), AfterValidator(_identifier)]


def _token(value: Any) -> Any:
    if isinstance(value, str):
        why = token_problem(value)
        if why:
            raise ValueError(why)
    return value


#: a word that becomes part of an instance (folder) name: an enum choice
Token = Annotated[str, AfterValidator(_token)]
#: PyPTO's name of a loop (a string in the kernel, shown in its traces)
LoopName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]


class ParamRef(Strict):
    """``{param: out_dtype}`` — the value of a parameter."""

    param: Name


class Scalar(Strict):
    """``{scalar: "1/D"}`` — a number or an expression evaluated at instantiation."""

    scalar: ExprValue


Operand = Union[Name, Scalar, ParamRef]
#: the dtypes an input accepts, the first being the default
DTypeList = Annotated[list[DType], Field(min_length=1)]
DTypeValue = Union[DType, ParamRef]

#: what a tensor is for (inputs default to ``activation``, outputs to ``output``)
#: ``cache``: an output the caller passes in with its content (a KV cache) and the kernel updates
#: in place; ``index``: an input whose values select rows of a cache (``index_into``)
#: ``block_table``: an input of block numbers of a paged cache (``index_into`` names the cache,
#: ``block_size`` its tokens per block); ``lengths``: the key count per row of a block table
#: (``index_into`` names the table)
Role = Literal["activation", "weight", "scale", "bias", "output", "norm_out", "norm_scale", "cache", "index", "block_table", "lengths"]
