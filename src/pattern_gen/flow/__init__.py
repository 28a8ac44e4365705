"""Flow expansion: a card + parameter values -> a flat, typed list of stages of concrete ops.

This is the one interpreter of card flows. The compiler runs it for every parameter combination
to check names and dtypes; the resolver runs it once to build a kernel plan; the docs render its
result as pseudo-code. It never computes values — it inlines calls, resolves guards, renames
locals, unifies symbolic dims and infers each value's dtype and (symbolic) shape.

Naming: a callee's locals become ``<as>_<name>``; its outputs take the names the caller binds
(so ``normed = mul(...)`` reads naturally); its inputs are the caller's tensors. Labels of
spliced stages become ``<as>`` (one stage) or ``<as>.<label>``.

Modules: ``types`` (what an expansion reads and produces, and its errors), ``frame`` (one card
instance's names and dims), ``platform_view`` (the questions an expansion asks of the platform,
with their answers), ``state`` (the typing state an expansion shares), ``typer`` (typing
one data op), ``control`` (typing the control ops), ``expand`` (stages, calls, splices, entry
points). The pieces are composed, not inherited: ``expand.expander`` builds one ``TypeState`` and
hands it to the ``ControlOps``, the ``OpTyper`` and the ``Expander``.
"""

from .expand import expand_atom, expand_skeleton, skeleton_env
from .frame import tensor_decl
from .types import (
    CUBE_OPS,
    RESERVED,
    UNIT_FREE_OPS,
    Arg,
    CardSource,
    COp,
    CStage,
    Expansion,
    FlowError,
    Refused,
    ScalarArg,
    TType,
    Unavailable,
    Var,
)

__all__ = [
    "TType",
    "COp",
    "CStage",
    "Expansion",
    "FlowError",
    "Unavailable",
    "Refused",
    "Var",
    "ScalarArg",
    "Arg",
    "CardSource",
    "expand_atom",
    "expand_skeleton",
    "skeleton_env",
    "tensor_decl",
    "RESERVED",
    "UNIT_FREE_OPS",
    "CUBE_OPS",
]
