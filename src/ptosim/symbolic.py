"""Symbolic scalars: loop indices and dynamic dims that carry their value.

PyPTO traces a kernel once and runs the loop on the AICPU, so a loop index is a ``SymbolicScalar``
without a Python value at trace time. ptosim runs the kernel eagerly and knows the value, but it
refuses everything PyPTO refuses, so a kernel that passes here also traces there:
Python ``if``/``bool`` (C-SYM-04, C-LOOP-03), ``range(sym)`` (C-SYM-06), list indexing (C-SYM-03),
``**`` (C-SYM-01), ``int()`` (C-SYM-07), float operands, builtin ``min``/``max`` (C-SYM-05: use
``.min``/``.max``). Arithmetic (+, -, *, //, /, %) yields new symbolic scalars; comparisons yield
symbolic booleans that cannot be used as a Python bool.

PyPTO 0.2.0 (probed) accepts ``%`` and ``/`` on symbolic scalars, both symbolic; its ``/`` is
floor division (``SymbolicScalar(6) / 4`` is 1). ptosim follows that, and warns on ``%`` because
the catalogue discourages it (C-SYM-02).
"""

from __future__ import annotations

from typing import Union

import numpy as np

from .errors import SymbolicError, warn

__all__ = ["SymbolicScalar", "ScalarLike", "concrete", "is_symbolic"]

ScalarLike = Union[int, "SymbolicScalar"]


