"""Flow expansion: a card + parameter values -> a flat, typed list of stages of concrete ops.

This is the one interpreter of card flows. The compiler runs it for every parameter combination
to check names and dtypes; the resolver runs it once to build a kernel plan; the docs render its
result as pseudo-code. It never computes values — it inlines calls, resolves guards, renames
locals, unifies symbolic dims and infers each value's dtype and (symbolic) shape.

Naming: a callee's locals become ``<as>_<name>``; its outputs take the names the caller binds
(so ``normed = mul(...)`` reads naturally); its inputs are the caller's tensors. Labels of
spliced stages become ``<as>`` (one stage) or ``<as>.<label>``.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ptosim.platform import Profile

from . import model as m
from .expr import BinOp, Expr, ExprError, Name, Num, evaluate, parse, simplify, substitute
from .expr import render as render_expr
from .predicates import TRUE, Predicate

__all__ = [
    "TType",
    "COp",
    "CStage",
    "Expansion",
    "FlowError",
    "Unavailable",
    "Refused",
    "expand_atom",
    "expand_skeleton",
    "tensor_decl",
    "RESERVED",
]

SCALAR_OPS = ("view", "assemble", "reshape", "buffer")

# Names a card may not define at the top level: they are kernel-level names in the emitted code.
RESERVED = {"pypto", "np", "tile", "t_off", "T", "run", "kernel", "inputs", "outputs", "opts"} | set(keyword.kwlist) | {
    "sum",
    "abs",
    "min",
    "max",
    "range",
    "len",
    "int",
    "float",
    "list",
    "dict",
}


class FlowError(Exception):
    """A problem in a card flow, with the card and the YAML path of the offending node."""

    def __init__(self, code: str, message: str, card: str, path: tuple[Any, ...]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.card = card
        self.path = path


class Unavailable(Exception):
    """The combination needs a feature or dtype the platform does not have (not a card error)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Refused(Unavailable):
    """The combination matches a card's ``refuse`` rule."""

    def __init__(self, card: str, reason: str) -> None:
        super().__init__(f"{card}: {reason}")
        self.card = card


