"""Typing one op of a flow: operands looked up, dtypes checked against the platform, shapes inferred.

``OpTyper`` has one ``op_<family>`` method per op family of the card vocabulary (``vocab.ops``);
each returns a ``COp``. It reads and extends the expansion through the ``TypeState`` it is given,
and hands the control ops (``loop``, ``if``, scalars, ``store``) to the ``ControlOps`` it is given
(``control.py``). The dispatch by unit and the inlining of calls live in ``expand``.
"""

from __future__ import annotations

import math

from ..cards import model as m
from ..vocab.expr import Expr, ExprError, Num, evaluate
from ..vocab.expr import render as render_expr
from .control import ControlOps
from .frame import Frame, dims_equal
from .state import Path, TypeState
from .types import COp, TType, Unavailable, Var

__all__ = ["OpTyper"]


class OpTyper:
    """Types single ops against the names defined so far (``state.exp``)."""

    def __init__(self, state: TypeState, control: ControlOps) -> None:
        self.state = state
        self.control = control

    # -- the control ops: ``ControlOps`` types them ------------------------------------------------
    def op_loop(self, frame: Frame, op: m.LoopOp, path: Path) -> COp:
        return self.control.op_loop(frame, op, path)

    def op_if(self, frame: Frame, op: m.IfOp, path: Path) -> COp:
        return self.control.op_if(frame, op, path)

    def op_else(self, frame: Frame, op: m.ElseOp, path: Path) -> COp:
        return self.control.op_else(frame, op, path)

    def op_end(self, frame: Frame, op: m.EndOp, path: Path) -> COp:
        return self.control.op_end(frame, op, path)

    def op_scalar(self, frame: Frame, op: m.ScalarOp, path: Path) -> COp:
        return self.control.op_scalar(frame, op, path)

    def op_read(self, frame: Frame, op: m.ReadOp, path: Path) -> COp:
        return self.control.op_read(frame, op, path)

    def op_extent(self, frame: Frame, op: m.ExtentOp, path: Path) -> COp:
        return self.control.op_extent(frame, op, path)

    def op_store(self, frame: Frame, op: m.StoreOp, path: Path) -> COp:
        return self.control.op_store(frame, op, path)

    # -- the data ops -----------------------------------------------------------------------------
    def op_cast(self, frame: Frame, op: m.CastOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        to = self.state.dtype(frame, op.to, path + ("to",))
        if self.state.platform is not None:
            self.state.check_dtype(src.dtype)
            if not self.state.platform.ask("cast", src.dtype, to):
                raise self.state.illegal(frame, path, f"cast {src.dtype} -> {to} is not a direct conversion")
        out_t = TType(to, src.shape)
        name = self.state.define(frame, op.out, out_t, path)
        attrs = {"to": to, "mode": op.mode, "sat": op.sat}
        return self.state.cop(frame, "cast", name, [Var(src_name)], attrs, out_t, [src], path)

    def _broadcast(self, frame: Frame, path: Path, op: str, at: TType, bt: TType) -> tuple[Expr, ...]:
        """The shape of an elementwise op over ``at`` and ``bt`` (numpy's rule, equal ranks)."""
        if bt.rank != at.rank:
            raise self.state.fail(frame, path, "rank-mismatch", f"{op} of rank {at.rank} and rank {bt.rank}; reshape first (C-API-06)")
        out = []
        for x, y in zip(at.shape, bt.shape):
            if x == Num(1):
                out.append(y)
            elif y == Num(1) or dims_equal(x, y, self.state.dim_values) is not False:
                out.append(x)
            else:
                raise self.state.fail(frame, path, "shape-mismatch", f"{op}: shapes {at.shape_text()} and {bt.shape_text()} do not broadcast")
        return tuple(out)

    def _two_operands(self, frame: Frame, op: m.BinaryOp | m.CompareOp, path: Path) -> tuple[list, TType, TType | None, tuple[Expr, ...]]:
        a, at = self.state.operand(frame, op.in_[0], path + ("in", 0))
        if at is None:
            raise self.state.fail(frame, path, "shape-mismatch", f"{op.op}: the first operand must be a tensor (rule F1)")
        b, bt = self.state.operand(frame, op.in_[1], path + ("in", 1))
        self.state.check_op_dtype(frame, path, op.op, at.dtype)
        if bt is not None and bt.dtype != at.dtype:
            raise self.state.illegal(frame, path, f"{op.op} of {at.dtype} and {bt.dtype}; cast one operand first")
        shape = self._broadcast(frame, path, op.op, at, bt) if bt is not None else at.shape
        return [a, b], at, bt, shape

    def op_binary(self, frame: Frame, op: m.BinaryOp, path: Path) -> COp:
        args, at, bt, shape = self._two_operands(frame, op, path)
        out_t = TType(at.dtype, shape)
        name = self.state.define(frame, op.out, out_t, path)
        return self.state.cop(frame, op.op, name, args, {}, out_t, [t for t in (at, bt) if t is not None], path)

    def op_compare(self, frame: Frame, op: m.CompareOp, path: Path) -> COp:
        args, at, bt, shape = self._two_operands(frame, op, path)
        out_t = TType("BOOL", shape)
        name = self.state.define(frame, op.out, out_t, path)
        return self.state.cop(frame, op.op, name, args, {}, out_t, [t for t in (at, bt) if t is not None], path)

    def op_where(self, frame: Frame, op: m.WhereOp, path: Path) -> COp:
        c, ct = self.state.var(frame, op.in_[0], path + ("in", 0))
        if ct.dtype != "BOOL":
            raise self.state.fail(frame, path + ("in", 0), "dtype-illegal", f"where: the condition {op.in_[0]!r} is {ct.dtype}; make a BOOL mask with a comparison (gt, ge, eq, ...)")
        a, at = self.state.operand(frame, op.in_[1], path + ("in", 1))
        b, bt = self.state.operand(frame, op.in_[2], path + ("in", 2))
        values = [t for t in (at, bt) if t is not None]
        if not values:
            raise self.state.fail(frame, path, "shape-mismatch", "where: at least one of the two values must be a tensor")
        if len({t.dtype for t in values}) > 1:
            raise self.state.illegal(frame, path, f"where of {at.dtype} and {bt.dtype}; cast one value first")  # type: ignore[union-attr]
        self.state.check_op_dtype(frame, path, "where", values[0].dtype)
        shape = ct.shape
        for t in values:
            shape = self._broadcast(frame, path, "where", TType(ct.dtype, shape), t)
        out_t = TType(values[0].dtype, shape)
        name = self.state.define(frame, op.out, out_t, path)
        return self.state.cop(frame, "where", name, [Var(c), a, b], {}, out_t, [ct, *values], path)

    def op_topk(self, frame: Frame, op: m.TopkOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        self.state.check_op_dtype(frame, path, "topk", src.dtype)
        if not -src.rank <= op.dim < src.rank:
            raise self.state.fail(frame, path, "rank-mismatch", f"topk: dim {op.dim} out of range for rank {src.rank}")
        k = self.state.shape(frame, [op.k], path + ("k",))[0]
        axis = op.dim % src.rank
        try:
            kv, nv = (evaluate(e, self.state.dim_values or {}) for e in (k, src.shape[axis]))
        except ExprError:  # a symbolic extent (the token tile): PyPTO and ptosim check it at run time
            kv = nv = None
        if kv is not None and not 0 < kv <= nv:
            raise self.state.fail(frame, path + ("k",), "shape-mismatch", f"topk: k = {kv} outside 1..{nv}, the extent of dim {op.dim} of {src.shape_text()}")
        shape = list(src.shape)
        shape[axis] = k
        out_t = TType(src.dtype, tuple(shape))
        name = self.state.define(frame, op.out, out_t, path)
        indices = self.state.define(frame, op.indices, TType("INT32", tuple(shape)), path) if op.indices else "_"
        return self.state.cop(frame, "topk", name, [Var(src_name)], {"k": [k], "dim": op.dim, "indices": indices}, out_t, [src], path)

    def op_unary(self, frame: Frame, op: m.UnaryOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        self.state.check_op_dtype(frame, path, op.op, src.dtype)
        name = self.state.define(frame, op.out, src, path)
        return self.state.cop(frame, op.op, name, [Var(src_name)], {}, src, [src], path)

    def op_reduce(self, frame: Frame, op: m.ReduceOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        self.state.check_op_dtype(frame, path, op.op, src.dtype)
        if not -src.rank <= op.dim < src.rank:
            raise self.state.fail(frame, path, "rank-mismatch", f"{op.op}: dim {op.dim} out of range for rank {src.rank}")
        axis = op.dim % src.rank
        shape = list(src.shape)
        if op.keepdim:
            shape[axis] = Num(1)
        else:
            del shape[axis]
        out_t = TType(src.dtype, tuple(shape))
        name = self.state.define(frame, op.out, out_t, path)
        return self.state.cop(frame, op.op, name, [Var(src_name)], {"dim": op.dim, "keepdim": op.keepdim}, out_t, [src], path)

    def op_full(self, frame: Frame, op: m.FullOp, path: Path) -> COp:
        dtype = self.state.dtype(frame, op.dtype, path + ("dtype",))
        self.state.check_op_dtype(frame, path, "full", dtype)
        value, _ = self.state.operand(frame, op.value if isinstance(op.value, m.ParamRef) else m.Scalar(scalar=op.value), path)
        out_t = TType(dtype, self.state.shape(frame, op.shape, path + ("shape",), extent=1))
        name = self.state.define(frame, op.out, out_t, path)
        return self.state.cop(frame, "full", name, [value], {"shape": list(out_t.shape), "dtype": dtype}, out_t, [], path)

    def _mm_shape(self, frame: Frame, path: Path, at: TType, bt: TType, a_trans: bool, b_trans: bool, op: str) -> tuple[Expr, ...]:
        if at.rank != bt.rank or at.rank < 2:
            raise self.state.fail(frame, path, "rank-mismatch", f"{op}: operands of rank {at.rank} and {bt.rank}")
        mm, ka = (at.shape[-1], at.shape[-2]) if a_trans else (at.shape[-2], at.shape[-1])
        kb, nn = (bt.shape[-1], bt.shape[-2]) if b_trans else (bt.shape[-2], bt.shape[-1])
        if dims_equal(ka, kb, self.state.dim_values) is False:
            raise self.state.fail(
                frame,
                path,
                "shape-mismatch",
                f"{op}: inner dims differ ({render_expr(ka)} vs {render_expr(kb)}); check b_trans / weight_layout",
            )
        return at.shape[:-2] + (mm, nn)

    def op_matmul(self, frame: Frame, op: m.MatmulOp, path: Path) -> COp:
        a_name, at = self.state.var(frame, op.in_[0], path + ("in", 0))
        b_name, bt = self.state.var(frame, op.in_[1], path + ("in", 1))
        out_dtype = self.state.dtype(frame, op.out_dtype, path + ("out_dtype",))
        if self.state.platform is not None:
            for d in (at.dtype, bt.dtype):
                self.state.check_dtype(d)
            if not self.state.platform.ask("matmul_out", at.dtype, bt.dtype, out_dtype, False):
                raise self.state.illegal(frame, path, f"matmul {at.dtype} x {bt.dtype} -> {out_dtype} is not a legal pairing (C-API-02)")
        shape = self._mm_shape(frame, path, at, bt, op.a_trans, op.b_trans, "matmul")
        args, reads = [Var(a_name), Var(b_name)], [at, bt]
        if op.bias is not None:
            bias_name, bias_t = self.state.var(frame, op.bias, path + ("bias",))
            self._check_bias(frame, path + ("bias",), at, bt, bias_t, shape[-1])
            args.append(Var(bias_name))
            reads.append(bias_t)
        out_t = TType(out_dtype, shape)
        name = self.state.define(frame, op.out, out_t, path)
        attrs = {"out_dtype": out_dtype, "a_trans": op.a_trans, "b_trans": op.b_trans}
        return self.state.cop(frame, "matmul", name, args, attrs, out_t, reads, path)

    def _check_bias(self, frame: Frame, path: Path, at: TType, bt: TType, bias: TType, n: Expr) -> None:
        """PyPTO 0.2.0's bias rules: [1, N] and a dtype the profile lists for the operand pair."""
        dims = self.state.dim_values
        if bias.rank != 2 or dims_equal(bias.shape[0], Num(1), dims) is False or dims_equal(bias.shape[1], n, dims) is False:
            raise self.state.fail(frame, path, "shape-mismatch", f"a matmul bias must be [1, {render_expr(n)}]; got "
                                  f"[{', '.join(render_expr(d) for d in bias.shape)}] (reshape it once, outside the loop)")
        if self.state.platform is not None:
            if not self.state.platform.ask("bias_ok", at.dtype, bt.dtype, bias.dtype):
                legal = "/".join(self.state.platform.ask("bias_dtypes", at.dtype, bt.dtype)) or "no"
                raise self.state.illegal(frame, path, f"a {at.dtype} x {bt.dtype} matmul takes a {legal} bias on "
                                         f"{self.state.platform.name}, not {bias.dtype} (cast it once, outside the loop)")

    def op_scaled_mm(self, frame: Frame, op: m.ScaledMmOp, path: Path) -> COp:
        if self.state.platform is not None and not self.state.platform.ask("feature", "scaled_mm"):
            raise Unavailable(f"scaled_mm (MX) is not available on {self.state.platform.name}", needs="scaled_mm")
        a_name, at = self.state.var(frame, op.in_[0], path + ("in", 0))
        b_name, bt = self.state.var(frame, op.in_[1], path + ("in", 1))
        sa_name, sat = self.state.var(frame, op.scales[0], path + ("scales", 0))
        sb_name, sbt = self.state.var(frame, op.scales[1], path + ("scales", 1))
        out_dtype = self.state.dtype(frame, op.out_dtype, path + ("out_dtype",))
        if self.state.platform is not None:
            if not self.state.platform.ask("matmul_out", at.dtype, bt.dtype, out_dtype, True):
                raise self.state.illegal(frame, path, f"scaled_mm {at.dtype} x {bt.dtype} -> {out_dtype} is not a legal pairing")
        shape = self._mm_shape(frame, path, at, bt, False, op.b_trans, "scaled_mm")
        out_t = TType(out_dtype, shape)
        name = self.state.define(frame, op.out, out_t, path)
        attrs = {"out_dtype": out_dtype, "b_trans": op.b_trans, "scale_b_trans": op.scale_b_trans}
        args = [Var(a_name), Var(b_name), Var(sa_name), Var(sb_name)]
        return self.state.cop(frame, "scaled_mm", name, args, attrs, out_t, [at, bt, sat, sbt], path)

    def op_view(self, frame: Frame, op: m.ViewOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        shape = self.state.shape(frame, op.shape, path + ("shape",), extent=1)
        offsets = self.state.shape(frame, op.offsets, path + ("offsets",))
        if len(shape) != src.rank or len(offsets) != src.rank:
            raise self.state.fail(frame, path, "rank-mismatch", f"view of rank-{src.rank} {op.in_!r} needs rank-{src.rank} shape and offsets (C-DATA-02)")
        valid = self.state.shape(frame, op.valid_shape, path + ("valid_shape",)) if op.valid_shape is not None else None
        out_t = TType(src.dtype, shape)
        name = self.state.define(frame, op.out, out_t, path)
        attrs = {"shape": list(shape), "offsets": list(offsets), "valid_shape": list(valid) if valid else None}
        return self.state.cop(frame, "view", name, [Var(src_name)], attrs, out_t, [src], path)

    def op_assemble(self, frame: Frame, op: m.AssembleOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        dst_name, dst = self.state.var(frame, op.into, path + ("into",))
        offsets = self.state.shape(frame, op.offsets, path + ("offsets",))
        if src.rank != dst.rank or len(offsets) != dst.rank:
            raise self.state.fail(frame, path, "rank-mismatch", f"assemble of rank {src.rank} into rank {dst.rank} (C-DATA-02)")
        if src.dtype != dst.dtype:
            raise self.state.fail(frame, path, "dtype-illegal", f"assemble of {src.dtype} into {dst.dtype} {op.into!r}; cast first")
        self.state.exp.written.add(dst_name)
        return self.state.cop(frame, "assemble", None, [Var(src_name), Var(dst_name)], {"offsets": list(offsets)}, None, [src, dst], path)

    def op_reshape(self, frame: Frame, op: m.ReshapeOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        shape = self.state.shape(frame, op.shape, path + ("shape",), extent=1)
        if self.state.dim_values is not None:
            try:
                before = math.prod(evaluate(s, self.state.dim_values) for s in src.shape)
                after = math.prod(evaluate(s, self.state.dim_values) for s in shape)
            except ExprError:
                before = after = None
            if before != after:
                raise self.state.fail(frame, path, "reshape-size", f"reshape of {src.shape_text()} ({before} elements) to {after} elements")
        out_t = TType(src.dtype, shape)
        name = self.state.define(frame, op.out, out_t, path)
        return self.state.cop(frame, "reshape", name, [Var(src_name)], {"shape": list(shape), "inplace": op.inplace}, out_t, [src], path)

    def op_scatter(self, frame: Frame, op: m.ScatterUpdateOp, path: Path) -> COp:
        """Rows [n, C] into a 2-D cache [S, C] at index [n, 1] (INT32/INT64), in the cache's dtype."""
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        idx_name, idx = self.state.var(frame, op.index, path + ("index",))
        dst_name, dst = self.state.var(frame, op.into, path + ("into",))
        if dst.rank != 2:
            raise self.state.fail(frame, path + ("into",), "rank-mismatch", f"scatter_update writes a 2-D cache [slots, row]; {op.into!r} is {dst.shape_text()} (PyPTO 0.2.0 does not write a move through a reshape of a 4-D argument back)")
        if idx.rank != 2 or dims_equal(idx.shape[1], Num(1), self.state.dim_values) is False or idx.dtype not in ("INT32", "INT64"):
            raise self.state.fail(frame, path + ("index",), "shape-mismatch", f"the index {op.index!r} must be [n, 1] INT32 or INT64, got {idx.shape_text()} {idx.dtype}")
        if src.rank != 2 or dims_equal(src.shape[0], idx.shape[0], self.state.dim_values) is False or dims_equal(src.shape[1], dst.shape[1], self.state.dim_values) is False:
            raise self.state.fail(frame, path + ("in",), "shape-mismatch", f"scatter of {src.shape_text()} rows into {dst.shape_text()} at {idx.shape_text()}: one row of the cache's width per index")
        if src.dtype != dst.dtype:
            raise self.state.fail(frame, path, "dtype-illegal", f"scatter of {src.dtype} rows into the {dst.dtype} cache {op.into!r}; cast first")
        self.state.exp.written.add(dst_name)
        return self.state.cop(frame, "scatter_update", None, [Var(src_name), Var(idx_name), Var(dst_name)], {}, None, [src, idx, dst], path)

    def op_buffer(self, frame: Frame, op: m.BufferOp, path: Path) -> COp:
        dtype = self.state.dtype(frame, op.dtype, path + ("dtype",))
        self.state.check_dtype(dtype)
        out_t = TType(dtype, self.state.shape(frame, op.shape, path + ("shape",), extent=1))
        name = self.state.define(frame, op.out, out_t, path)
        # an atom's buffer is named per use (``q_rope_pairs``): two uses of the atom in one kernel
        # must not share one named buffer
        label = f"{frame.prefix}_{op.name}" if frame.prefix else op.name
        return self.state.cop(frame, "buffer", name, [], {"shape": list(out_t.shape), "dtype": dtype, "name": label}, out_t, [], path)

