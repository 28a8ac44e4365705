"""Branches on the loop position: ``is_loop_begin``, ``is_loop_end`` and ``cond``.

PyPTO's jit parser turns ``if pypto.is_loop_begin(j):`` in a kernel body into a compiled branch
(``pypto.cond``); in a helper function the kernel writes ``if pypto.cond(...)`` itself. ptosim runs
the body as Python, so a loop condition is a value that knows its answer for the running
iteration: only the taken branch is traced and recorded, as each iteration of PyPTO's device
program runs only its taken branch. A symbolic comparison (``ctx > 0``) may be branched on through
``cond`` only, as in PyPTO's helpers.
"""

from __future__ import annotations

from .errors import SymbolicError
from .machine import current_machine
from .symbolic import SymbolicBool, SymbolicScalar

__all__ = ["LoopCondition", "cond", "is_loop_begin", "is_loop_end"]


class LoopCondition:
    """Whether the running iteration is the first (or last) of its loop."""

    __slots__ = ("_value", "name")

    def __init__(self, value: bool, name: str) -> None:
        self._value = bool(value)
        self.name = name

    def __bool__(self) -> bool:
        return self._value

    def __repr__(self) -> str:
        return f"LoopCondition({self.name}={self._value})"


def _frame(index: SymbolicScalar, op: str):
    machine = current_machine(op)
    if not isinstance(index, SymbolicScalar):
        raise SymbolicError(
            f"{op} needs the index of an enclosing pypto.loop, got {index!r}",
            hint="pass the loop's own index: for j in pypto.loop(n): ... pypto.is_loop_begin(j)",
        )
    for frame in reversed(machine.loops):
        if frame.idx_name == index.name and frame.index == index.value:
            return frame
    raise SymbolicError(
        f"{op}({index.name}): {index.name} is not the index of an enclosing loop",
        hint="call it inside the loop whose index it names, with the index itself (not an expression of it)",
    )


def is_loop_begin(scalar: SymbolicScalar) -> LoopCondition:
    """True on the first iteration of the loop whose index is ``scalar``."""
    frame = _frame(scalar, "is_loop_begin")
    return LoopCondition(frame.iteration == 0, f"is_loop_begin({scalar.name})")


def is_loop_end(scalar: SymbolicScalar) -> LoopCondition:
    """True on the last iteration of the loop whose index is ``scalar``."""
    frame = _frame(scalar, "is_loop_end")
    return LoopCondition(frame.iteration == frame.count - 1, f"is_loop_end({scalar.name})")


def cond(scalar: object, file: str | None = None, lineno: int | None = None) -> bool:
    """The branch condition as PyPTO's helpers write it: ``if pypto.cond(pypto.is_loop_end(j)):``."""
    if isinstance(scalar, (LoopCondition, bool, int)) and not isinstance(scalar, SymbolicScalar):
        return bool(scalar)
    if isinstance(scalar, SymbolicBool):
        return scalar._value
    if isinstance(scalar, SymbolicScalar):
        return scalar.value != 0
    raise SymbolicError(f"cond needs a loop condition, a symbolic comparison or an int, got {scalar!r}")
