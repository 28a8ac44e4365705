"""Data movement: ``view``, ``assemble`` and ``reshape``, with ``valid_shape`` semantics.

A view copies its block (reads past the source's or its own ``valid_shape`` are zero); assemble
writes only the source's valid region into the target, deferred while the source is a deferred
matmul result (lazy.py); reshape shares storage when ``inplace``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .dtypes import DataType, dtype_from_name
from .errors import CapacityError, DTypeError, ShapeError
from .lazy import GemmBatch, PendingWrites
from .machine import Machine, current_machine
from .operands import new_tile, require_tensor, static_shape, valid_arg, valid_of
from .symbolic import SymbolicScalar, concrete
from .tensor import Tensor

__all__ = ["view", "assemble", "reshape"]


def view(
    input: Tensor,
    shape: Sequence[int],
    offsets: Sequence[Any],
    *,
    valid_shape: Sequence[Any] | None = None,
    dtype: DataType | str | None = None,
) -> Tensor:
    """A ``shape`` block of ``input`` at ``offsets``; past ``valid_shape`` it reads as zero."""
    op = "view"
    machine = current_machine(op)
    src = require_tensor(input, op, "input")
    dims = static_shape(shape, op)
    if len(dims) != src.dim or len(offsets) != src.dim:
        machine.fail(
            ShapeError,
            f"view of a rank-{src.dim} tensor {src.name!r} needs rank-{src.dim} shape and offsets, "
            f"got shape {list(shape)}, offsets {list(offsets)}",
            code="rank-mismatch",
            op=op,
            constraint="C-DATA-02",
        )
    offs = tuple(concrete(o) for o in offsets)
    valid = valid_arg(valid_shape, dims, op, machine) or dims
    src_valid = valid_of(src)
    for i, (o, v, n) in enumerate(zip(offs, valid, src.dims)):
        if o < 0 or o + v > n:
            machine.fail(
                ShapeError,
                f"axis {i}: offset {o} + extent {v} exceeds {src.name!r} extent {n}",
                code="out-of-bounds",
                op=op,
                constraint="C-DATA-02",
                hint="pass valid_shape for a partial tail tile",
            )
    # Padding of the source (past its own valid extent) also reads as zero.
    valid = tuple(max(0, min(v, sv - o)) for v, sv, o in zip(valid, src_valid, offs))
    block = src.data[tuple(slice(o, o + v) for o, v in zip(offs, valid))]
    if valid == dims:
        data = block.copy()
    else:
        data = np.zeros(dims, dtype=src.data.dtype)
        data[tuple(slice(0, v) for v in valid)] = block
    out_dtype = src.dtype
    if dtype is not None:
        out_dtype = dtype_from_name(dtype)
        if (dims[-1] * src.dtype.nbytes) % out_dtype.nbytes:
            raise ShapeError(f"cannot reinterpret a last axis of {dims[-1]} {src.dtype.short} as {out_dtype.short}", op=op)
        data = np.ascontiguousarray(data).view(out_dtype.np_dtype)
        scale = src.dtype.nbytes / out_dtype.nbytes
        valid = valid[:-1] + (int(valid[-1] * scale),)
        dims = data.shape
    out = new_tile(machine, data, out_dtype, valid if valid != tuple(dims) else None)
    made = machine.vec_results.get(src.uid)
    if made is not None:
        whole = tuple(dims) == tuple(src.dims) and made != "part-view"
        machine.vec_results[out.uid] = "full-view" if whole else "part-view"
        if (offs[-1] * src.dtype.nbytes) % machine.profile.vec_align_bytes or src.uid in machine.unaligned_views:
            machine.unaligned_views.add(out.uid)
    machine.emit(op, "S", [src.ref()], out.ref(), offsets=offs)
    return out


def assemble(input: Any, offsets: Any, out: Tensor | None = None, parallel: bool = False) -> None:
    """Write ``input``'s valid region into ``out`` at ``offsets`` (or a list of ``(t, offsets)``)."""
    op = "assemble"
    machine = current_machine(op)
    if isinstance(input, (list, tuple)):  # assemble([(t, offs), ...], out, parallel)
        pieces, target = list(input), offsets
        if isinstance(out, bool):
            parallel = out
    else:
        pieces, target = [(input, offsets)], out
    target = require_tensor(target, op, "out")
    for piece, offs in pieces:
        src = require_tensor(piece, op, "input")
        if src.dim != target.dim or len(offs) != target.dim:
            machine.fail(
                ShapeError,
                f"source rank {src.dim}, target {target.name!r} rank {target.dim}, {len(offs)} offsets; all must match",
                code="rank-mismatch",
                op=op,
                constraint="C-DATA-02",
            )
        if src.dtype != target.dtype:
            machine.fail(
                DTypeError,
                f"source is {src.dtype.short} but {target.name!r} is {target.dtype.short}",
                op=op,
                hint="cast before assembling",
            )
        o = tuple(concrete(x) for x in offs)
        valid = valid_of(src)
        for i, (oi, v, n) in enumerate(zip(o, valid, target.dims)):
            if oi < 0 or oi + v > n:
                machine.fail(
                    ShapeError,
                    f"axis {i}: offset {oi} + valid extent {v} exceeds {target.name!r} extent {n}",
                    code="out-of-bounds",
                    op=op,
                    constraint="C-DATA-02",
                )
        _write(machine, target, tuple(slice(oi, oi + v) for oi, v in zip(o, valid)), src, tuple(slice(0, v) for v in valid))
        machine.emit(op, "S", [src.ref()], target.ref(), offsets=o, parallel=bool(parallel))


