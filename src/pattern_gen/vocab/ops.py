"""The op vocabulary of a card flow: one ``OpSpec`` per op — the one place an op is declared.

Everything that needs to know an op derives it from ``OPS``: the card schema (``Op``, the pydantic
union), the flow typer (``rule``: which ``OpTyper.op_<rule>`` types it), the unit check, tiling
(``footprint``: how the UB rule counts it), codegen (``macro`` in ``emit/templates/ops.j2``, the
attributes it renders), ``show``/docs (``pseudo``) and the platform profiles (``dtype_checked``:
the op must be listed in every profile's ``op_dtypes``). ``tests/test_op_registry.py`` fails when
an op is missing from ptosim, a profile, the cost lowering or a target's templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Discriminator, Field, Tag

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
    "SCALAR_OPS",
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


class BinaryOp(_Op):
    op: Literal["add", "sub", "mul", "div", "maximum", "minimum"]
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
    """A symbolic scalar: ``out = <value>``, optionally clamped (``(v).min(min)``, ``.max(max)``)."""

    op: Literal["scalar"]
    value: ExprValue
    min: ExprValue | None = None
    max: ExprValue | None = None
    out: Name


class ReadOp(_Op):
    """One element of an INT32 tensor as a symbolic scalar (PyPTO's GetTensorData): a block-table
    entry, a sequence length. ``max`` clamps it from below (a -1 padding entry reads as 0)."""

    op: Literal["read"]
    in_: Name = Field(alias="in")
    index: Shape
    max: ExprValue | None = None
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
    """Everything pattern-gen knows about one op of the card vocabulary."""

    name: str
    #: the pydantic model of the op's card syntax (the ops of a family share one)
    model: type[BaseModel]
    #: ``OpTyper.op_<rule>`` types it; ``macro`` in ``ops.j2`` spells it (defaults: the family)
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
    #: the PyPTO function the kernel calls (``pypto.<api>``; default: the op's name), which
    #: ptosim must export
    api: str = ""
    #: attributes the emitted call and the pseudo-code show, and which of them are shapes
    attrs: tuple[str, ...] = ()
    shape_attrs: tuple[str, ...] = ()
    #: ptosim records it as an op the cost model prices (control flow and scalars are not)
    records: bool = True

    @property
    def pypto_name(self) -> str:
        return self.api or self.name

    @property
    def rule(self) -> str:
        return self.family

    @property
    def macro(self) -> str:
        return self.family


def _family(model: type[BaseModel], family: str, names: tuple[str, ...], **kw: Any) -> list[OpSpec]:
    return [OpSpec(name=n, model=model, family=family, **kw) for n in names]


OPS: dict[str, OpSpec] = {
    s.name: s
    for s in [
        *_family(CastOp, "cast", ("cast",), unit="V", footprint="unary", dtype_checked=False, attrs=("to", "mode", "sat"), pseudo="{out} = cast({args}, {to}{mode}{sat})"),
        *_family(BinaryOp, "binary", ("add", "sub", "mul", "div", "maximum", "minimum"), unit="V", footprint="elementwise", dtype_checked=True),
        *_family(UnaryOp, "unary", ("abs", "sqrt", "rsqrt", "exp"), unit="V", footprint="unary", dtype_checked=True),
        *_family(ReduceOp, "reduce", ("sum", "amax"), unit="V", footprint="reduce", dtype_checked=True, attrs=("dim", "keepdim"), pseudo="{out} = {op}({args}, dim={dim}{keepdim})"),
        *_family(FullOp, "full", ("full",), unit="V", footprint="unary", dtype_checked=True, attrs=("shape", "dtype"), shape_attrs=("shape",), pseudo="{out} = full({shape}, {args}, {dtype})"),
        *_family(MatmulOp, "matmul", ("matmul",), unit="C", footprint=None, dtype_checked=False, attrs=("out_dtype", "a_trans", "b_trans"), pseudo="{out} = matmul({args}, {out_dtype}{a_trans}{b_trans})"),
        *_family(ScaledMmOp, "scaled_mm", ("scaled_mm",), unit="C", footprint=None, dtype_checked=False, attrs=("out_dtype", "b_trans", "scale_b_trans"), pseudo="{out} = scaled_mm({args}, {out_dtype})"),
        *_family(ViewOp, "view", ("view",), unit="any", footprint=None, dtype_checked=False, attrs=("shape", "offsets", "valid_shape"), shape_attrs=("shape", "offsets", "valid_shape"), pseudo="{out} = view({args}, {shape} at {offsets})"),
        *_family(AssembleOp, "assemble", ("assemble",), unit="any", footprint=None, dtype_checked=False, attrs=("offsets",), shape_attrs=("offsets",), pseudo="assemble({arg0} -> {arg1} at {offsets})"),
        *_family(ReshapeOp, "reshape", ("reshape",), unit="any", footprint=None, dtype_checked=False, attrs=("shape", "inplace"), shape_attrs=("shape",), pseudo="{out} = reshape({args}, {shape})"),
        *_family(ScatterUpdateOp, "scatter", ("scatter_update",), unit="V", footprint="unary", dtype_checked=False, pseudo="scatter_update(rows, index, into cache: {args})"),
        *_family(LoopOp, "loop", ("loop",), records=False, unit="any", footprint=None, dtype_checked=False, api="loop", attrs=("extent", "index", "name", "unroll"), shape_attrs=("extent",), pseudo="for {index} in loop({extent}):"),
        *_family(IfOp, "if", ("if",), records=False, unit="any", footprint=None, dtype_checked=False, api="is_loop_begin", attrs=("cond", "loop"), pseudo="if loop_{cond}({loop}):"),
        *_family(ElseOp, "else", ("else",), records=False, unit="any", footprint=None, dtype_checked=False, api="cond", pseudo="else:"),
        *_family(EndOp, "end", ("end",), records=False, unit="any", footprint=None, dtype_checked=False, api="cond", pseudo="end"),
        *_family(ScalarOp, "scalar", ("scalar",), records=False, unit="any", footprint=None, dtype_checked=False, api="SymbolicScalar", attrs=("value", "min", "max"), shape_attrs=("value", "min", "max"), pseudo="{out} = ({value}){min}{max}"),
        *_family(ReadOp, "read", ("read",), records=False, unit="any", footprint=None, dtype_checked=False, api="Tensor", attrs=("index", "max"), shape_attrs=("index", "max"), pseudo="{out} = {args}{index}{max}"),
        *_family(ExtentOp, "extent", ("extent",), records=False, unit="any", footprint=None, dtype_checked=False, api="Tensor", attrs=("axis",), pseudo="{out} = {args}.shape[{axis}]"),
        *_family(StoreOp, "store", ("store",), unit="any", footprint=None, dtype_checked=False, api="assemble", pseudo="{arg1}[:] = {arg0}"),
        *_family(BufferOp, "buffer", ("buffer",), unit="any", footprint=None, dtype_checked=False, api="Tensor", attrs=("shape", "dtype", "name"), shape_attrs=("shape",), pseudo="{out} = buffer({name}, {shape}, {dtype})"),
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
SCALAR_OPS: tuple[str, ...] = tuple(n for n, s in OPS.items() if s.unit == "any")
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