class SymbolicScalar:
    """An integer known to ptosim but opaque to the kernel's Python control flow."""

    __slots__ = ("_value", "name")

    def __init__(self, value: int, name: str = "sym") -> None:
        self._value = int(value)
        self.name = name

    # -- what PyPTO allows -----------------------------------------------------------------
    def _wrap(self, value: int, text: str) -> "SymbolicScalar":
        return SymbolicScalar(value, text)

    def __add__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(self._value + concrete(other), f"({self.name}+{_name(other)})")

    __radd__ = __add__

    def __sub__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(self._value - concrete(other), f"({self.name}-{_name(other)})")

    def __rsub__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(concrete(other) - self._value, f"({_name(other)}-{self.name})")

    def __mul__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(self._value * concrete(other), f"{self.name}*{_name(other)}")

    __rmul__ = __mul__

    # PyPTO's `/` on symbolic scalars is integer floor division (probed on 0.2.0: S(6) / 4 == 1).
    def __truediv__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(self._value // concrete(other), f"({self.name}/{_name(other)})")

    def __rtruediv__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(concrete(other) // self._value, f"({_name(other)}/{self.name})")

    # Accepted by PyPTO 0.2.0, discouraged by the catalogue (C-SYM-02): allowed with a warning.
    def __mod__(self, other: ScalarLike) -> "SymbolicScalar":
        _warn_mod(self.name)
        return self._wrap(self._value % concrete(other), f"({self.name}%{_name(other)})")

    def __rmod__(self, other: ScalarLike) -> "SymbolicScalar":
        _warn_mod(self.name)
        return self._wrap(concrete(other) % self._value, f"({_name(other)}%{self.name})")

    def __floordiv__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(self._value // concrete(other), f"{self.name}//{_name(other)}")

    def __rfloordiv__(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(concrete(other) // self._value, f"{_name(other)}//{self.name}")

    def __neg__(self) -> "SymbolicScalar":
        return self._wrap(-self._value, f"-{self.name}")

    def min(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(min(self._value, concrete(other)), f"{self.name}.min({_name(other)})")

    def max(self, other: ScalarLike) -> "SymbolicScalar":
        return self._wrap(max(self._value, concrete(other)), f"{self.name}.max({_name(other)})")

    def _cmp(self, other: ScalarLike, result: bool, op: str) -> "SymbolicBool":
        return SymbolicBool(result, f"{self.name}{op}{_name(other)}")

    def __lt__(self, other: ScalarLike) -> "SymbolicBool":
        return self._cmp(other, self._value < concrete(other), "<")

    def __le__(self, other: ScalarLike) -> "SymbolicBool":
        return self._cmp(other, self._value <= concrete(other), "<=")

    def __gt__(self, other: ScalarLike) -> "SymbolicBool":
        return self._cmp(other, self._value > concrete(other), ">")

    def __ge__(self, other: ScalarLike) -> "SymbolicBool":
        return self._cmp(other, self._value >= concrete(other), ">=")

    def __eq__(self, other: object) -> "SymbolicBool":  # type: ignore[override]
        if not isinstance(other, (int, SymbolicScalar)):
            return NotImplemented
        return self._cmp(other, self._value == concrete(other), "==")

    def __ne__(self, other: object) -> "SymbolicBool":  # type: ignore[override]
        if not isinstance(other, (int, SymbolicScalar)):
            return NotImplemented
        return self._cmp(other, self._value != concrete(other), "!=")

    __hash__ = object.__hash__

    # -- what PyPTO refuses ----------------------------------------------------------------
    def __bool__(self) -> bool:
        raise SymbolicError(
            f"symbolic scalar {self.name} used as a Python bool (e.g. in `if`)",
            constraint="C-SYM-04",
            hint="use pypto.cond / valid_shape, or a compile-time int such as the unroll factor",
        )

    def __index__(self) -> int:
        raise SymbolicError(
            f"symbolic scalar {self.name} used where Python needs an int (range(), list index, slice)",
            constraint="C-SYM-03",
            hint="loop with pypto.loop and pass symbols only as view offsets or valid_shape",
        )

    def __int__(self) -> int:
        raise SymbolicError(
            f"int() of symbolic scalar {self.name}; its value is not known when PyPTO traces the kernel",
            constraint="C-SYM-07",
            hint="shapes must be compile-time ints; symbols go in offsets and valid_shape",
        )

    def __pow__(self, other: object) -> "SymbolicScalar":
        raise SymbolicError(f"`**` on symbolic scalar {self.name}", constraint="C-SYM-01", hint="multiply explicitly")

    __rpow__ = __pow__

    def __repr__(self) -> str:
        return f"SymbolicScalar({self.name}={self._value})"

    @property
    def value(self) -> int:
        """The simulator's view of the value (not available to kernels under real PyPTO)."""
        return self._value


class SymbolicBool:
    """The result of comparing symbolic scalars; never usable as a Python bool."""

    __slots__ = ("_value", "name")

    def __init__(self, value: bool, name: str) -> None:
        self._value = bool(value)
        self.name = name

    def __bool__(self) -> bool:
        raise SymbolicError(
            f"symbolic condition {self.name} used as a Python bool (`if`, `and`, builtin min/max)",
            constraint="C-SYM-04",
            hint="use sym.min()/sym.max() or valid_shape instead of branching on token counts",
        )

    def __repr__(self) -> str:
        return f"SymbolicBool({self.name}={self._value})"


def concrete(value: ScalarLike) -> int:
    """The integer value of an int or symbolic scalar (simulator-internal).

    Floats are refused rather than truncated: PyPTO's symbolic arithmetic has no float operands
    (``i + 0.5`` fails on 0.2.0), and a float offset or extent is a kernel bug."""
    if isinstance(value, SymbolicScalar):
        return value._value
    if isinstance(value, (bool, np.bool_)):
        raise SymbolicError(f"bool {value!r} used as an integer scalar")
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise SymbolicError(
        f"expected an int or symbolic scalar, got {type(value).__name__} {value!r}",
        hint="symbolic scalars combine with ints only",
    )


def _warn_mod(name: str) -> None:
    warn(f"`%` on symbolic scalar {name}: accepted by PyPTO 0.2.0 but discouraged (C-SYM-02); "
         "prefer x - (x // n) * n or a loop over whole blocks")


def is_symbolic(value: object) -> bool:
    return isinstance(value, SymbolicScalar)


def _name(value: ScalarLike) -> str:
    return value.name if isinstance(value, SymbolicScalar) else str(value)
