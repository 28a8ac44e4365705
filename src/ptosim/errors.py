"""One error family for everything ptosim refuses.

Every error names the op, the semantic label, the kernel source line that issued the op, the
offending value, the limit and (where one applies) the constraint id of the pattern-card
catalogue, e.g.::

    mul (label 'rmsnorm') at kernel.py:41: UB footprint 393216 B > UB 196608 B on a2a3
    (C-TILE-03); shrink the vec tile [8, 4096]

Errors are raised, never printed. ``code`` is a closed set of kebab-case identifiers that tests
and callers match on; the message wording is for people.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from typing import Any, Literal

__all__ = [
    "PtoSimError",
    "TileShapeError",
    "CapacityError",
    "DTypeError",
    "ShapeError",
    "SymbolicError",
    "OptionError",
    "PlatformError",
    "ErrorCode",
    "PtoSimWarning",
    "kernel_location",
    "warn",
]

ErrorCode = Literal[
    "tile-rank",
    "tile-align",
    "tile-unset",
    "tile-value",
    "ub-overflow",
    "reduce-tile",
    "l0a-overflow",
    "l0b-overflow",
    "l0c-overflow",
    "l1-overflow",
    "cube-tile",
    "dtype-unsupported",
    "cast-unsupported",
    "matmul-dtype",
    "shape-mismatch",
    "out-of-bounds",
    "valid-shape",
    "rank-mismatch",
    "symbolic",
    "unknown-option",
    "option-value",
    "option-type",
    "platform",
    "argument",
]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=1024)
def _outside(filename: str) -> str | None:
    """The base name of ``filename`` if it is kernel code (not ptosim, not importlib), else None."""
    path = os.path.abspath(filename)
    if path.startswith(_PKG_DIR + os.sep) or "importlib" in path:
        return None
    return os.path.basename(path)


def kernel_location() -> str | None:
    """``file:line`` of the innermost frame outside ptosim (the kernel line that issued the op)."""
    frame = sys._getframe(1)
    while frame is not None:
        base = _outside(frame.f_code.co_filename)
        if base is not None:
            return f"{base}:{frame.f_lineno}"
        frame = frame.f_back
    return None


class PtoSimError(Exception):
    """Base of every ptosim error.

    Attributes: ``code`` (closed set, see ``ErrorCode``), ``op``, ``label``, ``where``
    (``file:line`` of the kernel), ``constraint`` (catalogue id such as ``C-TILE-03``), ``hint``.
    """

    default_code: ErrorCode = "argument"

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode | None = None,
        op: str | None = None,
        label: str | None = None,
        where: str | None = None,
        constraint: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.code: ErrorCode = code or self.default_code
        self.op = op
        self.label = label
        self.where = where if where is not None else kernel_location()
        self.constraint = constraint
        self.hint = hint
        super().__init__(str(self))

    def __str__(self) -> str:
        head = []
        if self.op:
            head.append(self.op)
        if self.label:
            head.append(f"(label {self.label!r})")
        if self.where:
            head.append(f"at {self.where}")
        text = (" ".join(head) + ": " if head else "") + self.message
        if self.constraint:
            text += f" ({self.constraint})"
        if self.hint:
            text += f"; {self.hint}"
        return text


class TileShapeError(PtoSimError):
    """A vec/cube tile shape breaks a rank, alignment or divisibility rule (C-TILE-01/02/05/06)."""

    default_code: ErrorCode = "tile-value"


class CapacityError(PtoSimError):
    """A tile does not fit an on-chip buffer (UB, L0A, L0B, L0C, L1) (C-TILE-03/05)."""

    default_code: ErrorCode = "ub-overflow"


class DTypeError(PtoSimError):
    """A dtype, cast or matmul operand pair the platform does not support (C-API-01..05)."""

    default_code: ErrorCode = "dtype-unsupported"


class ShapeError(PtoSimError):
    """Shapes that do not match, views/assembles out of bounds, valid_shape > shape (C-DATA-02)."""

    default_code: ErrorCode = "shape-mismatch"


class SymbolicError(PtoSimError):
    """A symbolic scalar used where PyPTO needs a Python value (C-SYM-01..07, C-LOOP-03)."""

    default_code: ErrorCode = "symbolic"


class OptionError(PtoSimError):
    """An unknown runtime/pass option, a value out of range or of the wrong type."""

    default_code: ErrorCode = "unknown-option"


class PlatformError(PtoSimError):
    """An unknown or malformed platform profile, or a feature the platform lacks.

    For a profile that breaks the schema: ``path`` is the key path of the first offending key
    (e.g. ``("vec_rules", "footprint_factor")``) and ``problems`` lists every problem as
    ``(key path, message)``; both are empty for other platform errors.
    """

    default_code: ErrorCode = "platform"

    def __init__(
        self,
        message: str,
        *,
        path: tuple[Any, ...] = (),
        problems: list[tuple[tuple[Any, ...], str]] | None = None,
        **context: Any,
    ) -> None:
        self.path: tuple[Any, ...] = tuple(path)
        self.problems: list[tuple[tuple[Any, ...], str]] = list(problems or [])
        super().__init__(message, **context)


class PtoSimWarning(UserWarning):
    """Accepted but questionable input: legacy option keys, options without effect on a platform."""


def warn(message: str) -> None:
    """Issue a PtoSimWarning attributed to the kernel line, not to ptosim internals."""
    level = 2
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PKG_DIR + os.sep):
        level += 1
        frame = frame.f_back
    warnings.warn(message, PtoSimWarning, stacklevel=level)
