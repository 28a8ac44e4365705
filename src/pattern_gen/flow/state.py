"""The state an expansion types ops against, and the helpers every op handler shares.

``TypeState`` holds the expansion so far, the platform and the dim values when known, and reads
and extends them: errors at a card's path, names looked up and defined, shapes substituted and
checked, dtypes checked against the platform. ``OpTyper``, ``ControlOps`` and the ``Expander``
each take the one ``TypeState`` of an expansion (composition: no handler reaches another's state
but through it).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from ptosim.platform import Profile

from ..cards import model as m
from ..vocab.errors import ErrorCode, did_you_mean
from ..vocab.expr import Expr, ExprError, Num, evaluate, names, parse, simplify, substitute
from ..vocab.expr import render as render_expr
from .frame import Frame
from .platform_view import PlatformView
from .types import RESERVED, Arg, COp, Expansion, FlowError, ScalarArg, TType, Unavailable, Var

__all__ = ["TypeState", "Path"]

Path = tuple[Any, ...]


class TypeState:
    """One expansion's typing state: the names defined so far (``exp``), the platform, the dims."""

    def __init__(self, platform: Profile | PlatformView | None, dim_values: Mapping[str, int] | None = None) -> None:
        #: the profile, read only through the questions of a ``PlatformView`` (see platform_view.py)
        self.platform = PlatformView(platform) if isinstance(platform, Profile) else platform
        self.dim_values = dict(dim_values) if dim_values is not None else None
        self.exp = Expansion()
        #: an atom checked on its own takes its scalars as the indices of loops around it
        self.free_scalars: set[str] = set()

    # -- errors --------------------------------------------------------------------------------
    def fail(self, frame: Frame, path: Path, code: ErrorCode, message: str) -> FlowError:
        return FlowError(code, message, frame.card.id, path)

    def illegal(self, frame: Frame, path: Path, message: str) -> FlowError:
        where = f" on {self.platform.name}" if self.platform else ""
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
        if self.platform is not None and not self.platform.ask("dtype", dtype):
            raise Unavailable(f"{dtype} is not supported on {self.platform.name}", needs=str(dtype))

    def check_op_dtype(self, frame: Frame, path: Path, op: str, dtype: str) -> None:
        if self.platform is None:
            return
        self.check_dtype(dtype)
        if not self.platform.ask("op_accepts", op, dtype):
            allowed = self.platform.ask("op_dtypes", op)
            raise self.illegal(frame, path, f"{op} does not take {dtype} (accepts {', '.join(allowed)})")

    # -- building a concrete op ------------------------------------------------------------------
    def cop(self, frame: Frame, kind: str, out: str | None, args: list[Arg], attrs: dict[str, Any], out_type: TType | None, in_types: list[TType], path: Path) -> COp:
        return COp(kind, out, args, attrs, out_type, in_types, frame.card.id, path)
