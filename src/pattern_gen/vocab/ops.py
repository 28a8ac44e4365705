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

from pydantic import BaseModel, Discriminator, Tag

from ptosim.vocabulary import OPS as PTOSIM_OPS
from ptosim.vocabulary import OpInfo

__all__ = [
    "BLOCK_OPEN",
    "CUBE_OPS",
    "OPS",
    "OP_FAMILY",
    "OP_MODELS",
    "UNIT_FREE_OPS",
    "AssembleOp",
    "BinaryOp",
    "BufferOp",
    "CallOp",
    "CastOp",
    "CompareOp",
    "ElseOp",
    "EndOp",
    "ExtentOp",
    "FullOp",
    "IfOp",
    "LoopOp",
    "MatmulOp",
    "Op",
    "OpSpec",
    "ReadOp",
    "ReduceOp",
    "ReshapeOp",
    "ScalarOp",
    "ScaledMmOp",
    "ScatterUpdateOp",
    "StoreOp",
    "TopkOp",
    "UnaryOp",
    "ViewOp",
    "WhereOp",
    "op_spec",
    "op_tag",
]


from .op_models import (
    BLOCK_OPEN,
    AssembleOp,
    BinaryOp,
    BufferOp,
    CallOp,
    CastOp,
    CompareOp,
    ElseOp,
    EndOp,
    ExtentOp,
    FullOp,
    IfOp,
    LoopOp,
    MatmulOp,
    ReadOp,
    ReduceOp,
    ReshapeOp,
    ScalarOp,
    ScaledMmOp,
    ScatterUpdateOp,
    StoreOp,
    TopkOp,
    UnaryOp,
    ViewOp,
    WhereOp,
)


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
    "compare": _Syntax(CompareOp, (), (), "{out} = {args} ({op})"),
    "where": _Syntax(WhereOp, (), (), "{out} = where({args})"),
    "topk": _Syntax(TopkOp, ("k", "dim", "indices"), ("k",), "{out}, {indices} = topk({args}, k={k}, dim={dim})"),
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
        _card_only(LoopOp, "loop", "loop", attrs=("extent", "index", "name", "unroll", "static"), shape_attrs=("extent",), pseudo="for {index} in loop({extent}{static}):"),
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
    Union[tuple(Annotated[spec.model, Tag(name)] for name, spec in OPS.items()) + (Annotated[CallOp, Tag("call")],)],  # type: ignore[valid-type]  # noqa: UP007
    Discriminator(
        op_tag,
        custom_error_type="unknown_op",
        custom_error_message="unknown op; valid ops: " + ", ".join(list(OPS) + ["call"]),
    ),
]
