"""Per-call simulator state: the platform, the scopes, the tile shapes in force and the recorder.

A ``Machine`` is made for each kernel call and dropped afterwards, so nothing leaks between calls
and nothing needs resetting after an error. The PyPTO API is a set of free functions
(``pypto.mul(a, b)``), so the running machine is found through a context variable that the jit
wrapper sets for the duration of the call.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, NoReturn, Sequence

import numpy as np

from .errors import PtoSimError, kernel_location
from .options import OptionScope
from .platform import DEFAULT_PLATFORM, Profile, load_platform
from .record import LoopFrame, OpRecord, RunRecord, TensorRef

__all__ = ["Machine", "current_machine", "use_platform", "default_platform", "running"]

_MACHINE: contextvars.ContextVar["Machine | None"] = contextvars.ContextVar("ptosim_machine", default=None)
_PLATFORM: contextvars.ContextVar[str | Profile | None] = contextvars.ContextVar("ptosim_platform", default=None)



@contextlib.contextmanager
def use_platform(platform: str | Profile) -> Iterator[Profile]:
    """Run the kernels called inside this block on ``platform`` (a profile name, path or Profile)."""
    profile = load_platform(platform)
    token = _PLATFORM.set(profile)
    try:
        yield profile
    finally:
        _PLATFORM.reset(token)


def default_platform() -> Profile:
    chosen = _PLATFORM.get() or os.environ.get("PTOSIM_PLATFORM") or DEFAULT_PLATFORM
    return load_platform(chosen)


@dataclass
class TileState:
    vec: tuple[int, ...] | None = None
    cube: Mapping[str, tuple[int, ...]] | None = None
    split_k: bool = False


@dataclass
class Machine:
    profile: Profile
    kernel: str
    record: RunRecord = field(init=False)
    label: str = ""
    loops: list[LoopFrame] = field(default_factory=list)
    tiles: list[TileState] = field(default_factory=lambda: [TileState()])
    operation_options: dict[str, Any] = field(default_factory=lambda: {"combine_axis": False})
    #: vec tile checks that passed in this call: (tile, kind, shapes, dtypes) -> effective tile
    vec_checks: dict[tuple, tuple[int, ...]] = field(default_factory=dict)
    #: widened copies of GM matmul operands, made once per call; key (uid, dims, form)
    widened: dict[tuple[int, tuple[int, ...], str], np.ndarray] = field(default_factory=dict)
    #: GM weights already streamed once through gemm.streamed_matmul in this call (uid, dims, form)
    streamed: set[tuple[int, tuple[int, ...], str]] = field(default_factory=set)
    #: open matmul batches (``lazy.GemmBatch``) by B operand and output form
    batches: dict[tuple, Any] = field(default_factory=dict)
    #: tensors with deferred ``assemble`` writes, by uid
    pending_targets: dict[int, Any] = field(default_factory=dict)
    #: uids shared by several Tensor objects (in-place reshape): writes to them are never deferred
    aliased: set[int] = field(default_factory=set)
    #: vector results and views of them, by uid: "result", "full-view" or "part-view" (PyPTO
    #: materialises a view of a vector result in UB, which limits reshapes of it: movement.py)
    vec_results: dict[int, str] = field(default_factory=dict)
    #: views of vector results whose last-axis offset is off the UB block (a reshape refuses them)
    unaligned_views: set[int] = field(default_factory=set)
    _uid: int = 0
    _loops: tuple[LoopFrame, ...] = ()
    _scope_ids: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.record = RunRecord(kernel=self.kernel, platform=self.profile.name)
        self.options = OptionScope()

    # -- identity and recording ------------------------------------------------------------
    def next_uid(self) -> int:
        self._uid += 1
        return self._uid

    @property
    def tile(self) -> TileState:
        return self.tiles[-1]

    def fail(self, error: type[PtoSimError], message: str, *, op: str, **context: Any) -> NoReturn:
        """Raise ``error(message)`` for ``op`` with this call's semantic label (and ``code``,
        ``constraint``, ``hint`` from ``context``); never chained to an exception being handled."""
        raise error(message, op=op, label=self.label, **context) from None

    def emit(
        self,
        op: str,
        unit: str,
        inputs: Sequence[TensorRef],
        output: TensorRef | None,
        *,
        tile: tuple[int, ...] | None = None,
        cube_tile: Mapping[str, tuple[int, ...]] | None = None,
        flops: int = 0,
        where: str | None = None,
        **attrs: Any,
    ) -> None:
        if unit == "V" and output is not None:
            self.vec_results[output.uid] = "result"
        loops = tuple(self.loops)
        if loops != self._loops:  # ops of one iteration share one tuple (the cost model groups them by it)
            self._loops = loops
        vec = self.tile.vec
        if unit == "V" and tile is not None and vec is not None and len(vec) > len(tile):
            attrs = {**attrs, "vec_tile_rank": len(vec)}  # the tile in force had more dims than the op
        self.record.ops.append(
            OpRecord(
                seq=len(self.record.ops),
                op=op,
                unit=unit,
                label=self.label,
                loops=self._loops,
                inputs=tuple(inputs),
                output=output,
                tile=tile,
                cube_tile=cube_tile,
                flops=flops,
                where=where if where is not None else kernel_location(),
                attrs=attrs,
            )
        )

    # -- deferred work (see lazy.py) ---------------------------------------------------------
    def before_write(self, uid: int) -> None:
        """Before tensor ``uid``'s storage changes: settle every open matmul batch and every
        deferred write that still has to read it, and drop its widened copies."""
        for batch in [b for b in self.batches.values() if uid in b.reads]:
            batch.settle()
        for target in [t for t in self.pending_targets.values() if t.uid != uid and t._lazy.reads(uid)]:
            target.data  # noqa: B018 - reading settles the pending writes
        self.drop_widened(uid)

    def drop_widened(self, uid: int) -> None:
        for key in [k for k in self.widened if k[0] == uid]:
            del self.widened[key]
        self.streamed = {k for k in self.streamed if k[0] != uid}

    def settle_all(self) -> None:
        """Apply every deferred write (the kernel's outputs are complete afterwards)."""
        for target in list(self.pending_targets.values()):
            target.data  # noqa: B018 - reading settles the pending writes

    # -- scopes ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def scope(self, kind: str, name: str, **attrs: Any) -> Iterator[int]:
        """A jit/loop/options scope: options and tile shapes set inside it end with it."""
        scope_id = len(self.record.scopes) + len(self._scope_ids) + 1
        self.options.push(kind, name)
        self._scope_ids.append(scope_id)
        self.tiles.append(TileState(self.tile.vec, self.tile.cube, self.tile.split_k))
        try:
            yield scope_id
        finally:
            self.tiles.pop()
            self._scope_ids.pop()
            merged = self.options.pop()
            parent = self._scope_ids[-1] if self._scope_ids else None
            self.record.scopes[scope_id] = {
                "kind": kind,
                "name": name,
                "parent": parent,
                **attrs,
                "runtime": merged.runtime,
                "pass": merged.pass_options,
            }

    @property
    def scope_id(self) -> int:
        return self._scope_ids[-1] if self._scope_ids else 0


def current_machine(op: str) -> Machine:
    """The machine running the current kernel; ops outside a ``@jit`` kernel are an error."""
    machine = _MACHINE.get()
    if machine is None:
        raise PtoSimError(
            "called outside a running kernel",
            op=op,
            hint="call ptosim ops inside a function decorated with ptosim.frontend.jit",
        )
    return machine


def active_machine() -> Machine | None:
    return _MACHINE.get()


@contextlib.contextmanager
def running(machine: Machine) -> Iterator[Machine]:
    token = _MACHINE.set(machine)
    try:
        yield machine
    finally:
        _MACHINE.reset(token)
