"""The card syntax of each op family: one pydantic model per calling convention (``vocab.ops``
registers them with ptosim's op table)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ptosim.vocabulary import ops_of

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

__all__ = ["BLOCK_OPEN", "AssembleOp", "BinaryOp", "BufferOp", "CallOp", "CastOp", "CompareOp", "ElseOp", "EndOp", "ExtentOp", "FullOp", "IfOp", "LoopOp", "MatmulOp", "ReadOp", "ReduceOp", "ReshapeOp", "ScalarOp", "ScaledMmOp", "ScatterUpdateOp", "StoreOp", "TopkOp", "UnaryOp", "ViewOp", "WhereOp"]


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
_COMPARE = Literal[ops_of(family="compare")]  # type: ignore[valid-type]


class BinaryOp(_Op):
    op: _BINARY
    in_: tuple[Operand, Operand] = Field(alias="in")
    out: Name


class CompareOp(_Op):
    """``out = a <op> b`` elementwise, a BOOL tensor (a mask for ``where``)."""

    op: _COMPARE
    in_: tuple[Operand, Operand] = Field(alias="in")
    out: Name


class WhereOp(_Op):
    """``out = in[1]`` where the BOOL ``in[0]`` holds, else ``in[2]``; the three broadcast."""

    op: Literal["where"]
    in_: tuple[Name, Operand, Operand] = Field(alias="in")
    out: Name


class TopkOp(_Op):
    """The ``k`` largest elements along ``dim``, best first: ``out, indices = topk(in, k, dim)``
    (``indices`` INT32, optional)."""

    op: Literal["topk"]
    in_: Name = Field(alias="in")
    k: ExprValue
    dim: int = -1
    out: Name
    indices: Name | None = None


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
    value: ExprValue | ParamRef
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
    #: a Python ``range`` PyPTO unrolls at compile time (the extent a constant: MoE's expert loop)
    static: bool = False


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
    params: dict[str, bool | int | float | str | ParamRef] = Field(default_factory=dict)
    out: dict[str, Name] = Field(default_factory=dict)
    when: When = ALWAYS
    note: str = ""
