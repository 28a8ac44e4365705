"""What a kernel run leaves behind for the cost model: one record per tile op.

The simulator computes each op once over all of its tiles; the record keeps what the cost model
needs to price it afterwards (unit, label, loop iteration, shapes, dtypes, the tile in force and
which tensors it read and wrote), so costing never re-runs the numerics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["OpRecord", "LoopFrame", "RunRecord", "TensorRef"]


@dataclass(frozen=True)
class TensorRef:
    """A tensor as the cost model sees it: identity, where it lives and its size."""

    uid: int
    name: str
    kind: str  #: ``gm`` (kernel argument), ``buffer`` (named intermediate) or ``tile``
    shape: tuple[int, ...]
    dtype: str  #: short dtype name
    nbytes: int
    cacheable: bool = True  #: False when ``NONE_CACHEABLE`` sends its traffic past L2


@dataclass(frozen=True)
class LoopFrame:
    """One level of loop nesting at the time an op ran."""

    name: str
    index: int  #: value of the loop index for this iteration
    iteration: int  #: ordinal of the iteration within this loop run
    factor: int  #: unroll factor of the path (1 for plain loops)
    scope: int  #: id of the options scope of this loop
    idx_name: str = ""  #: the index's symbol name (``is_loop_begin`` finds its loop by it)
    count: int = 1  #: iterations in this loop run (``is_loop_end``)
    #: the pass an iteration of an unrolled ``loop`` runs in (PyPTO compiles ``factor`` iterations as
    #: one root); -1: its own pass (``iteration``)
    group: int = -1

    @property
    def pass_key(self) -> tuple[int, int, int]:
        """What makes a root: the loop, the pass and its path."""
        return (self.scope, self.group if self.group >= 0 else self.iteration, self.factor)


@dataclass(frozen=True)
class OpRecord:
    seq: int
    op: str  #: PyPTO op name (``mul``, ``matmul``, ``view`` …)
    unit: str  #: ``V``, ``C`` or ``S`` (scalar/view ops on PIPE_S)
    label: str
    loops: tuple[LoopFrame, ...]
    inputs: tuple[TensorRef, ...]
    output: TensorRef | None
    tile: tuple[int, ...] | None  #: vec tile in force (effective, clipped to the shape)
    cube_tile: Mapping[str, tuple[int, ...]] | None = None
    flops: int = 0
    where: str | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class RunRecord:
    """Everything one kernel call recorded, handed to cost models and trace writers."""

    kernel: str
    platform: str
    ops: list[OpRecord] = field(default_factory=list)
    #: options per scope id: ``{"runtime": {...}, "pass": {...}, "kind": "jit"|"loop", "name": ...}``
    scopes: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
