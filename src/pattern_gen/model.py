"""The card schema: pydantic v2 models for atoms, skeletons, their flows and performance tables.

Every model forbids unknown keys, so a typo in a card is an error with a location rather than a
silently ignored field. The compute flow is data: a list of stages, each a list of ops from a
closed vocabulary (one model per op, discriminated by ``op``) or calls of other atoms. The JSON
Schema of ``Card`` (``pattern-gen schema``) is what editors validate card files against.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PlainSerializer,
    Tag,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from .errors import did_you_mean
from .expr import ExprError, parse
from .predicates import TRUE, Predicate, PredicateError, parse_predicate

__all__ = [
    "Card",
    "AtomCard",
    "SkeletonCard",
    "ParamSpec",
    "TensorDecl",
    "Stage",
    "UseItem",
    "SlotItem",
    "OP_MODELS",
    "OP_FAMILY",
    "DTYPES",
    "Constraint",
    "ConstraintCatalogue",
]

DTYPES = ("BF16", "FP16", "FP32", "INT8", "INT16", "INT32", "INT64", "UINT8", "FP8E4M3", "FP8E5M2", "FP8E8M0", "BOOL")
DType = Literal["BF16", "FP16", "FP32", "INT8", "INT16", "INT32", "INT64", "UINT8", "FP8E4M3", "FP8E5M2", "FP8E8M0", "BOOL"]
Unit = Literal["V", "C"]
Level = Literal["must", "recommended", "conditional"]
CastModeName = Literal["NONE", "RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD"]


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
Name = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


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


# --- parameters --------------------------------------------------------------------------------


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


# --- inputs and outputs ----------------------------------------------------------------------------

Role = Literal["activation", "weight", "scale", "bias", "output", "norm_out", "norm_scale"]


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


# --- the op vocabulary --------------------------------------------------------------------------


class _Op(Strict):
    when: When = ALWAYS
    note: str = ""


class CastOp(_Op):
    op: Literal["cast"]
    in_: Name = Field(alias="in")
    to: DTypeValue
    mode: CastModeName = "NONE"
    sat: bool = False
    out: Name


class BinaryOp(_Op):
    op: Literal["add", "sub", "mul", "div"]
    in_: tuple[Operand, Operand] = Field(alias="in")
    out: Name


class UnaryOp(_Op):
    op: Literal["abs", "sqrt", "rsqrt", "exp"]
    in_: Name = Field(alias="in")
    out: Name


class ReduceOp(_Op):
    op: Literal["sum", "amax"]
    in_: Name = Field(alias="in")
    dim: int = -1
    keepdim: bool = True
    out: Name


class FullOp(_Op):
    op: Literal["full"]
    shape: Shape
    value: Union[ExprValue, ParamRef]
    dtype: DTypeValue
    out: Name


class MatmulOp(_Op):
    op: Literal["matmul"]
    in_: tuple[Name, Name] = Field(alias="in")
    out_dtype: DTypeValue
    a_trans: bool = False
    b_trans: bool = False
    out: Name


class ScaledMmOp(_Op):
    op: Literal["scaled_mm"]
    in_: tuple[Name, Name] = Field(alias="in")
    scales: tuple[Name, Name]
    out_dtype: DTypeValue
    b_trans: bool = False
    scale_b_trans: bool = False
    out: Name


class ViewOp(_Op):
    op: Literal["view"]
    in_: Name = Field(alias="in")
    shape: Shape
    offsets: Shape
    valid_shape: Shape | None = None
    out: Name


class AssembleOp(_Op):
    op: Literal["assemble"]
    in_: Name = Field(alias="in")
    offsets: Shape
    into: Name


class ReshapeOp(_Op):
    op: Literal["reshape"]
    in_: Name = Field(alias="in")
    shape: Shape
    inplace: bool = False
    out: Name


class BufferOp(_Op):
    """A named intermediate buffer: ``out = Tensor(shape, dtype, "name")``."""

    op: Literal["buffer"]
    name: str
    shape: Shape
    dtype: DType
    out: Name


class CallOp(Strict):
    """Inline a single-stage atom into this stage: its ops, with locals prefixed by ``as``."""

    call: str
    as_: Name = Field(alias="as")
    bind: dict[str, Name] = Field(default_factory=dict)
    params: dict[str, Union[bool, int, float, str, ParamRef]] = Field(default_factory=dict)
    out: dict[str, Name] = Field(default_factory=dict)
    when: When = ALWAYS
    note: str = ""


def _op_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        if "call" in value:
            return "call"
        return value.get("op")
    if isinstance(value, CallOp):
        return "call"
    return getattr(value, "op", None)


OP_MODELS: dict[str, type[BaseModel]] = {
    "cast": CastOp,
    "add": BinaryOp,
    "sub": BinaryOp,
    "mul": BinaryOp,
    "div": BinaryOp,
    "abs": UnaryOp,
    "sqrt": UnaryOp,
    "rsqrt": UnaryOp,
    "exp": UnaryOp,
    "sum": ReduceOp,
    "amax": ReduceOp,
    "full": FullOp,
    "matmul": MatmulOp,
    "scaled_mm": ScaledMmOp,
    "view": ViewOp,
    "assemble": AssembleOp,
    "reshape": ReshapeOp,
    "buffer": BufferOp,
}

#: op -> family: the ops of a family share one schema, one emitter macro and one flow rule.
OP_FAMILY: dict[str, str] = {
    "add": "binary",
    "sub": "binary",
    "mul": "binary",
    "div": "binary",
    "abs": "unary",
    "sqrt": "unary",
    "rsqrt": "unary",
    "exp": "unary",
    "sum": "reduce",
    "amax": "reduce",
}

Op = Annotated[
    Union[
        Annotated[CastOp, Tag("cast")],
        Annotated[BinaryOp, Tag("add")],
        Annotated[BinaryOp, Tag("sub")],
        Annotated[BinaryOp, Tag("mul")],
        Annotated[BinaryOp, Tag("div")],
        Annotated[UnaryOp, Tag("abs")],
        Annotated[UnaryOp, Tag("sqrt")],
        Annotated[UnaryOp, Tag("rsqrt")],
        Annotated[UnaryOp, Tag("exp")],
        Annotated[ReduceOp, Tag("sum")],
        Annotated[ReduceOp, Tag("amax")],
        Annotated[FullOp, Tag("full")],
        Annotated[MatmulOp, Tag("matmul")],
        Annotated[ScaledMmOp, Tag("scaled_mm")],
        Annotated[ViewOp, Tag("view")],
        Annotated[AssembleOp, Tag("assemble")],
        Annotated[ReshapeOp, Tag("reshape")],
        Annotated[BufferOp, Tag("buffer")],
        Annotated[CallOp, Tag("call")],
    ],
    Discriminator(
        _op_tag,
        custom_error_type="unknown_op",
        custom_error_message="unknown op; valid ops: " + ", ".join(list(OP_MODELS) + ["call"]),
    ),
]


# --- stages --------------------------------------------------------------------------------------


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


def _item_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("use", "slot"):
            if key in value:
                return key
        return "stage"
    return {UseItem: "use", SlotItem: "slot", Stage: "stage"}.get(type(value))


Item = Annotated[
    Union[Annotated[Stage, Tag("stage")], Annotated[UseItem, Tag("use")], Annotated[SlotItem, Tag("slot")]],
    Discriminator(_item_tag),
]


# --- performance configuration --------------------------------------------------------------------


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


class TileAdvice(Strict):
    vec: Shape | None = None
    cube: CubeTile | None = None
    why: str = ""

    @model_validator(mode="after")
    def _one(self) -> "TileAdvice":
        if (self.vec is None) == (self.cube is None):
            raise ValueError("give exactly one of 'vec' or 'cube'")
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


# --- cards ------------------------------------------------------------------------------------------


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
