"""The op vocabulary of a card flow: one ``OpSpec`` per op.

An op ptosim records comes from ptosim's table (``ptosim.vocabulary``: unit, UB footprint, dtype
check, spelling); this module adds its family's card syntax (the pydantic model), typing rule
(``OpTyper.op_<family>``), spelling macro (``<family>`` in ``emit/templates/ops.j2``) and
pseudo-code. Ops of the card language that are no PyPTO op (loops, branches, scalars, buffers) are
declared here alone. Everything else derives from ``OPS``: the card schema (``Op``), the unit check,
tiling, ``show`` and the docs. ``tests/architecture/test_op_registry.py`` fails when an op lacks a
typing rule, a macro in some target or a profile's ``op_dtypes`` entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Discriminator, Field, Tag

from ptosim.vocabulary import OPS as PTOSIM_OPS
from ptosim.vocabulary import OpInfo, ops_of

from .fields import (
    ALWAYS,
    CastModeName,
    DTypeValue,
    ExprValue,
    Name,
    Operand,
    ParamRef,
    Shape,
    Strict,
    When,
)

__all__ = [
    "OpSpec",
    "OPS",
    "op_spec",
    "UNIT_FREE_OPS",
    "CUBE_OPS",
    "CastOp",
    "BinaryOp",
    "UnaryOp",
    "ReduceOp",
    "FullOp",
    "MatmulOp",
    "ScaledMmOp",
    "ViewOp",
    "AssembleOp",
    "ReshapeOp",
    "BufferOp",
    "ScatterUpdateOp",
    "LoopOp",
    "IfOp",
    "ElseOp",
    "EndOp",
    "ScalarOp",
    "ReadOp",
    "ExtentOp",
    "StoreOp",
    "BLOCK_OPEN",
    "CallOp",
    "OP_MODELS",
    "OP_FAMILY",
    "Op",
    "op_tag",
]


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


#: the ops of each calling convention, from ptosim's table (a new op of a family needs no edit here)
_BINARY = Literal[ops_of(family="binary")]  # type: ignore[valid-type]
_UNARY = Literal[ops_of(family="unary")]  # type: ignore[valid-type]
_REDUCE = Literal[ops_of(family="reduce")]  # type: ignore[valid-type]


class BinaryOp(_Op):
    op: _BINARY
    in_: tuple[Operand, Operand] = Field(alias="in")
    out: Name


class UnaryOp(_Op):
    op: _UNARY
    in_: Name = Field(alias="in")
    out: Name


class ReduceOp(_Op):
    op: _REDUCE
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
    #: a [1, N] bias added in the accumulator (``extend_params={"bias_tensor": b}``), not a V add
    bias: Name | None = None
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
    dtype: DTypeValue
    out: Name


class ScatterUpdateOp(_Op):
    """Row ``i`` of ``in`` written into row ``index[i, 0]`` of the 2-D ``into`` (a paged KV-cache
    write), in place: ``into.move(scatter_update(into, -2, index, in))``."""

    op: Literal["scatter_update"]
    in_: Name = Field(alias="in")
    index: Name
    into: Name


# --- control flow and scalars (an attention's nested loops; they do no V/C work) -----------------


class LoopOp(_Op):
    """Opens ``for <index> in pypto.loop(<extent>, name=..., idx_name=...):`` inside the token loop;
    the ops up to the matching ``end`` are its body. ``index`` is a scalar for later shapes."""

    op: Literal["loop"]
    extent: ExprValue
    index: Name
    name: str
    unroll: list[Annotated[int, Field(gt=0)]] | None = None


class IfOp(_Op):
    """Opens ``if pypto.is_loop_begin(<loop>):`` (``cond: begin``) or ``is_loop_end`` (``end``)."""

    op: Literal["if"]
    cond: Literal["begin", "end"]
    loop: Name


class ElseOp(_Op):
    op: Literal["else"]


class EndOp(_Op):
    """Closes the innermost open ``loop`` or ``if``."""

    op: Literal["end"]


class ScalarOp(_Op):
    """A symbolic scalar: ``out = <value>``, optionally clamped: ``at_most: b`` renders PyPTO's
    ``(v).min(b)``, ``at_least: a`` its ``.max(a)``."""

    op: Literal["scalar"]
    value: ExprValue
    at_most: ExprValue | None = None
    at_least: ExprValue | None = None
    out: Name


class ReadOp(_Op):
    """One element of an INT32 tensor as a symbolic scalar (PyPTO's GetTensorData): a block-table
    entry, a sequence length. ``at_least`` clamps it from below (``at_least: 0``: a -1 padding entry
    reads as 0; PyPTO's ``.max(0)``)."""

    op: Literal["read"]
    in_: Name = Field(alias="in")
    index: Shape
    at_least: ExprValue | None = None
    out: Name


class ExtentOp(_Op):
    """The run-time extent of a tensor's axis: ``out = <in>.shape[axis]`` (a batch size)."""

    op: Literal["extent"]
    in_: Name = Field(alias="in")
    axis: int = 0
    out: Name


class StoreOp(_Op):
    """``into[:] = in``: replaces the whole content of a named buffer (an accumulator update)."""

    op: Literal["store"]
    in_: Name = Field(alias="in")
    into: Name


#: ops that open an indented block of the kernel body (closed by ``end``)
BLOCK_OPEN: tuple[str, ...] = ("loop", "if")


class CallOp(Strict):
    """Inline a single-stage atom into this stage: its ops, with locals prefixed by ``as``."""

    call: str
    as_: Name = Field(alias="as")
    bind: dict[str, Name] = Field(default_factory=dict)
    params: dict[str, Union[bool, int, float, str, ParamRef]] = Field(default_factory=dict)
    out: dict[str, Name] = Field(default_factory=dict)
    when: When = ALWAYS
    note: str = ""


def op_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        if "call" in value:
            return "call"
        return value.get("op")
    if isinstance(value, CallOp):
        return "call"
    return getattr(value, "op", None)



@dataclass(frozen=True)
class OpSpec:
    """Everything pattern-gen knows about one op of the card vocabulary: ptosim's record of the
    PyPTO op (``ptosim.vocabulary.OpInfo``: unit, footprint, dtype check, spelling) extended with
    the card syntax, the typing rule and the pseudo-code of its family."""

    name: str
    #: the pydantic model of the op's card syntax (the ops of a family share one)
    model: type[BaseModel]
    #: the calling convention: ``OpTyper.op_<family>`` types it, macro ``<family>`` in ``ops.j2``
    #: spells it
    family: str
    #: V (vector), C (cube) or "any" (moves or names data: no V/C work of its own)
    unit: Literal["V", "C", "any"]
    #: how the UB rule counts it: unary, reduce, or elementwise (binary/broadcast/unary by operands);
    #: None for ops that use no vector tile
    footprint: Literal["unary", "elementwise", "reduce"] | None
    #: its input dtype must be listed in the platform profile's ``op_dtypes``
    dtype_checked: bool
    #: one line of pseudo-code for ``show`` and the docs: ``{out}``, ``{args}``, ``{arg0}``…,
    #: ``{op}`` and the attributes (a true flag renders as ``, flag``)
    pseudo: str = "{out} = {op}({args})"
    #: the PyPTO function the kernel calls (``pypto.<api>``), which ptosim must export
    api: str = ""
    #: attributes the emitted call and the pseudo-code show, and which of them are shapes
    attrs: tuple[str, ...] = ()
    shape_attrs: tuple[str, ...] = ()
    #: ptosim records it as an op the cost model prices (control flow and scalars are not)
    records: bool = True

    @property
    def pypto_name(self) -> str:
        return self.api or self.name


@dataclass(frozen=True)
class _Syntax:
    """The card side of a family: its model, the attributes it renders, its pseudo-code."""

    model: type[BaseModel]
    attrs: tuple[str, ...] = ()
    shape_attrs: tuple[str, ...] = ()
    pseudo: str = "{out} = {op}({args})"


#: the card syntax of each family of ptosim ops a card may use (``zeros`` has none: cards say ``full``)
_SYNTAX: dict[str, _Syntax] = {
    "cast": _Syntax(CastOp, ("to", "mode", "sat"), (), "{out} = cast({args}, {to}{mode}{sat})"),
    "binary": _Syntax(BinaryOp),
    "unary": _Syntax(UnaryOp),
    "reduce": _Syntax(ReduceOp, ("dim", "keepdim"), (), "{out} = {op}({args}, dim={dim}{keepdim})"),
    "full": _Syntax(FullOp, ("shape", "dtype"), ("shape",), "{out} = full({shape}, {args}, {dtype})"),
    "matmul": _Syntax(MatmulOp, ("out_dtype", "a_trans", "b_trans"), (), "{out} = matmul({args}, {out_dtype}{a_trans}{b_trans})"),  # a bias is a third arg
    "scaled_mm": _Syntax(ScaledMmOp, ("out_dtype", "b_trans", "scale_b_trans"), (), "{out} = scaled_mm({args}, {out_dtype})"),
    "view": _Syntax(ViewOp, ("shape", "offsets", "valid_shape"), ("shape", "offsets", "valid_shape"), "{out} = view({args}, {shape} at {offsets})"),
    "assemble": _Syntax(AssembleOp, ("offsets",), ("offsets",), "assemble({arg0} -> {arg1} at {offsets})"),
    "reshape": _Syntax(ReshapeOp, ("shape", "inplace"), ("shape",), "{out} = reshape({args}, {shape})"),
    "scatter": _Syntax(ScatterUpdateOp, (), (), "scatter_update(rows, index, into cache: {args})"),
}


def _from_ptosim(info: OpInfo) -> OpSpec:
    syntax = _SYNTAX[info.family]
    return OpSpec(info.name, syntax.model, info.family, info.unit, info.footprint, info.dtype_checked,
                  syntax.pseudo, "", syntax.attrs, syntax.shape_attrs)


def _card_only(model: type[BaseModel], name: str, api: str, *, records: bool = False, attrs: tuple[str, ...] = (),
               shape_attrs: tuple[str, ...] = (), pseudo: str) -> OpSpec:
    """An op of the card language that is no recorded ptosim op: control flow, scalars, buffers."""
    return OpSpec(name, model, name, "any", None, False, pseudo, api, attrs, shape_attrs, records)


OPS: dict[str, OpSpec] = {
    s.name: s
    for s in [
        *(_from_ptosim(info) for info in PTOSIM_OPS.values() if info.family in _SYNTAX),
        _card_only(LoopOp, "loop", "loop", attrs=("extent", "index", "name", "unroll"), shape_attrs=("extent",), pseudo="for {index} in loop({extent}):"),
        _card_only(IfOp, "if", "is_loop_begin", attrs=("cond", "loop"), pseudo="if loop_{cond}({loop}):"),
        _card_only(ElseOp, "else", "cond", pseudo="else:"),
        _card_only(EndOp, "end", "cond", pseudo="end"),
        _card_only(ScalarOp, "scalar", "SymbolicScalar", attrs=("value", "min", "max"), shape_attrs=("value", "min", "max"), pseudo="{out} = ({value}){min}{max}"),
        _card_only(ReadOp, "read", "Tensor", attrs=("index", "max"), shape_attrs=("index", "max"), pseudo="{out} = {args}{index}{max}"),
        _card_only(ExtentOp, "extent", "Tensor", attrs=("axis",), pseudo="{out} = {args}.shape[{axis}]"),
        _card_only(StoreOp, "store", "assemble", records=True, pseudo="{arg1}[:] = {arg0}"),
        _card_only(BufferOp, "buffer", "Tensor", records=True, attrs=("shape", "dtype", "name"), shape_attrs=("shape",), pseudo="{out} = buffer({name}, {shape}, {dtype})"),
    ]
}


def op_spec(name: str) -> OpSpec:
    """The spec of op ``name`` (every op a validated card holds has one)."""
    return OPS[name]


#: op -> its pydantic model (the loader's error reporting looks models up by tag)
OP_MODELS: dict[str, type[BaseModel]] = {name: spec.model for name, spec in OPS.items()}
#: op -> family, for the ops whose family is not their own name
OP_FAMILY: dict[str, str] = {name: spec.family for name, spec in OPS.items() if spec.family != name}
#: ops that only move or name data: allowed on either unit, and no V/C work of their own
UNIT_FREE_OPS: tuple[str, ...] = tuple(n for n, s in OPS.items() if s.unit == "any")
#: ops that run on the Cube unit
CUBE_OPS: tuple[str, ...] = tuple(n for n, s in OPS.items() if s.unit == "C")

Op = Annotated[
    Union[tuple(Annotated[spec.model, Tag(name)] for name, spec in OPS.items()) + (Annotated[CallOp, Tag("call")],)],  # type: ignore[valid-type]
    Discriminator(
        op_tag,
        custom_error_type="unknown_op",
        custom_error_message="unknown op; valid ops: " + ", ".join(list(OPS) + ["call"]),
    ),
]
