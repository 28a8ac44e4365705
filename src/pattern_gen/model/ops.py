"""The op vocabulary of a card flow: one model per op (the ops of a family share one), and ``call``."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Discriminator, Field, Tag

from .base import ALWAYS, CastModeName, DType, DTypeValue, ExprValue, Name, Operand, ParamRef, Shape, Strict, When

__all__ = [
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


def op_tag(value: Any) -> str | None:
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
        op_tag,
        custom_error_type="unknown_op",
        custom_error_message="unknown op; valid ops: " + ", ".join(list(OP_MODELS) + ["call"]),
    ),
]