@dataclass(frozen=True)
class TType:
    dtype: str
    shape: tuple[Expr, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def shape_text(self) -> str:
        return "[" + ", ".join(render_expr(s) for s in self.shape) + "]"


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class ScalarArg:
    expr: Expr
    #: the parameter the value came from (rendered as a comment), if any
    param: str | None = None


Arg = Any  # Var | ScalarArg


@dataclass
class COp:
    op: str
    out: str | None
    args: list[Arg]
    attrs: dict[str, Any]
    out_type: TType | None
    in_types: list[TType]
    card: str
    path: tuple[Any, ...]
    note: str = ""


@dataclass
class CStage:
    label: str
    unit: str
    hoist: bool
    ops: list[COp]
    card: str
    title: str
    path: tuple[Any, ...]
    doc: str = ""
    #: the stage's label inside its own card (for the card's tile advice)
    local_label: str = ""
    #: the card's dim names in the kernel's terms (to evaluate the card's tile advice)
    dims: dict[str, Expr] = field(default_factory=dict)

    @property
    def compute(self) -> bool:
        """Whether the stage does V or C work (stages of views/assembles only do not count)."""
        return any(op.op not in SCALAR_OPS for op in self.ops)


@dataclass
class Expansion:
    """The result: stages in order (hoisted ones in ``prologue``) and the type of every name."""

    prologue: list[CStage] = field(default_factory=list)
    stages: list[CStage] = field(default_factory=list)
    types: dict[str, TType] = field(default_factory=dict)
    inputs: dict[str, TType] = field(default_factory=dict)
    outputs: dict[str, TType] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    #: output name -> the global name the card's output ended up in (for atoms)
    results: dict[str, str] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    cards_used: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --- helpers -------------------------------------------------------------------------------------


def tensor_decl(decl: m.TensorDecl, env: Mapping[str, Any]) -> tuple[list[Any], Any]:
    """(shape, dtype) of a declaration under ``env`` (every matching case applies, in order)."""
    shape, dtype = list(decl.shape), decl.dtype
    for case in decl.cases:
        if case.when.holds(env):
            shape = list(case.shape) if case.shape is not None else shape
            dtype = case.dtype if case.dtype is not None else dtype
    if isinstance(dtype, m.ParamRef):
        if dtype.param not in env:
            raise FlowError("unknown-param", f"dtype {{param: {dtype.param}}} names no parameter", "", ("dtype",))
        dtype = env[dtype.param]
    return shape, dtype


def _equal(a: Expr, b: Expr, values: Mapping[str, int] | None) -> bool | None:
    """Structural equality, or by value when every name is bound; None when undecidable."""
    sa, sb = simplify(a), simplify(b)
    if sa == sb:
        return True
    if values is not None:
        try:
            return evaluate(sa, values) == evaluate(sb, values)
        except ExprError:
            return None
    if isinstance(sa, Num) and isinstance(sb, Num):
        return sa.value == sb.value
    return None


class _Frame:
    """One card instance being expanded."""

    def __init__(
        self,
        card: Any,
        params: Mapping[str, Any],
        prefix: str,
        label_prefix: str,
        names: dict[str, str],
        dims: dict[str, Expr],
    ) -> None:
        self.card = card
        self.params = dict(params)
        self.prefix = prefix
        self.label_prefix = label_prefix
        self.names = names  # local -> global
        self.dims = dims  # local dim name -> expression in global terms
        self.inputs: set[str] = set()

    def global_name(self, local: str) -> str:
        if local not in self.names:
            self.names[local] = f"{self.prefix}_{local}" if self.prefix else local
        return self.names[local]


class Expander:
    """Expands one kernel (a skeleton, or an atom checked on its own)."""

    def __init__(
        self,
        catalogue: Any,
        profile: Profile | None,
        dim_values: Mapping[str, int] | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.profile = profile
        self.dim_values = dict(dim_values) if dim_values is not None else None
        self.exp = Expansion()
        #: ``SLOT.param=value`` overrides for a skeleton's fixed stages, by their ``as`` name
        self.stage_overrides: dict[str, dict[str, Any]] = {}
        self.used_overrides: set[str] = set()

    # -- errors --------------------------------------------------------------------------------
    def fail(self, frame: _Frame, path: tuple[Any, ...], code: str, message: str) -> FlowError:
        return FlowError(code, message, frame.card.id, path)

    # -- values ----------------------------------------------------------------------------------
    def var(self, frame: _Frame, local: str, path: tuple[Any, ...]) -> tuple[str, TType]:
        name = frame.names.get(local)
        if name is None or name not in self.exp.types:
            known = sorted(k for k in frame.names if frame.names[k] in self.exp.types)
            from .errors import did_you_mean

            raise self.fail(
                frame, path, "undefined-name", f"{local!r} is used before it is defined" + did_you_mean(local, known)
            )
        return name, self.exp.types[name]

    def define(self, frame: _Frame, local: str, ttype: TType, path: tuple[Any, ...]) -> str:
        if local in frame.inputs:
            raise self.fail(
                frame, path, "undefined-name", f"op writes to the input {local!r}; give the result a new name"
            )
        name = frame.global_name(local)
        if not frame.prefix and name in RESERVED:
            raise self.fail(frame, path, "undefined-name", f"{name!r} is reserved in the emitted kernel; rename it")
        self.exp.types[name] = ttype
        return name

    def shape(self, frame: _Frame, values: Sequence[Any]) -> tuple[Expr, ...]:
        return tuple(simplify(substitute(parse(v), frame.dims)) for v in values)

    def dtype(self, frame: _Frame, value: Any, path: tuple[Any, ...]) -> str:
        if isinstance(value, m.ParamRef):
            if value.param not in frame.params:
                raise self.fail(frame, path, "bad-predicate", f"unknown parameter {value.param!r}")
            value = frame.params[value.param]
        self.check_dtype(str(value))
        return str(value)

    def check_dtype(self, dtype: str) -> None:
        if self.profile is not None and dtype not in {d.short for d in self.profile.dtypes}:
            raise Unavailable(f"{dtype} is not supported on {self.profile.name}")

    def operand(self, frame: _Frame, value: Any, path: tuple[Any, ...]) -> tuple[Arg, TType | None]:
        if isinstance(value, str):
            name, ttype = self.var(frame, value, path)
            return Var(name), ttype
        if isinstance(value, m.ParamRef):
            if value.param not in frame.params:
                raise self.fail(frame, path, "bad-predicate", f"unknown parameter {value.param!r}")
            return ScalarArg(Num(frame.params[value.param]), value.param), None
        expr = simplify(substitute(parse(value.scalar), frame.dims))
        return ScalarArg(expr), None

    # -- dtype legality (C-API-01..05) ------------------------------------------------------------
    def illegal(self, frame: _Frame, path: tuple[Any, ...], message: str) -> FlowError:
        where = f" on {self.profile.name}" if self.profile else ""
        return self.fail(frame, path, "dtype-illegal", message + where)

    def check_op_dtype(self, frame: _Frame, path: tuple[Any, ...], op: str, dtype: str) -> None:
        if self.profile is None:
            return
        from ptosim.dtypes import dtype_from_name

        self.check_dtype(dtype)
        if not self.profile.op_accepts(op, dtype_from_name(dtype)):
            allowed = sorted(d.short for d in self.profile.op_dtypes[op])
            raise self.illegal(frame, path, f"{op} does not take {dtype} (accepts {', '.join(allowed)})")

    # -- ops ----------------------------------------------------------------------------------------
    def op(self, frame: _Frame, op: Any, unit: str, path: tuple[Any, ...], stage: CStage) -> None:
        if not op.when.holds(frame.params):
            return
        if isinstance(op, m.CallOp):
            self.call(frame, op, unit, path, stage)
            return
        kind = op.op
        cube_ops = ("matmul", "scaled_mm")
        scalar_ops = ("view", "assemble", "reshape", "buffer")
        if unit == "C" and kind not in cube_ops + scalar_ops:
            raise self.fail(frame, path, "flow-mismatch", f"vector op {kind!r} in a C (Cube) stage")
        if unit == "V" and kind in cube_ops:
            raise self.fail(frame, path, "flow-mismatch", f"cube op {kind!r} in a V (Vector) stage")
        handler = getattr(self, f"op_{kind}", None) or getattr(self, f"op_{m.OP_FAMILY[kind]}")
        cop = handler(frame, op, path)
        cop.note = op.note
        stage.ops.append(cop)

    def _cop(self, frame, kind, out, args, attrs, out_type, in_types, path) -> COp:  # noqa: ANN001
        return COp(kind, out, args, attrs, out_type, in_types, frame.card.id, path)

    def op_cast(self, frame: _Frame, op: m.CastOp, path: tuple[Any, ...]) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        to = self.dtype(frame, op.to, path + ("to",))
        if self.profile is not None:
            from ptosim.dtypes import dtype_from_name

            self.check_dtype(src.dtype)
            if not self.profile.can_cast(dtype_from_name(src.dtype), dtype_from_name(to)):
                raise self.illegal(frame, path, f"cast {src.dtype} -> {to} is not a direct conversion")
        out_t = TType(to, src.shape)
        name = self.define(frame, op.out, out_t, path)
        attrs = {"to": to, "mode": op.mode, "sat": op.sat}
        return self._cop(frame, "cast", name, [Var(src_name)], attrs, out_t, [src], path)

    def op_binary(self, frame: _Frame, op: m.BinaryOp, path: tuple[Any, ...]) -> COp:
        a, at = self.operand(frame, op.in_[0], path + ("in", 0))
        if at is None:
            raise self.fail(frame, path, "dtype-illegal", f"{op.op}: the first operand must be a tensor (rule F1)")
        b, bt = self.operand(frame, op.in_[1], path + ("in", 1))
        self.check_op_dtype(frame, path, op.op, at.dtype)
        shape = at.shape
        if bt is not None:
            if bt.dtype != at.dtype:
                raise self.illegal(frame, path, f"{op.op} of {at.dtype} and {bt.dtype}; cast one operand first")
            if bt.rank != at.rank:
                raise self.fail(
                    frame, path, "dtype-illegal", f"{op.op} of rank {at.rank} and rank {bt.rank}; reshape first (C-API-06)"
                )
            out = []
            for x, y in zip(at.shape, bt.shape):
                if x == Num(1):
                    out.append(y)
                elif y == Num(1) or _equal(x, y, self.dim_values) is not False:
                    out.append(x)
                else:
                    raise self.fail(
                        frame, path, "dtype-illegal", f"{op.op}: shapes {at.shape_text()} and {bt.shape_text()} do not broadcast"
                    )
            shape = tuple(out)
        out_t = TType(at.dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, op.op, name, [a, b], {}, out_t, [t for t in (at, bt) if t is not None], path)

    def op_unary(self, frame: _Frame, op: m.UnaryOp, path: tuple[Any, ...]) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        self.check_op_dtype(frame, path, op.op, src.dtype)
        name = self.define(frame, op.out, src, path)
        return self._cop(frame, op.op, name, [Var(src_name)], {}, src, [src], path)

    def op_reduce(self, frame: _Frame, op: m.ReduceOp, path: tuple[Any, ...]) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        self.check_op_dtype(frame, path, op.op, src.dtype)
        if not -src.rank <= op.dim < src.rank:
            raise self.fail(frame, path, "dtype-illegal", f"{op.op}: dim {op.dim} out of range for rank {src.rank}")
        axis = op.dim % src.rank
        shape = list(src.shape)
        if op.keepdim:
            shape[axis] = Num(1)
        else:
            del shape[axis]
        out_t = TType(src.dtype, tuple(shape))
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, op.op, name, [Var(src_name)], {"dim": op.dim, "keepdim": op.keepdim}, out_t, [src], path)

    def op_full(self, frame: _Frame, op: m.FullOp, path: tuple[Any, ...]) -> COp:
        dtype = self.dtype(frame, op.dtype, path + ("dtype",))
        self.check_op_dtype(frame, path, "full", dtype)
        value, _ = self.operand(frame, op.value if isinstance(op.value, m.ParamRef) else m.Scalar(scalar=op.value), path)
        out_t = TType(dtype, self.shape(frame, op.shape))
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, "full", name, [value], {"shape": list(out_t.shape), "dtype": dtype}, out_t, [], path)

    def _mm_shape(self, frame: _Frame, path: tuple[Any, ...], at: TType, bt: TType, a_trans: bool, b_trans: bool, op: str):
        if at.rank != bt.rank or at.rank < 2:
            raise self.fail(frame, path, "dtype-illegal", f"{op}: operands of rank {at.rank} and {bt.rank}")
        mm, ka = (at.shape[-1], at.shape[-2]) if a_trans else (at.shape[-2], at.shape[-1])
        kb, nn = (bt.shape[-1], bt.shape[-2]) if b_trans else (bt.shape[-2], bt.shape[-1])
        if _equal(ka, kb, self.dim_values) is False:
            raise self.fail(
                frame,
                path,
                "dtype-illegal",
                f"{op}: inner dims differ ({render_expr(ka)} vs {render_expr(kb)}); check b_trans / weight_layout",
            )
        return at.shape[:-2] + (mm, nn)

    def op_matmul(self, frame: _Frame, op: m.MatmulOp, path: tuple[Any, ...]) -> COp:
        a_name, at = self.var(frame, op.in_[0], path + ("in", 0))
        b_name, bt = self.var(frame, op.in_[1], path + ("in", 1))
        out_dtype = self.dtype(frame, op.out_dtype, path + ("out_dtype",))
        if self.profile is not None:
            from ptosim.dtypes import dtype_from_name

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

    def op_scaled_mm(self, frame: _Frame, op: m.ScaledMmOp, path: tuple[Any, ...]) -> COp:
        if self.profile is not None and not self.profile.has_feature("scaled_mm"):
            raise Unavailable(f"scaled_mm (MX) is not available on {self.profile.name}")
        a_name, at = self.var(frame, op.in_[0], path + ("in", 0))
        b_name, bt = self.var(frame, op.in_[1], path + ("in", 1))
        sa_name, sat = self.var(frame, op.scales[0], path + ("scales", 0))
        sb_name, sbt = self.var(frame, op.scales[1], path + ("scales", 1))
        out_dtype = self.dtype(frame, op.out_dtype, path + ("out_dtype",))
        if self.profile is not None:
            from ptosim.dtypes import dtype_from_name

            outs = self.profile.matmul_outputs(dtype_from_name(at.dtype), dtype_from_name(bt.dtype), scaled=True)
            if dtype_from_name(out_dtype) not in outs:
                raise self.illegal(frame, path, f"scaled_mm {at.dtype} x {bt.dtype} -> {out_dtype} is not a legal pairing")
        shape = self._mm_shape(frame, path, at, bt, False, op.b_trans, "scaled_mm")
        out_t = TType(out_dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        attrs = {"out_dtype": out_dtype, "b_trans": op.b_trans, "scale_b_trans": op.scale_b_trans}
        args = [Var(a_name), Var(b_name), Var(sa_name), Var(sb_name)]
        return self._cop(frame, "scaled_mm", name, args, attrs, out_t, [at, bt, sat, sbt], path)

    def op_view(self, frame: _Frame, op: m.ViewOp, path: tuple[Any, ...]) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        shape = self.shape(frame, op.shape)
        offsets = self.shape(frame, op.offsets)
        if len(shape) != src.rank or len(offsets) != src.rank:
            raise self.fail(frame, path, "dtype-illegal", f"view of rank-{src.rank} {op.in_!r} needs rank-{src.rank} shape and offsets (C-DATA-02)")
        valid = self.shape(frame, op.valid_shape) if op.valid_shape is not None else None
        out_t = TType(src.dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        attrs = {"shape": list(shape), "offsets": list(offsets), "valid_shape": list(valid) if valid else None}
        return self._cop(frame, "view", name, [Var(src_name)], attrs, out_t, [src], path)

    def op_assemble(self, frame: _Frame, op: m.AssembleOp, path: tuple[Any, ...]) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        dst_name, dst = self.var(frame, op.into, path + ("into",))
        offsets = self.shape(frame, op.offsets)
        if src.rank != dst.rank or len(offsets) != dst.rank:
            raise self.fail(frame, path, "dtype-illegal", f"assemble of rank {src.rank} into rank {dst.rank} (C-DATA-02)")
        if src.dtype != dst.dtype:
            raise self.fail(frame, path, "dtype-illegal", f"assemble of {src.dtype} into {dst.dtype} {op.into!r}; cast first")
        self.exp.written.add(dst_name)
        return self._cop(frame, "assemble", None, [Var(src_name), Var(dst_name)], {"offsets": list(offsets)}, None, [src, dst], path)

    def op_reshape(self, frame: _Frame, op: m.ReshapeOp, path: tuple[Any, ...]) -> COp:
        src_name, src = self.var(frame, op.in_, path + ("in",))
        shape = self.shape(frame, op.shape)
        if self.dim_values is not None:
            try:
                before = _prod(evaluate(s, self.dim_values) for s in src.shape)
                after = _prod(evaluate(s, self.dim_values) for s in shape)
            except ExprError:
                before = after = None
            if before != after:
                raise self.fail(frame, path, "dtype-illegal", f"reshape of {src.shape_text()} ({before} elements) to {after} elements")
        out_t = TType(src.dtype, shape)
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, "reshape", name, [Var(src_name)], {"shape": list(shape), "inplace": op.inplace}, out_t, [src], path)

    def op_buffer(self, frame: _Frame, op: m.BufferOp, path: tuple[Any, ...]) -> COp:
        self.check_dtype(op.dtype)
        out_t = TType(op.dtype, self.shape(frame, op.shape))
        name = self.define(frame, op.out, out_t, path)
        return self._cop(frame, "buffer", name, [], {"shape": list(out_t.shape), "dtype": op.dtype, "name": op.name}, out_t, [], path)

    # -- calls ----------------------------------------------------------------------------------------
    def callee_params(
        self, frame: _Frame, callee: Any, given: Mapping[str, Any], inherit: bool, path: tuple[Any, ...]
    ) -> dict[str, Any]:
        specs = self.catalogue.effective_params(callee.id)
        values: dict[str, Any] = {}
        for key, value in given.items():
            if key not in specs:
                from .errors import did_you_mean

                raise self.fail(
                    frame, path + ("params", key), "unknown-param", f"{callee.id} has no parameter {key!r}" + did_you_mean(key, specs)
                )
            if isinstance(value, m.ParamRef):
                if value.param not in frame.params:
                    raise self.fail(frame, path + ("params", key), "unknown-param", f"{{param: {value.param}}} names no parameter of {frame.card.id}")
                value = frame.params[value.param]
            values[key] = value
        for key, spec in specs.items():
            if key in values:
                continue
            values[key] = frame.params[key] if inherit and key in frame.params else spec.default
        return values

    def check_refusals(self, callee: Any, params: Mapping[str, Any]) -> None:
        for rule in callee.refuse:
            if rule.when.holds(params):
                raise Refused(callee.id, rule.reason)

    def bind_inputs(self, frame: _Frame, callee: Any, params: Mapping[str, Any], bind: Mapping[str, str], path: tuple[Any, ...], sub: _Frame) -> None:
        for local, decl in callee.inputs.items():
            if not decl.when.holds(params):
                continue
            if local not in bind:
                raise self.fail(frame, path + ("bind",), "undefined-name", f"{callee.id} input {local!r} is not bound")
            gname, ttype = self.var(frame, bind[local], path + ("bind", local))
            shape, dtypes = tensor_decl(decl, params)
            allowed = dtypes if isinstance(dtypes, list) else [dtypes]
            if ttype.dtype not in allowed:
                raise self.fail(
                    frame, path + ("bind", local), "dtype-illegal", f"{callee.id} input {local!r} takes {'/'.join(allowed)}, got {ttype.dtype}"
                )
            if len(shape) != ttype.rank:
                raise self.fail(
                    frame, path + ("bind", local), "dtype-illegal", f"{callee.id} input {local!r} has rank {len(shape)}, got {ttype.shape_text()}"
                )
            for decl_dim, actual in zip(shape, ttype.shape):
                node = parse(decl_dim)
                if isinstance(node, Name) and node.name not in sub.dims:
                    sub.dims[node.name] = actual
                    continue
                if _equal(substitute(node, sub.dims), actual, self.dim_values) is False:
                    raise self.fail(
                        frame,
                        path + ("bind", local),
                        "dtype-illegal",
                        f"{callee.id} input {local!r} expects {render_expr(substitute(node, sub.dims))} on an axis where {bind[local]!r} has {render_expr(actual)}",
                    )
            sub.names[local] = gname
            sub.inputs.add(local)
        for local in bind:
            if local not in callee.inputs:
                from .errors import did_you_mean

                raise self.fail(frame, path + ("bind", local), "undefined-name", f"{callee.id} has no input {local!r}" + did_you_mean(local, callee.inputs))

    def new_frame(self, frame: _Frame | None, callee: Any, params: Mapping[str, Any], as_: str, out: Mapping[str, str], label_prefix: str) -> _Frame:
        prefix = f"{frame.prefix}_{as_}" if frame and frame.prefix else as_
        names: dict[str, str] = {}
        for local, caller_name in out.items():
            names[local] = frame.global_name(caller_name) if frame else caller_name
        return _Frame(callee, params, prefix, label_prefix, names, {})

    def finish_outputs(self, frame: _Frame, sub: _Frame, out: Mapping[str, str], path: tuple[Any, ...], lenient: bool = False) -> None:
        callee = sub.card
        for local in out:
            if local not in callee.outputs and lenient:
                continue  # a slot maps the outputs of every atom it accepts (checked by the catalogue checks)
            if local not in callee.outputs:
                from .errors import did_you_mean

                raise self.fail(frame, path + ("out", local), "undefined-name", f"{callee.id} has no output {local!r}" + did_you_mean(local, callee.outputs))
            decl = callee.outputs[local]
            if not decl.when.holds(sub.params):
                continue
            gname = sub.names.get(local)
            if gname is None or gname not in self.exp.types:
                raise self.fail(frame, path + ("out", local), "undefined-name", f"{callee.id} never defines its output {local!r}")

    def call(self, frame: _Frame, op: m.CallOp, unit: str, path: tuple[Any, ...], stage: CStage) -> None:
        callee = self.catalogue.card(op.call, frame.card.id, path + ("call",))
        params = self.callee_params(frame, callee, op.params, frame.card.kind == "atom", path)
        self.check_refusals(callee, params)
        sub = self.new_frame(frame, callee, params, op.as_, op.out, frame.label_prefix)
        self.bind_inputs(frame, callee, params, op.bind, path, sub)
        active = [(i, s) for i, s in enumerate(callee.stages) if isinstance(s, m.Stage) and s.when.holds(params) and not s.hoist]
        if len(active) != 1 or len(active) != sum(1 for s in callee.stages if not (isinstance(s, m.Stage) and s.hoist)):
            raise self.fail(frame, path, "flow-mismatch", f"{callee.id} has several stages; splice it with 'use:' instead of 'call:'")
        self.hoisted(sub, callee, params)
        i, s = active[0]
        if s.unit != unit:
            raise self.fail(frame, path, "flow-mismatch", f"{callee.id} stage is {s.unit}, called from a {unit} stage")
        self.exp.cards_used.append(callee.id)
        for j, inner in enumerate(s.ops):
            self.op(sub, inner, unit, ("stages", i, "ops", j), stage)
        self.finish_outputs(frame, sub, op.out, path)

    def hoisted(self, sub: _Frame, callee: Any, params: Mapping[str, Any]) -> None:
        for i, s in enumerate(callee.stages):
            if isinstance(s, m.Stage) and s.hoist and s.when.holds(params):
                self.stage(sub, s, ("stages", i), prologue=True)

    def use(
        self,
        frame: _Frame,
        item: m.UseItem,
        path: tuple[Any, ...],
        overrides: Mapping[str, Any] | None = None,
        card_id: str | None = None,
    ) -> None:
        callee = self.catalogue.card(card_id or item.use, frame.card.id, path + ("use",))
        given = dict(item.params)
        if card_id is None and frame.card.kind == "skeleton" and item.as_ in self.stage_overrides:
            self.used_overrides.add(item.as_)
            given.update(self.stage_overrides[item.as_])
        if overrides:
            given.update(overrides)
        params = self.callee_params(frame, callee, given, frame.card.kind == "atom", path)
        self.check_refusals(callee, params)
        label = f"{frame.label_prefix}.{item.as_}" if frame.label_prefix else item.as_
        slot = card_id is not None
        out = {k: v for k, v in item.out.items() if k in callee.outputs} if slot else item.out
        sub = self.new_frame(frame, callee, params, item.as_, out, label)
        self.bind_inputs(frame, callee, params, item.bind, path, sub)
        self.exp.cards_used.append(callee.id)
        self.items(sub, callee.stages, ("stages",))
        self.finish_outputs(frame, sub, out, path)

    # -- stages ---------------------------------------------------------------------------------------
    def stage_label(self, frame: _Frame, label: str, siblings: int) -> str:
        if not frame.label_prefix:
            return label
        return frame.label_prefix if siblings == 1 else f"{frame.label_prefix}.{label}"

    def stage(self, frame: _Frame, s: m.Stage, path: tuple[Any, ...], prologue: bool = False, siblings: int = 1) -> None:
        hoist = s.hoist or prologue
        target = self.exp.prologue if hoist else self.exp.stages
        if s.merge:
            if not target:
                raise self.fail(frame, path + ("merge",), "flow-mismatch", "'merge: true' on the first stage: there is no stage to continue")
            stage = target[-1]
            if s.unit != stage.unit and any(op.op not in SCALAR_OPS for op in s.ops):
                raise self.fail(frame, path + ("unit",), "flow-mismatch", f"merging a {s.unit} stage into the {stage.unit} stage {stage.label!r}")
            for j, op in enumerate(s.ops):
                self.op(frame, op, stage.unit, path + ("ops", j), stage)
            return
        label = self.stage_label(frame, s.label, siblings)
        if hoist and frame.label_prefix:
            label = f"{frame.label_prefix}.{s.label}"
        title = f"{frame.card.id} {frame.card.title}"
        stage = CStage(label, s.unit, hoist, [], frame.card.id, title, path, s.doc, s.label, dict(frame.dims))
        for j, op in enumerate(s.ops):
            self.op(frame, op, s.unit, path + ("ops", j), stage)
        if stage.ops:
            target.append(stage)

    def items(self, frame: _Frame, items: Sequence[Any], base: tuple[Any, ...], prologue: bool = False, slot: Any = None) -> None:
        loop_stages = [
            s for s in items if isinstance(s, m.Stage) and not s.hoist and not s.merge and s.when.holds(frame.params)
        ]
        for i, item in enumerate(items):
            path = base + (i,)
            if isinstance(item, m.Stage):
                if item.when.holds(frame.params):
                    self.stage(frame, item, path, prologue=prologue or item.hoist, siblings=len(loop_stages) + _uses(items, frame.params))
            elif isinstance(item, m.UseItem):
                if item.when.holds(frame.params):
                    self.use(frame, item, path)
            elif isinstance(item, m.SlotItem):
                if slot is None:
                    raise self.fail(frame, path, "slot-mismatch", "a slot outside a skeleton")
                slot(frame, item, path)


def _uses(items: Sequence[Any], params: Mapping[str, Any]) -> int:
    return sum(1 for it in items if isinstance(it, (m.UseItem, m.SlotItem)) and getattr(it, "when", TRUE).holds(params))


def _prod(values: Iterable[Any]) -> Any:
    out = 1
    for v in values:
        out *= v
    return out




# --- entry points ----------------------------------------------------------------------------------


def _declare_io(ex: Expander, frame: _Frame, card: Any, env: Mapping[str, Any], dims: Mapping[str, Expr], token_axis: str | None) -> None:
    for group, target in (("inputs", ex.exp.inputs), ("outputs", ex.exp.outputs)):
        for name, decl in getattr(card, group).items():
            if not decl.when.holds(env):
                continue
            shape, dtype = tensor_decl(decl, env)
            if isinstance(dtype, list):
                dtype = dtype[0]
            ex.check_dtype(str(dtype))
            ttype = TType(str(dtype), tuple(simplify(substitute(parse(s), dims)) for s in shape))
            if name in RESERVED:
                raise FlowError("undefined-name", f"{name!r} is reserved in the emitted kernel; rename it", card.id, (group, name))
            ex.exp.types[name] = ttype
            target[name] = ttype
            ex.exp.roles[name] = decl.role
            frame.names[name] = name
            if group == "inputs":
                frame.inputs.add(name)


def expand_atom(
    catalogue: Any,
    card: m.AtomCard,
    params: Mapping[str, Any],
    profile: Profile | None,
    input_dtypes: Mapping[str, str] | None = None,
) -> Expansion:
    """Expand an atom on its own (inputs as declared, symbolic dims) — used by the checks."""
    ex = Expander(catalogue, profile)
    ex.check_refusals(card, params)
    frame = _Frame(card, params, "", "", {}, {})
    for name, decl in card.inputs.items():
        if not decl.when.holds(params):
            continue
        shape, dtypes = tensor_decl(decl, params)
        dtype = (input_dtypes or {}).get(name) or (dtypes[0] if isinstance(dtypes, list) else dtypes)
        ex.check_dtype(str(dtype))
        ttype = TType(str(dtype), tuple(parse(s) for s in shape))
        ex.exp.types[name] = ttype
        ex.exp.inputs[name] = ttype
        ex.exp.roles[name] = decl.role
        frame.names[name] = name
        frame.inputs.add(name)
    ex.items(frame, card.stages, ("stages",))
    for name, decl in card.outputs.items():
        if decl.when.holds(params):
            if name not in ex.exp.types:
                raise FlowError("undefined-name", f"output {name!r} is never defined by the flow", card.id, ("outputs", name))
            shape, dtype = tensor_decl(decl, params)
            got = ex.exp.types[name]
            want = dtype if isinstance(dtype, list) else [dtype]
            if got.dtype not in [str(w) for w in want]:
                raise FlowError(
                    "dtype-illegal", f"output {name!r} is {got.dtype} but the card declares {'/'.join(map(str, want))}", card.id, ("outputs", name)
                )
            ex.exp.outputs[name] = got
            ex.exp.results[name] = name
    return ex.exp


def expand_skeleton(
    catalogue: Any,
    card: m.SkeletonCard,
    env: Mapping[str, Any],
    slot_atom: Any,
    slot_params: Mapping[str, Any],
    overrides: Mapping[str, Mapping[str, Any]],
    profile: Profile | None,
    dim_values: Mapping[str, int] | None = None,
) -> Expansion:
    """Expand a skeleton with its slot filled; ``env`` holds the predicates' parameter values."""
    ex = Expander(catalogue, profile, dim_values)
    ex.check_refusals(card, env)
    frame = _Frame(card, env, "", "", {}, {})
    dims = {d: Name(d) for d in card.dims}
    dims[card.token_axis] = Name(card.token_axis)
    _declare_io(ex, frame, card, env, dims, card.token_axis)
    for local in (card.loop.factor, card.loop.index):
        frame.dims[local] = Name(local)
    frame.dims.update(dims)
    def fill_slot(fr: _Frame, item: m.SlotItem, path: tuple[Any, ...]) -> None:
        spec = card.slots.get(item.slot)
        if spec is None:
            raise FlowError("slot-mismatch", f"unknown slot {item.slot!r}", card.id, path)
        use = m.UseItem.model_validate({"use": slot_atom.id, "as": item.slot, "bind": item.bind, "out": item.out})
        ex.use(fr, use, path, overrides=dict(slot_params), card_id=slot_atom.id)

    ex.stage_overrides = {k: dict(v) for k, v in overrides.items()}
    ex.items(frame, card.prologue, ("prologue",), prologue=True, slot=fill_slot)
    ex.items(frame, card.stages, ("stages",), slot=fill_slot)
    unknown = set(overrides) - ex.used_overrides
    if unknown:
        from .errors import did_you_mean

        stages = sorted(i.as_ for i in card.stages if isinstance(i, m.UseItem))
        name = sorted(unknown)[0]
        raise FlowError("unknown-param", f"{card.id} has no fixed stage {name!r}; fixed stages: {', '.join(stages)}" + did_you_mean(name, stages), card.id, ())
    for name in ex.exp.outputs:
        if name not in ex.exp.written:
            raise FlowError("undefined-name", f"output {name!r} is never assembled", card.id, ("outputs", name))
    return ex.exp
