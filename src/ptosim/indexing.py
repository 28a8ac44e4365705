"""Python indexing on tensors, as PyPTO's ``Tensor.__getitem__`` / ``__setitem__``.

``t[b, j]`` with one int or symbolic scalar per axis reads an element of an INT32 tensor as a
symbolic scalar (PyPTO's GetTensorData: a block-table entry, a sequence length); a key of slices
is a ``view``; ``buf[:] = x`` writes ``x`` into the whole buffer (an ``assemble`` at the origin).
"""

from __future__ import annotations

from typing import Any

from .dtypes import DataType
from .errors import DTypeError, ShapeError
from .machine import current_machine
from .symbolic import SymbolicScalar, concrete
from .tensor import Tensor

__all__ = ["getitem", "setitem"]


def _scalar_key(key: tuple[Any, ...]) -> bool:
    return all(isinstance(k, (int, SymbolicScalar)) and not isinstance(k, bool) for k in key)


def getitem(t: Tensor, key: Any) -> Any:
    op = "getitem"
    machine = current_machine(op)
    key = key if isinstance(key, tuple) else (key,)
    if _scalar_key(key):
        if len(key) != t.dim:
            machine.fail(ShapeError, f"{t.name}[{', '.join(map(str, key))}] gives {len(key)} indices for a rank-{t.dim} tensor",
                         code="rank-mismatch", op=op, hint="index every axis to read one element")
        if t.dtype != DataType.DT_INT32:
            machine.fail(DTypeError, f"reading an element of {t.name!r} ({t.dtype.short}): PyPTO reads scalars from INT32 tensors only",
                         code="dtype-unsupported", op=op, hint="pass block tables and lengths as INT32")
        idx = tuple(concrete(k) for k in key)
        for axis, (i, n) in enumerate(zip(idx, t.dims)):
            if not 0 <= i < n:
                machine.fail(ShapeError, f"{t.name}[{', '.join(map(str, idx))}]: axis {axis} index {i} is outside 0..{n - 1}",
                             code="out-of-bounds", op=op, constraint="C-DATA-02")
        names = ", ".join(k.name if isinstance(k, SymbolicScalar) else str(k) for k in key)
        # no op record: the AICPU reads the value for the control flow; no tile op runs on a core
        return SymbolicScalar(int(t.data[idx]), f"{t.name}[{names}]")
    if all(isinstance(k, slice) for k in key) and len(key) <= t.dim:
        from .movement import view

        key = key + (slice(None),) * (t.dim - len(key))
        offsets, shape = [], []
        for k, n in zip(key, t.dims):
            if k.step not in (None, 1):
                machine.fail(ShapeError, f"slice step {k.step} on {t.name!r}", code="argument", op=op, hint="views are contiguous blocks")
            lo = 0 if k.start is None else k.start
            hi = n if k.stop is None else k.stop
            offsets.append(lo)
            shape.append(concrete(hi) - concrete(lo))
        return view(t, shape, offsets)
    machine.fail(ShapeError, f"{t.name}[{key!r}]: index with ints/symbolic scalars (one element) or slices (a view)",
                 code="argument", op=op)


def setitem(t: Tensor, key: Any, value: Tensor) -> None:
    from .movement import assemble

    machine = current_machine("setitem")
    key = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(k, slice) and k == slice(None) for k in key):
        machine.fail(ShapeError, f"{t.name}[{key!r}] = ...: ptosim writes whole buffers only ({t.name}[:] = x)",
                     code="argument", op="setitem", hint="use pypto.assemble(x, offsets, buffer) for a part")
    assemble(value, [0] * t.dim, t)
