"""Typing the control-flow and scalar ops of a flow: nested ``loop``s, ``if`` on the loop
position, ``else`` / ``end``, and the symbolic scalars (``scalar``, ``read``, ``extent``) their
extents and offsets use; plus ``store`` (``buf[:] = x``), the accumulator update.

A scalar is not a tensor: it joins the frame's ``dims`` as a symbol (rendered by name), so later
shapes, offsets and extents may use it. The open blocks are a stack in the expansion; a card must
close what it opens (an atom inside its own stages).
"""

from __future__ import annotations

from ..cards import model as m
from ..vocab.expr import Name, names
from ..vocab.expr import render as render_expr
from .frame import Frame
from .state import Path, TypeState
from .types import RESERVED, COp, Var

__all__ = ["ControlOps"]


class ControlOps:
    """``op_<family>`` handlers of the control ops; ``OpTyper`` hands them these ops. They read and
    extend the expansion through the ``TypeState`` they are given."""

    def __init__(self, state: TypeState) -> None:
        self.state = state

    def scalar_name(self, frame: Frame, local: str, path: Path) -> str:
        if local in frame.inputs or local in frame.dims and not isinstance(frame.dims[local], Name):
            raise self.state.fail(frame, path, "undefined-name", f"scalar {local!r} would shadow a dim or input; give it a new name")
        name = frame.global_name(local)
        if not frame.prefix and name in RESERVED:
            raise self.state.fail(frame, path, "reserved-name", f"{name!r} is reserved in the emitted kernel; rename it")
        frame.dims[local] = Name(name)
        return name

    def _expr(self, frame: Frame, value: object, path: Path):
        return self.state.shape(frame, [value], path)[0]

    def op_loop(self, frame: Frame, op: m.LoopOp, path: Path) -> COp:
        extent = self._expr(frame, op.extent, path + ("extent",))
        constant = set(getattr(frame.card, "dims", None) or {}) | set(self.state.dim_values or {})
        if op.static and (op.unroll or names(extent) - constant):
            raise self.state.fail(frame, path + ("extent",), "bad-expression", f"a static loop (Python range, unrolled when PyPTO compiles) needs a constant extent of the model dims and no unroll list; got {render_expr(extent)}{' with an unroll list' if op.unroll else ''}")
        index = self.scalar_name(frame, op.index, path + ("index",))
        self.state.exp.blocks.append(("loop", index, frame.card.id, path))
        attrs = {"extent": [extent], "index": index, "name": op.name, "unroll": list(op.unroll) if op.unroll else None, "static": op.static}
        return self.state.cop(frame, "loop", None, [], attrs, None, [], path)

    def op_if(self, frame: Frame, op: m.IfOp, path: Path) -> COp:
        target = frame.dims.get(op.loop)
        # an atom checked on its own takes its scalars as the indices of loops around it
        loops = [b[1] for b in self.state.exp.blocks if b[0] == "loop"] + sorted(self.state.free_scalars)
        if not isinstance(target, Name) or target.name not in loops:
            raise self.state.fail(frame, path + ("loop",), "undefined-name", f"if {op.cond}: {op.loop!r} is not the index of an open loop (open: {', '.join(loops) or 'none'})")
        self.state.exp.blocks.append(("if", target.name, frame.card.id, path))
        return self.state.cop(frame, "if", None, [], {"cond": op.cond, "loop": target.name}, None, [], path)

    def _close(self, frame: Frame, path: Path, what: str, kinds: tuple[str, ...]) -> tuple:
        blocks = self.state.exp.blocks
        if not blocks or blocks[-1][0] not in kinds or blocks[-1][2] != frame.card.id:
            open_ = f"the innermost open block is a {blocks[-1][0]} of {blocks[-1][2]}" if blocks else "no block is open"
            raise self.state.fail(frame, path, "flow-mismatch", f"'{what}' here: {open_}; a card closes the blocks it opens")
        return blocks.pop()

    def op_else(self, frame: Frame, op: m.ElseOp, path: Path) -> COp:
        kind, target, card, _ = self._close(frame, path, "else", ("if",))
        self.state.exp.blocks.append(("else", target, card, path))
        return self.state.cop(frame, "else", None, [], {}, None, [], path)

    def op_end(self, frame: Frame, op: m.EndOp, path: Path) -> COp:
        self._close(frame, path, "end", ("loop", "if", "else"))
        return self.state.cop(frame, "end", None, [], {}, None, [], path)

    def op_scalar(self, frame: Frame, op: m.ScalarOp, path: Path) -> COp:
        value = self._expr(frame, op.value, path + ("value",))
        low = self._expr(frame, op.at_least, path + ("at_least",)) if op.at_least is not None else None
        high = self._expr(frame, op.at_most, path + ("at_most",)) if op.at_most is not None else None
        if (low is not None or high is not None) and not names(value):
            raise self.state.fail(frame, path + ("value",), "bad-expression", f"clamping the constant {render_expr(value)}: .min/.max apply to symbolic scalars")
        name = self.scalar_name(frame, op.out, path + ("out",))
        return self.state.cop(frame, "scalar", name, [], {"value": [value], "min": [high] if high is not None else None, "max": [low] if low is not None else None}, None, [], path)

    def op_read(self, frame: Frame, op: m.ReadOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        if src.dtype != "INT32":
            raise self.state.fail(frame, path + ("in",), "dtype-illegal", f"read of {op.in_!r} ({src.dtype}): PyPTO reads elements of INT32 tensors only")
        index = self.state.shape(frame, op.index, path + ("index",))
        if len(index) != src.rank:
            raise self.state.fail(frame, path + ("index",), "rank-mismatch", f"read of rank-{src.rank} {op.in_!r} needs {src.rank} indices, got {len(index)}")
        low = self._expr(frame, op.at_least, path + ("at_least",)) if op.at_least is not None else None
        name = self.scalar_name(frame, op.out, path + ("out",))
        return self.state.cop(frame, "read", name, [Var(src_name)], {"index": list(index), "max": [low] if low is not None else None}, None, [src], path)

    def op_extent(self, frame: Frame, op: m.ExtentOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        if not -src.rank <= op.axis < src.rank:
            raise self.state.fail(frame, path + ("axis",), "rank-mismatch", f"axis {op.axis} of rank-{src.rank} {op.in_!r}")
        name = self.scalar_name(frame, op.out, path + ("out",))
        return self.state.cop(frame, "extent", name, [Var(src_name)], {"axis": op.axis % src.rank}, None, [src], path)

    def op_store(self, frame: Frame, op: m.StoreOp, path: Path) -> COp:
        src_name, src = self.state.var(frame, op.in_, path + ("in",))
        dst_name, dst = self.state.var(frame, op.into, path + ("into",))
        if src.dtype != dst.dtype or src.rank != dst.rank:
            raise self.state.fail(frame, path, "shape-mismatch", f"store of {src.dtype} {src.shape_text()} into {dst.dtype} {dst.shape_text()} {op.into!r}: same dtype and rank")
        self.state.exp.written.add(dst_name)
        return self.state.cop(frame, "store", None, [Var(src_name), Var(dst_name)], {}, None, [src, dst], path)