def _write(machine: Machine, target: Tensor, dst: tuple[slice, ...], src: Tensor, src_idx: tuple[slice, ...]) -> None:
    """``target[dst] = src[src_idx]``; deferred while ``src`` is a deferred matmul result (lazy.py)."""
    if isinstance(target._lazy, GemmBatch):  # the target itself is a deferred result: settle it
        target.data  # noqa: B018
    if isinstance(src._lazy, GemmBatch) and target.uid not in machine.aliased:
        pending = target._lazy
        if pending is None:
            pending = target._lazy = PendingWrites(machine)
            machine.pending_targets[target.uid] = target
        pending.writes.append((dst, src, src_idx))
        machine.drop_widened(target.uid)
        return
    storage = target.data  # settles earlier deferred writes, in order
    machine.before_write(target.uid)
    storage[dst] = src.data[src_idx]


def reshape(input: Tensor, shape: Sequence[Any], *, valid_shape: Sequence[Any] | None = None, inplace: bool = False) -> Tensor:
    op = "reshape"
    machine = current_machine(op)
    src = require_tensor(input, op, "input")
    dims = list(shape)
    dynamic = None
    if inplace and src.kind == "gm" and any(isinstance(d, SymbolicScalar) for d in dims):
        # PyPTO 0.2.0 reshapes a dynamic kernel argument in place with a symbolic extent
        # (q [T, N, D] -> [T*N, D], measured); the axis stays dynamic.
        dynamic = [isinstance(d, SymbolicScalar) for d in dims]
        dims = [concrete(d) for d in dims]
    if any(isinstance(d, int) and d == -1 for d in dims):
        if dims.count(-1) > 1:
            raise ShapeError("at most one -1 in a reshape", op=op)
        known = int(np.prod([d for d in dims if d != -1]))
        dims[dims.index(-1)] = src.size // max(known, 1)
    dims_t = static_shape(dims, op)
    if int(np.prod(dims_t)) != src.size:
        machine.fail(
            ShapeError,
            f"cannot reshape {list(src.dims)} ({src.size} elements) to {list(dims_t)}",
            code="shape-mismatch",
            op=op,
        )
    valid = valid_arg(valid_shape, dims_t, op, machine)
    if valid is None and src.valid is not None:
        if src.dims[0] == dims_t[0] and src.valid[1:] == src.dims[1:]:
            valid = (src.valid[0],) + dims_t[1:]
        else:
            machine.fail(
                ShapeError,
                f"reshape of a partially valid tensor (valid {list(src.valid)}) needs valid_shape",
                code="valid-shape",
                op=op,
                constraint="C-DATA-04",
            )
    _check_relayout(machine, src, dims_t, bool(inplace))
    _check_view_offset(machine, src, dims_t)
    data = src.data.reshape(dims_t)
    if not inplace:
        data = data.copy()  # a new tensor (PyPTO): later writes to either side must not show in the other
    if inplace:
        src_kind, name, uid = src.kind, src.name, src.uid
        machine.aliased.add(uid)  # two Tensor objects now share this storage
    else:
        src_kind, name, uid = "tile", f"t{machine._uid + 1}", machine.next_uid()
    out = Tensor.wrap(data, src.dtype, name=name, kind=src_kind, uid=uid, valid=valid, dynamic=dynamic)
    out.cache_policy = dict(src.cache_policy)
    machine.emit(op, "S", [src.ref()], out.ref(), inplace=bool(inplace))
    return out


