"""Typing one op of a flow: operands looked up, dtypes checked against the platform, shapes inferred.

``OpTyper`` holds what every op handler needs (the expansion so far, the platform, the dim
values when known) and one ``op_<kind>`` or ``op_<family>`` method per op of the card vocabulary
(``model.OP_FAMILY``). Each handler returns a ``COp``; the dispatch by unit and the inlining of
calls live in ``expand``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from ptosim.dtypes import dtype_from_name
from ptosim.platform import Profile

from ..cards import model as m
from ..vocab.errors import ErrorCode, did_you_mean
from ..vocab.expr import Expr, ExprError, Num, evaluate, names, parse, simplify, substitute
from ..vocab.expr import render as render_expr
from .control import ControlOps
from .frame import Frame, dims_equal
from .types import (
    RESERVED,
    Arg,
    COp,
    Expansion,
    FlowError,
    ScalarArg,
    TType,
    Unavailable,
    Var,
)

__all__ = ["OpTyper"]

Path = tuple[Any, ...]


class OpTyper(ControlOps):
    """Types single ops against the names defined so far in ``self.exp``."""

    def __init__(self, profile: Profile | None, dim_values: Mapping[str, int] | None = None) -> None:
        self.profile = profile
        self.dim_values = dict(dim_values) if dim_values is not None else None
        self.exp = Expansion()
        # asked for every op: computed once per expansion
        self._dtypes = {d.short for d in profile.dtypes} if profile is not None else None

    # -- errors --------------------------------------------------------------------------------
    def fail(self, frame: Frame, path: Path, code: ErrorCode, message: str) -> FlowError:
        return FlowError(code, message, frame.card.id, path)

    def illegal(self, frame: Frame, path: Path, message: str) -> FlowError:
        where = f" on {self.profile.name}" if self.profile else ""
        return self.fail(frame, path, "dtype-illegal", message + where)

    # -- values ----------------------------------------------------------------------------------
    def var(self, frame: Frame, local: str, path: Path) -> tuple[str, TType]:
        name = frame.names.get(local)
        if name is None or name not in self.exp.types:
            known = sorted(k for k in frame.names if frame.names[k] in self.exp.types)
            raise self.fail(
                frame, path, "undefined-name", f"{local!r} is used before it is defined" + did_you_mean(local, known)
            )
        return name, self.exp.types[name]

    def define(self, frame: Frame, local: str, ttype: TType, path: Path) -> str:
        if local in frame.inputs:
            raise self.fail(
                frame, path, "undefined-name", f"op writes to the input {local!r}; give the result a new name"
            )
        name = frame.global_name(local)
        if not frame.prefix and name in RESERVED:
            raise self.fail(frame, path, "reserved-name", f"{name!r} is reserved in the emitted kernel; rename it")
        self.exp.types[name] = ttype
        return name

    def shape(self, frame: Frame, values: Sequence[Any], path: Path = (), *, extent: int = 0) -> tuple[Expr, ...]:
        """``extent=1`` for the shape of a tensor an op makes (at least 1 wide), 0 for offsets."""
        out = tuple(simplify(substitute(parse(v), frame.dims)) for v in values)
        for i, expr in enumerate(out):
            self.check_extent(frame, expr, path + (i,), extent)
        return out

    def check_extent(self, frame: Frame, expr: Expr, path: Path, least: int = 0) -> None:
        """With the dims known, a shape entry must be a finite whole number: a division by zero,
        ``1e999`` or ``K/3`` for a K not divisible by 3 is a card error at its line, not a
        traceback (or a NaN-sized tensor) later."""
        if self.dim_values is None or not names(expr) <= set(self.dim_values):
            return  # a callee dim not bound yet: checked where it is
        try:
            value = evaluate(expr, self.dim_values)
        except ExprError as exc:
            raise self.fail(frame, path, "bad-expression", f"shape entry {render_expr(expr)}: {exc}") from None
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            raise self.fail(frame, path, "bad-expression", f"shape entry {render_expr(expr)}: {exc}") from None
        if not math.isfinite(value) or int(value) != value or value < least:
            what = "the extent of a tensor is a whole number >= 1" if least else "a shape entry is a whole number >= 0"
            raise self.fail(frame, path, "bad-expression", f"shape entry {render_expr(expr)} = {value} at these dims; {what}")

    def dtype(self, frame: Frame, value: Any, path: Path) -> str:
        if isinstance(value, m.ParamRef):
            if value.param not in frame.params:
                raise self.fail(frame, path, "unknown-param", f"{{param: {value.param}}} names no parameter of {frame.card.id}")
            value = frame.params[value.param]
        self.check_dtype(str(value))
        return str(value)

    def operand(self, frame: Frame, value: Any, path: Path) -> tuple[Arg, TType | None]:
        if isinstance(value, str):
            name, ttype = self.var(frame, value, path)
            return Var(name), ttype
        if isinstance(value, m.ParamRef):
            if value.param not in frame.params:
                raise self.fail(frame, path, "unknown-param", f"{{param: {value.param}}} names no parameter of {frame.card.id}")
            return ScalarArg(Num(frame.params[value.param]), value.param), None
        expr = simplify(substitute(parse(value.scalar), frame.dims))
        return ScalarArg(expr), None

    # -- dtype legality (C-API-01..05) ------------------------------------------------------------
    def check_dtype(self, dtype: str) -> None:
        if self._dtypes is not None and dtype not in self._dtypes:
            raise Unavailable(f"{dtype} is not supported on {self.profile.name}", needs=str(dtype))  # type: ignore[union-attr]

    def check_op_dtype(self, frame: Frame, path: Path, op: str, dtype: str) -> None:
        if self.profile is None:
            return
        self.check_dtype(dtype)
        if not self.profile.op_accepts(op, dtype_from_name(dtype)):
            allowed = sorted(d.short for d in self.profile.op_dtypes[op])
            raise self.illegal(frame, path, f"{op} does not take {dtype} (accepts {', '.join(allowed)})")

    # -- one handler per op (or op family) ----------------------------------------------------------
    def _cop(self, frame: Frame, kind: str, out: str | None, args: list[Arg], attrs: dict[str, Any], out_type: TType | None, in_types: list[TType], path: Path) -> COp:
        return COp(kind, out, args, attrs, out_type, in_types, frame.card.id, path)

    def op_cast(self, frame: Frame, op: m.CastOp, path: Path) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        to = self.dtype(frame, op.to, path + ("to",))
        if self.profile is not None:
            self.check_dtype(src.dtype)
            if not self.profile.can_cast(dtype_from_name(src.dtype), dtype_from_name(to)):
                raise self.illegal(frame, path, f"cast {src.dtype} -> {to} is not a direct conversion")
        out_t = TType(to, src.shape)
        name = self.define(frame, op.out, out_t, path)
        attrs = {"to": to, "mode": op.mode, "sat": op.sat}
        return self._cop(frame, "cast", name, [Var(src_name)], attrs, out_t, [src], path)

    def op_binary(self, frame: Frame, op: m.BinaryOp, path: Path) -> COp:
        a, at = self.operand(frame, op.in_[0], path + ("in", 0))
        if at is None:
            raise self.fail(frame, path, "shape-mismatch", f"{op.op}: the first operand must be a tensor (rule F1)")
        b, bt = self.operand(frame, op.in_[1], path + ("in", 1))
        self.check_op_dtype(frame, path, op.op, at.dtype)
        shape = at.shape
        if bt is not None:
            if bt.dtype != at.dtype:
                raise self.illegal(frame, path, f"{op.op} of {at.dtype} and {bt.dtype}; cast one operand first")
            if bt.rank != at.rank:
                raise self.fail(
                    frame, path, "rank-mismatch", f"{op.op} of rank {at.rank} and rank {bt.rank}; reshape first (C-API-06)"
                )
            out = []
            for x, y in zip(at.shape, bt.shape):
                if x == Num(1):
                    out.append(y)
                elif y == Num(1) or dims_equal(x, y, self.dim_values) is not False:
                    out.append(x)
                else:
                    raise self.fail(
                        frame, path, "shape-mismatch", f"{op.op}: shapes {at.shape_text()} and {bt.shape_text()} do not broadcast"
                    )
            shape = tuple(out)
        out_t = TType(at.dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, op.op, name, [a, b], {}, out_t, [t for t in (at, bt) if t is not None], path)

    def op_unary(self, frame: Frame, op: m.UnaryOp, path: Path) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        self.check_op_dtype(frame, path, op.op, src.dtype)
        name = self.define(frame, op.out, src, path)
        return self._cop(frame, op.op, name, [Var(src_name)], {}, src, [src], path)

    def op_reduce(self, frame: Frame, op: m.ReduceOp, path: Path) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        self.check_op_dtype(frame, path, op.op, src.dtype)
        if not -src.rank <= op.dim < src.rank:
            raise self.fail(frame, path, "rank-mismatch", f"{op.op}: dim {op.dim} out of range for rank {src.rank}")
        axis = op.dim % src.rank
        shape = list(src.shape)
        if op.keepdim:
            shape[axis] = Num(1)
        else:
            del shape[axis]
        out_t = TType(src.dtype, tuple(shape))
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, op.op, name, [Var(src_name)], {"dim": op.dim, "keepdim": op.keepdim}, out_t, [src], path)

    def op_full(self, frame: Frame, op: m.FullOp, path: Path) -> COp:
        dtype = self.dtype(frame, op.dtype, path + ("dtype",))
        self.check_op_dtype(frame, path, "full", dtype)
        value, _ = self.operand(frame, op.value if isinstance(op.value, m.ParamRef) else m.Scalar(scalar=op.value), path)
        out_t = TType(dtype, self.shape(frame, op.shape, path + ("shape",), extent=1))
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, "full", name, [value], {"shape": list(out_t.shape), "dtype": dtype}, out_t, [], path)

    def _mm_shape(self, frame: Frame, path: Path, at: TType, bt: TType, a_trans: bool, b_trans: bool, op: str) -> tuple[Expr, ...]:
        if at.rank != bt.rank or at.rank < 2:
            raise self.fail(frame, path, "rank-mismatch", f"{op}: operands of rank {at.rank} and {bt.rank}")
        mm, ka = (at.shape[-1], at.shape[-2]) if a_trans else (at.shape[-2], at.shape[-1])
        kb, nn = (bt.shape[-1], bt.shape[-2]) if b_trans else (bt.shape[-2], bt.shape[-1])
        if dims_equal(ka, kb, self.dim_values) is False:
            raise self.fail(
                frame,
                path,
                "shape-mismatch",
                f"{op}: inner dims differ ({render_expr(ka)} vs {render_expr(kb)}); check b_trans / weight_layout",
            )
        return at.shape[:-2] + (mm, nn)

    def op_matmul(self, frame: Frame, op: m.MatmulOp, path: Path) -> COp:
        a_name, at = self.var(frame, op.in_[0], path + ("in", 0))
        b_name, bt = self.var(frame, op.in_[1], path + ("in", 1))
        out_dtype = self.dtype(frame, op.out_dtype, path + ("out_dtype",))
        if self.profile is not None:
            for d in (at.dtype, bt.dtype):
                self.check_dtype(d)
            outs = self.profile.matmul_outputs(dtype_from_name(at.dtype), dtype_from_name(bt.dtype))
            if dtype_from_name(out_dtype) not in outs:
                raise self.illegal(frame, path, f"matmul {at.dtype} x {bt.dtype} -> {out_dtype} is not a legal pairing (C-API-02)")
        shape = self._mm_shape(frame, path, at, bt, op.a_trans, op.b_trans, "matmul")
        out_t = TType(out_dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        attrs = {"out_dtype": out_dtype, "a_trans": op.a_trans, "b_trans": op.b_trans}
        return self._cop(frame, "matmul", name, [Var(a_name), Var(b_name)], attrs, out_t, [at, bt], path)

    def op_scaled_mm(self, frame: Frame, op: m.ScaledMmOp, path: Path) -> COp:
        if self.profile is not None and not self.profile.has_feature("scaled_mm"):
            raise Unavailable(f"scaled_mm (MX) is not available on {self.profile.name}", needs="scaled_mm")
        a_name, at = self.var(frame, op.in_[0], path + ("in", 0))
        b_name, bt = self.var(frame, op.in_[1], path + ("in", 1))
        sa_name, sat = self.var(frame, op.scales[0], path + ("scales", 0))
        sb_name, sbt = self.var(frame, op.scales[1], path + ("scales", 1))
        out_dtype = self.dtype(frame, op.out_dtype, path + ("out_dtype",))
        if self.profile is not None:
            outs = self.profile.matmul_outputs(dtype_from_name(at.dtype), dtype_from_name(bt.dtype), scaled=True)
            if dtype_from_name(out_dtype) not in outs:
                raise self.illegal(frame, path, f"scaled_mm {at.dtype} x {bt.dtype} -> {out_dtype} is not a legal pairing")
        shape = self._mm_shape(frame, path, at, bt, False, op.b_trans, "scaled_mm")
        out_t = TType(out_dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        attrs = {"out_dtype": out_dtype, "b_trans": op.b_trans, "scale_b_trans": op.scale_b_trans}
        args = [Var(a_name), Var(b_name), Var(sa_name), Var(sb_name)]
        return self._cop(frame, "scaled_mm", name, args, attrs, out_t, [at, bt, sat, sbt], path)

    def op_view(self, frame: Frame, op: m.ViewOp, path: Path) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        shape = self.shape(frame, op.shape, path + ("shape",), extent=1)
        offsets = self.shape(frame, op.offsets, path + ("offsets",))
        if len(shape) != src.rank or len(offsets) != src.rank:
            raise self.fail(frame, path, "rank-mismatch", f"view of rank-{src.rank} {op.in_!r} needs rank-{src.rank} shape and offsets (C-DATA-02)")
        valid = self.shape(frame, op.valid_shape, path + ("valid_shape",)) if op.valid_shape is not None else None
        out_t = TType(src.dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        attrs = {"shape": list(shape), "offsets": list(offsets), "valid_shape": list(valid) if valid else None}
        return self._cop(frame, "view", name, [Var(src_name)], attrs, out_t, [src], path)

    def op_assemble(self, frame: Frame, op: m.AssembleOp, path: Path) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        dst_name, dst = self.var(frame, op.into, path + ("into",))
        offsets = self.shape(frame, op.offsets, path + ("offsets",))
        if src.rank != dst.rank or len(offsets) != dst.rank:
            raise self.fail(frame, path, "rank-mismatch", f"assemble of rank {src.rank} into rank {dst.rank} (C-DATA-02)")
        if src.dtype != dst.dtype:
            raise self.fail(frame, path, "dtype-illegal", f"assemble of {src.dtype} into {dst.dtype} {op.into!r}; cast first")
        self.exp.written.add(dst_name)
        return self._cop(frame, "assemble", None, [Var(src_name), Var(dst_name)], {"offsets": list(offsets)}, None, [src, dst], path)

    def op_reshape(self, frame: Frame, op: m.ReshapeOp, path: Path) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        shape = self.shape(frame, op.shape, path + ("shape",), extent=1)
        if self.dim_values is not None:
            try:
                before = math.prod(evaluate(s, self.dim_values) for s in src.shape)
                after = math.prod(evaluate(s, self.dim_values) for s in shape)
            except ExprError:
                before = after = None
            if before != after:
                raise self.fail(frame, path, "reshape-size", f"reshape of {src.shape_text()} ({before} elements) to {after} elements")
        out_t = TType(src.dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, "reshape", name, [Var(src_name)], {"shape": list(shape), "inplace": op.inplace}, out_t, [src], path)

    def op_scatter(self, frame: Frame, op: m.ScatterUpdateOp, path: Path) -> COp:
        """Rows [n, C] into a 2-D cache [S, C] at index [n, 1] (INT32/INT64), in the cache's dtype."""
        src_name, src = self.var(frame, op.in_, path + ("in",))
        idx_name, idx = self.var(frame, op.index, path + ("index",))
        dst_name, dst = self.var(frame, op.into, path + ("into",))
        if dst.rank != 2:
            raise self.fail(frame, path + ("into",), "rank-mismatch", f"scatter_update writes a 2-D cache [slots, row]; {op.into!r} is {dst.shape_text()} (PyPTO 0.2.0 does not write a move through a reshape of a 4-D argument back)")
        if idx.rank != 2 or dims_equal(idx.shape[1], Num(1), self.dim_values) is False or idx.dtype not in ("INT32", "INT64"):
            raise self.fail(frame, path + ("index",), "shape-mismatch", f"the index {op.index!r} must be [n, 1] INT32 or INT64, got {idx.shape_text()} {idx.dtype}")
        if src.rank != 2 or dims_equal(src.shape[0], idx.shape[0], self.dim_values) is False or dims_equal(src.shape[1], dst.shape[1], self.dim_values) is False:
            raise self.fail(frame, path + ("in",), "shape-mismatch", f"scatter of {src.shape_text()} rows into {dst.shape_text()} at {idx.shape_text()}: one row of the cache's width per index")
        if src.dtype != dst.dtype:
            raise self.fail(frame, path, "dtype-illegal", f"scatter of {src.dtype} rows into the {dst.dtype} cache {op.into!r}; cast first")
        self.exp.written.add(dst_name)
        return self._cop(frame, "scatter_update", None, [Var(src_name), Var(idx_name), Var(dst_name)], {}, None, [src, idx, dst], path)

    def op_buffer(self, frame: Frame, op: m.BufferOp, path: Path) -> COp:
        dtype = self.dtype(frame, op.dtype, path + ("dtype",))
        self.check_dtype(dtype)
        out_t = TType(dtype, self.shape(frame, op.shape, path + ("shape",), extent=1))
        name = self.define(frame, op.out, out_t, path)
        # an atom's buffer is named per use (``q_rope_pairs``): two uses of the atom in one kernel
        # must not share one named buffer
        label = f"{frame.prefix}_{op.name}" if frame.prefix else op.name
        return self._cop(frame, "buffer", name, [], {"shape": list(out_t.shape), "dtype": dtype, "name": label}, out_t, [], path)

