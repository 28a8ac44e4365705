"""Loops: ``loop`` and ``loop_unroll`` with symbolic indices.

``loop_unroll`` follows PyPTO 0.2.0: the factors are de-duplicated, sorted descending and 1 is
always appended; each factor p runs a sub-loop from where the previous one ended to
``stop - (stop - start) % (step * p)`` with step ``step * p`` (``unroll_schedule``), so a list
whose factors divide each other covers any extent greedily (127 with [32, 16, 8, 4, 2, 1] runs
32, 32, 32, 16, 8, 4, 2, 1). It yields ``(index, factor)``: the index is symbolic, the factor a
plain int (each factor is its own compiled path in PyPTO). Every loop opens an options scope.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from .errors import ShapeError
from .machine import Machine, TileState, current_machine
from .record import LoopFrame
from .symbolic import ScalarLike, SymbolicScalar, concrete

__all__ = ["loop", "loop_unroll", "unroll_schedule"]


def unroll_schedule(start: int, stop: int, step: int, unroll_list: Sequence[int]) -> list[tuple[int, int]]:
    """``[(index, factor)]`` that ``loop_unroll`` runs for concrete bounds, as PyPTO 0.2.0 does
    (``pypto/_controller.py``; its generated host control flow has the same loops): factor p runs
    from where the previous factor ended up to ``stop - (stop - start) % (step * p)`` — the
    remainder of the whole range, not of what is left. For a list whose factors divide each other
    (every power-of-two list) that is the greedy cover; otherwise PyPTO runs a pass past ``stop``
    ([3, 2] at T=16: a 2-pass at 15) or runs rows again ([5, 2] at T=37: 5 x 7, 2 at 35, 1 at 36),
    measured on its SIM task dump — and so does ptosim."""
    factors = sorted({int(f) for f in unroll_list} | {1}, reverse=True)
    out: list[tuple[int, int]] = []
    pos = start
    for p in factors:
        span = step * p
        end = stop - (stop - start) % span
        out += [(i, p) for i in range(pos, end, span)]
        pos = end  # may move back: PyPTO's next sub-loop starts there
    return out


def _check_unroll_list(unroll_list: Any, op: str) -> list[int]:
    if not isinstance(unroll_list, (list, tuple)) or not unroll_list:
        raise ShapeError(f"unroll_list must be a non-empty list of ints, got {unroll_list!r}", code="argument", op=op)
    for f in unroll_list:
        if isinstance(f, SymbolicScalar) or isinstance(f, bool) or not isinstance(f, int) or f < 1:
            raise ShapeError(f"unroll factors must be ints >= 1, got {f!r}", code="argument", op=op)
    return list(unroll_list)


def _check_covered(machine: Any, factors: list[int], n: int, name: str, op: str) -> None:
    """PyPTO 0.2.0 runs a ``loop``'s iterations in chunks of the listed factors, largest first, and
    has no path for what they leave over: with ``unroll_list=[4]`` a 3-iteration kv loop gave NaN
    rows in its CPU verifier (1, 2 and 3 iterations alike). ptosim refuses the run instead."""
    left = n
    for f in sorted(set(factors), reverse=True):
        left %= f
    if left:
        machine.fail(
            ShapeError,
            f"loop {name!r} runs {n} iteration(s) but unroll_list={list(factors)} leaves the last {left} without a "
            "path (PyPTO 0.2.0 computes garbage for them)",
            code="argument",
            op=op,
            hint=f"end the list with 1: unroll_list={sorted(set(factors) | {1}, reverse=True)}",
        )


def _bounds(start: ScalarLike, stop: ScalarLike, step: int, op: str) -> tuple[int, int, int]:
    if isinstance(step, SymbolicScalar) or isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ShapeError(f"step must be a positive int, got {step!r}", code="argument", op=op)
    return concrete(start), concrete(stop), step


def loop_passes(n: int, unroll_list: Sequence[int]) -> list[tuple[int, int]]:
    """``[(pass, factor)]`` of each of ``n`` iterations of a ``loop`` with ``unroll_list``, as
    PyPTO 0.2.0 groups them (one root of ``factor`` copies of the body per pass, measured on the
    kv-block loop of an online flash attention over a paged KV cache): factors largest first, each
    taking whole passes of what is left."""
    out: list[tuple[int, int]] = []
    left, ordinal = n, 0
    for p in sorted(set(unroll_list), reverse=True):
        while left >= p:
            out += [(ordinal, p)] * p
            ordinal, left = ordinal + 1, left - p
    return out + [(ordinal + i, 1) for i in range(left)]


def _iterate(
    machine: Machine, name: str, idx_name: str, schedule: list[tuple[int, int]],
    passes: list[tuple[int, int]] | None = None, **attrs: Any
) -> Iterator[tuple[SymbolicScalar, int]]:
    depth = len(machine.loops)
    with machine.scope("loop", name, **attrs) as scope_id:
        entry = machine.tile
        for ordinal, (index, factor) in enumerate(schedule):
            # PyPTO traces the body once per path, starting from the tiles in force at the loop:
            # a tile set late in one iteration does not carry into the next.
            machine.tiles[-1] = TileState(entry.vec, entry.cube, entry.split_k)
            group, factor = passes[ordinal] if passes else (-1, factor)
            machine.loops.append(LoopFrame(name, index, ordinal, factor, scope_id, idx_name, len(schedule), group))
            try:
                yield SymbolicScalar(index, idx_name), factor
            finally:
                del machine.loops[depth:]


def loop(
    start: ScalarLike,
    stop: ScalarLike | None = None,
    step: int = 1,
    *,
    name: str | None = None,
    idx_name: str | None = None,
    unroll_list: Sequence[int] | None = None,
    submit_before_loop: bool = False,
    parallel: bool = False,
) -> Iterator[SymbolicScalar]:
    """``for i in loop(stop)`` / ``loop(start, stop, step)``: a symbolic index per iteration. With
    ``unroll_list`` (which must cover the extent: PyPTO 0.2.0's ``loop`` appends no 1) each iteration
    still runs on its own, and its frame records the pass of ``factor`` iterations PyPTO compiles it
    into (``loop_passes``): one root for the cost model, as one task group in PyPTO's SIM."""
    op = "loop"
    machine = current_machine(op)
    if stop is None:
        start, stop = 0, start
    lo, hi, st = _bounds(start, stop, step, op)
    name = name or f"loop_{len(machine.record.scopes)}"
    idx_name = idx_name or f"loop_idx_{len(machine.loops)}"
    schedule = [(i, 1) for i in range(lo, hi, st)]
    passes = None
    if unroll_list is not None:
        factors = _check_unroll_list(unroll_list, op)
        _check_covered(machine, factors, len(schedule), name, op)
        passes = loop_passes(len(schedule), factors)
    attrs = {"submit_before_loop": bool(submit_before_loop), "parallel": bool(parallel)}
    for idx, _ in _iterate(machine, name, idx_name, schedule, passes, **attrs):
        yield idx


def loop_unroll(
    start: ScalarLike,
    stop: ScalarLike,
    step: int = 1,
    *,
    name: str | None = None,
    idx_name: str | None = None,
    unroll_list: Sequence[int] = (1,),
    submit_before_loop: bool = False,
) -> Iterator[tuple[SymbolicScalar, int]]:
    """``for idx, factor in loop_unroll(0, T, 1, unroll_list=[8])`` (see the module docstring)."""
    op = "loop_unroll"
    machine = current_machine(op)
    lo, hi, st = _bounds(start, stop, step, op)
    factors = _check_unroll_list(unroll_list, op)
    name = name or f"loop_{len(machine.record.scopes)}"
    idx_name = idx_name or f"loop_idx_{len(machine.loops)}"
    schedule = unroll_schedule(lo, hi, st, factors)
    attrs = {"submit_before_loop": bool(submit_before_loop), "unroll_list": sorted(set(factors) | {1}, reverse=True)}
    yield from _iterate(machine, name, idx_name, schedule, **attrs)