def _check_view_offset(machine: Machine, src: Tensor, dims: tuple[int, ...]) -> None:
    """PyPTO 0.2.0 cannot reshape a view of a vector result that starts off a UB block along its
    last axis. Measured (FP32 [tile, 64] result, tile 1): views [tile, n] at column o reshaped to
    [tile, 1, n] compile for (n, o) = (1, 0), (4, 0), (8, 8), (32, 8), (64, 0) and fail for (1, 1),
    (2, 4), (16, 4), in place or not, with "Shape size mismatch ... InitRawTensorAndMemoryRequirement"
    (a topk's [tile, 1] value column at k - 1 likewise)."""
    if src.uid not in machine.unaligned_views or tuple(dims) == tuple(src.dims):
        return
    machine.fail(
        ShapeError,
        f"reshaping {src.name!r} {list(src.dims)} -> {list(dims)}: it is a view of a vector result whose last-axis offset "
        f"is not a multiple of {machine.profile.vec_align_bytes} B, which PyPTO 0.2.0 cannot reshape (its compile fails: "
        "Shape size mismatch in InitRawTensorAndMemoryRequirement)",
        code="shape-mismatch",
        op="reshape",
        constraint="C-DATA-03",
        hint="reshape the whole vector result first, then take the view of the reshaped tensor",
    )


def _check_relayout(machine: Machine, src: Tensor, dims: tuple[int, ...], inplace: bool) -> None:
    """PyPTO 0.2.0 copies a *view* of a vector result whole into UB when a reshape changes its last
    axis, so the view must fit UB; a copy (``inplace=False``) of a partial view goes through GM
    instead, and the vector result itself reshapes tile by tile. Measured on PyPTO 0.2.0 (BF16, UB
    192 KiB): in place, a view ``[32, 2048]`` compiles and ``[64, 2048]`` fails; ``[128, 1024]`` of
    a ``[128, 2048]`` result compiles as a copy and fails in place; the ``[128, 2048]`` result
    itself compiles either way."""
    made = machine.vec_results.get(src.uid)
    if made in (None, "result") or dims[-1] == src.dims[-1] or (made == "part-view" and not inplace):
        return
    nbytes = src.size * src.dtype.nbytes
    ub = machine.profile.ub
    if nbytes <= ub:
        return
    row_bytes = nbytes // max(src.dims[0], 1)
    fits = max(ub // max(row_bytes, 1), 0)
    how = "in place " if inplace else ""
    machine.fail(
        CapacityError,
        f"reshaping {how}the view {src.name!r} of a vector result {list(src.dims)} -> {list(dims)} changes its last "
        f"axis: PyPTO copies the whole {nbytes} B view into UB ({ub} B on {machine.profile.name})",
        code="ub-overflow",
        op="reshape",
        constraint="C-DATA-03",
        hint=(
            "reshape this partial view without inplace=True (a copy through GM)"
            if made == "part-view"
            else f"reshape the vector result itself, not a view of it, or use a tile of at most {fits} rows"
        ),
    )
