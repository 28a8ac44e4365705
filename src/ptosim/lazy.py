"""Deferred matmuls and writes: one GEMM per weight over all loop iterations.

A kernel's loop runs its body once per iteration, so a ``[16, K] x [K, N]`` matmul inside an
unrolled loop would be eight small, memory-bound GEMMs that each stream the whole widened weight.
Instead a 2-D matmul joins the open *batch* of its B operand: its widened A rows are kept and its
result tensor is deferred. The first read of any result of the batch runs one GEMM over all the
rows gathered so far and rounds it once to the output dtype. Rounding is elementwise and the FP32
accumulation order is free, so results are those of one matmul per iteration.

``assemble`` of a deferred result is deferred too, in order, on its target, and settled when the
target is read, written by an ordinary write, or the kernel ends. Before any tensor's storage is
written, every open batch that read it is settled, so a batch never sees later data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from .machine import Machine
    from .tensor import Tensor

__all__ = ["GemmBatch", "PendingWrites"]


class GemmBatch:
    """Matmuls sharing one widened B operand whose results nobody has read yet."""

    __slots__ = ("machine", "key", "product", "finish", "lhs", "outs", "reads")

    def __init__(
        self,
        machine: "Machine",
        key: tuple,
        product: Callable[[np.ndarray], np.ndarray],
        finish: Callable[[np.ndarray], np.ndarray],
    ):
        self.machine = machine
        self.key = key
        self.product = product  # widened lhs rows [M, K] -> accumulator [M, N]
        self.finish = finish  # accumulator -> stored result (rounding to out_dtype)
        self.lhs: list[np.ndarray] = []
        self.outs: list["Tensor"] = []
        self.reads: set[int] = set()  # uids whose storage the kept arrays may alias

    def add(self, lhs: np.ndarray, out: "Tensor", reads: tuple[int, ...]) -> None:
        self.lhs.append(lhs)
        self.outs.append(out)
        self.reads.update(reads)
        out._lazy = self

    def settle(self, _tensor: Any = None) -> None:
        """Run the one GEMM and hand every member its rows."""
        if self.machine.batches.get(self.key) is self:
            del self.machine.batches[self.key]
        if not self.lhs:  # settled already
            return
        lhs = self.lhs[0] if len(self.lhs) == 1 else np.concatenate(self.lhs, axis=0)
        result = self.finish(self.product(lhs))
        row = 0
        for part, out in zip(self.lhs, self.outs):
            n = part.shape[0]
            out._data = result[row : row + n]
            out._lazy = None
            row += n
        self.lhs, self.outs = [], []


class PendingWrites:
    """``assemble`` writes into one target whose sources are still deferred, kept in order."""

    __slots__ = ("machine", "writes")

    def __init__(self, machine: "Machine") -> None:
        self.machine = machine
        self.writes: list[tuple[tuple[slice, ...], "Tensor", tuple[slice, ...]]] = []

    def reads(self, uid: int) -> bool:
        """True when a pending write still has to read tensor ``uid``."""
        return any(src.uid == uid for _, src, _ in self.writes)

    def settle(self, target: "Tensor") -> None:
        target._lazy = None  # first: the writes below read and write target._data directly
        self.machine.pending_targets.pop(target.uid, None)
        self.machine.before_write(target.uid)
        for dst, src, src_idx in self.writes:
            target._data[dst] = src.data[src_idx]
        self.writes = []
