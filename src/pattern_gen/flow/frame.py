"""The state of one card instance during expansion, and the dim/declaration helpers around it."""

from __future__ import annotations

from typing import Any, Mapping

from ..cards import model as m
from ..vocab.expr import Expr, ExprError, Num, evaluate, simplify
from .types import FlowError

__all__ = ["Frame", "dims_equal", "tensor_decl"]


class Frame:
    """One card instance being expanded: its parameters and how its local names map to globals."""

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


def dims_equal(a: Expr, b: Expr, values: Mapping[str, int] | None) -> bool | None:
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
