"""Cube ops: ``matmul`` and ``scaled_mm`` (MX).

Numerics: the products are accumulated in FP32 (INT32 for INT8 inputs, exactly) and rounded once
to ``out_dtype``; the accumulation order is free. Speed: BF16/FP16 operands
widen exactly to FP32 and go through BLAS sgemm; INT8 operands go through an FP64 GEMM, exact
while 127^2 * K < 2^53. A 2-D matmul is deferred and batched with the other matmuls on the same
B operand, so a loop's iterations share one GEMM (lazy.py); a large GM weight is streamed through
a cache-sized FP32 scratch on its first use (gemm.py) and widened once per call if used again.

MX (``scaled_mm``, Ascend 950): out = (A * sa) @ (B * sb) where every run of 32 consecutive
elements along K shares one E8M0 scale (OCP MX v1.0, block 32). Scales use PyPTO's layout:
``scale_a [M, ceil(K/64), 2]`` and ``scale_b [ceil(K/64), N, 2]`` (``[N, ceil(K/64), 2]`` with
``scale_b_trans``), i.e. the K/32 block scales paired two by two. The scaled operands are exact in
FP32 (an FP8 value times a power of two), so one FP32 GEMM gives the FP32-accumulated product.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np

from .cast import CastMode, cast_array, to_float32
from .dtypes import DataType, dtype_from_name
from .errors import DTypeError, PlatformError, ShapeError
from .gemm import streamable, streamed_matmul
from .lazy import GemmBatch
from .machine import Machine, current_machine
from .operands import new_tile, require_tensor, valid_of
from .tensor import Tensor
from .tiles import check_cube_op

__all__ = ["matmul", "scaled_mm"]

_INT8, _INT32, _FP32 = DataType.DT_INT8, DataType.DT_INT32, DataType.DT_FP32
_EXTEND_KEYS = ("scale", "scale_tensor", "bias_tensor", "relu_type", "trans_mode")


def _operand(machine: Machine, t: Tensor, trans: bool, exact64: bool) -> np.ndarray:
    """Widened operand (FP32, or FP64 for exact INT8 products), transposed if asked.

    A GM operand (a weight) is widened once per kernel call; writes to it drop the copy."""
    key = (t.uid, t.dims, "64" if exact64 else "32")
    wide = machine.widened.get(key) if t.kind == "gm" else None
    if wide is None:
        wide = t.data.astype(np.float64) if exact64 else to_float32(t.data, t.dtype)
        if t.kind == "gm":
            machine.widened[key] = wide
    return np.swapaxes(wide, -1, -2) if trans else wide


def _product(machine: Machine, b: Tensor, trans: bool, exact64: bool) -> Callable[[np.ndarray], np.ndarray]:
    """``lhs -> lhs @ B`` for a batch. A large BF16/FP16 weight is streamed through a small FP32
    scratch (gemm.py) the first time it is used in a call, and widened whole (and kept) only if it
    is used again, so a weight used once is never copied to FP32 in full."""
    key = (b.uid, b.dims, "32")
    if b.kind != "gm" or exact64 or key in machine.widened or not streamable(b.dtype, b.size):
        rhs = _operand(machine, b, trans, exact64)
        return lambda lhs: np.matmul(lhs, rhs)

    def product(lhs: np.ndarray) -> np.ndarray:
        if key in machine.streamed:  # second use in this call: widen once, reuse from now on
            return np.matmul(lhs, _operand(machine, b, trans, False))
        machine.streamed.add(key)
        return streamed_matmul(lhs, b.data, b.dtype, trans)

    return product


def _round_out(acc: np.ndarray, out_dtype: DataType) -> np.ndarray:
    """The accumulator rounded once to ``out_dtype`` (INT32 accumulators are exact)."""
    if out_dtype == _INT32:
        return acc.astype(np.int64).astype(np.int32)
    if out_dtype == _FP32:
        return acc.astype(np.float32, copy=False)
    return cast_array(acc.astype(np.float32, copy=False), _FP32, out_dtype, CastMode.CAST_RINT)


def _round_biased(acc: np.ndarray, bias: np.ndarray, out_dtype: DataType) -> np.ndarray:
    return _round_out(acc + bias, out_dtype)


def _check_bias(machine: Machine, op: str, a: Tensor, b: Tensor, bias: Tensor, n: int) -> None:
    """PyPTO 0.2.0's bias rules (CheckBiasParam): a 2-D [1, N] tensor of a dtype the profile lists
    for the operand pair (A2/A3: FP32 with BF16 inputs, FC3001)."""
    if bias.dims != (1, n):
        machine.fail(ShapeError, f"bias_tensor must be [1, {n}] (2-D, N of mat2); got {list(bias.dims)}",
                     code="shape-mismatch", op=op, hint="reshape the bias to [1, N] once, outside the loop")
    allowed = machine.profile.matmul_bias_dtypes(a.dtype, b.dtype)
    if bias.dtype not in allowed:
        legal = "/".join(sorted(d.short for d in allowed)) or "none"
        machine.fail(DTypeError, f"a {a.dtype.short} x {b.dtype.short} matmul takes a {legal} bias_tensor on "
                     f"{machine.profile.name}; got {bias.dtype.short}", code="matmul-dtype", op=op,
                     hint="cast the bias once, outside the loop")


def _shapes(op: str, machine: Machine, a: Tensor, b: Tensor, a_trans: bool, b_trans: bool) -> tuple[int, int, int, int]:
    if a.dim != b.dim or a.dim not in (2, 3, 4):
        machine.fail(
            ShapeError,
            f"inputs must both be 2-D, 3-D or 4-D with the same rank; got {list(a.dims)} and {list(b.dims)}",
            code="rank-mismatch",
            op=op,
        )
    m, ka = (a.dims[-1], a.dims[-2]) if a_trans else (a.dims[-2], a.dims[-1])
    kb, n = (b.dims[-1], b.dims[-2]) if b_trans else (b.dims[-2], b.dims[-1])
    if ka != kb:
        machine.fail(
            ShapeError,
            f"inner dims differ: A{'^T' if a_trans else ''} is [{m}, {ka}], B{'^T' if b_trans else ''} is [{kb}, {n}]",
            code="shape-mismatch",
            op=op,
            hint="check b_trans / the weight layout",
        )
    return m, ka, n, a.dim


def _out_valid(a: Tensor, b: Tensor, a_trans: bool, b_trans: bool, out_shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """Rows valid in A and columns valid in B stay valid in the product."""
    if a.valid is None and b.valid is None:
        return None
    rows = valid_of(a)[-1 if a_trans else -2]
    cols = valid_of(b)[-2 if b_trans else -1]
    valid = out_shape[:-2] + (rows, cols)
    return None if valid == out_shape else valid


def _widen_param(t: Tensor) -> np.ndarray:
    return to_float32(t.data, t.dtype)


def matmul(
    input: Tensor,
    mat2: Tensor,
    out_dtype: DataType | str,
    *,
    a_trans: bool = False,
    b_trans: bool = False,
    c_matrix_nz: bool = False,
    extend_params: Mapping[str, Any] | None = None,
) -> Tensor:
    op = "matmul"
    machine = current_machine(op)
    a = require_tensor(input, op, "input")
    b = require_tensor(mat2, op, "mat2")
    out_dt = dtype_from_name(out_dtype)
    if c_matrix_nz:
        raise ShapeError("c_matrix_nz must be False: the output is always ND", code="argument", op=op)
    extend = dict(extend_params or {})
    unknown = sorted(set(extend) - set(_EXTEND_KEYS))
    if unknown:
        raise ShapeError(f"unknown extend_params {unknown}; valid: {', '.join(_EXTEND_KEYS)}", code="argument", op=op)
    profile = machine.profile
    outs = profile.matmul_outputs(a.dtype, b.dtype)
    dequant = "scale" in extend or "scale_tensor" in extend
    if dequant and a.dtype == _INT8 and b.dtype == _INT8:
        outs = outs | {DataType.DT_FP16, DataType.DT_BF16}
    if out_dt not in outs:
        pairs = "; ".join(
            f"{pa.short} x {pb.short} -> {'/'.join(sorted(o.short for o in po))}" for pa, pb, po in profile.matmul_pairs
        )
        machine.fail(
            DTypeError,
            f"{a.dtype.short} x {b.dtype.short} -> {out_dt.short} is not a legal operand pairing on {profile.name} ({pairs})",
            code="matmul-dtype",
            op=op,
            constraint="C-API-02",
            hint="cast the operands explicitly before the matmul",
        )
    m, k, n, rank = _shapes(op, machine, a, b, a_trans, b_trans)
    integer = a.dtype == _INT8
    acc_dtype = _INT32 if integer else _FP32
    cube = check_cube_op(machine, op, a.dtype, b.dtype, acc_dtype)
    if machine.tile.split_k and (out_dt not in (_FP32, _INT32) or extend):
        machine.fail(
            ShapeError, "enable_split_k needs an FP32/INT32 output and no extend_params", code="argument", op=op
        )
    bias = extend.get("bias_tensor")
    if extend and rank != 2:
        machine.fail(ShapeError, "extend_params is not supported for batched (3-D/4-D) matmuls", code="argument", op=op)
    if bias is not None:
        _check_bias(machine, op, a, b, require_tensor(bias, op, "extend_params['bias_tensor']"), n)
    lhs = _operand(machine, a, a_trans, integer)
    if rank == 2 and set(extend) <= {"bias_tensor"}:
        # Deferred: joins the open batch of this B operand (and bias), one GEMM for all (lazy.py).
        out_shape = (m, n)
        out = new_tile(machine, None, out_dt, _out_valid(a, b, a_trans, b_trans, out_shape), dims=out_shape)
        key = ("matmul", b.uid, b.dims, b_trans, integer, out_dt, None if bias is None else bias.uid)
        batch = machine.batches.get(key)
        if batch is None:
            product = _product(machine, b, b_trans, integer)
            finish: Callable[[np.ndarray], np.ndarray] = functools.partial(_round_out, out_dtype=out_dt)
            if bias is not None:  # C = A @ B + bias in the accumulator, then one rounding
                widened = _widen_param(bias)
                finish = functools.partial(_round_biased, bias=widened, out_dtype=out_dt)
            batch = GemmBatch(machine, key, product, finish)
            machine.batches[key] = batch
        batch.add(lhs, out, (a.uid, b.uid) + (() if bias is None else (bias.uid,)))
    else:
        acc = np.matmul(lhs, _operand(machine, b, b_trans, integer))
        if dequant:
            acc = acc.astype(np.float64) if integer else acc
            scale = extend["scale"] if "scale" in extend else _widen_param(extend["scale_tensor"])
            acc = acc * scale
        if "bias_tensor" in extend:
            acc = acc + _widen_param(extend["bias_tensor"])
        if extend.get("relu_type") not in (None, "NO_RELU", 0):
            acc = np.maximum(acc, 0)
        out_shape = tuple(acc.shape)
        out = new_tile(machine, _round_out(acc, out_dt), out_dt, _out_valid(a, b, a_trans, b_trans, out_shape))
    batch = int(np.prod(out_shape[:-2])) if rank > 2 else 1
    machine.emit(
        op,
        "C",
        [a.ref(), b.ref()] + ([] if bias is None else [bias.ref()]),  # the bias's producer precedes the task
        out.ref(),
        cube_tile=dict(cube),
        flops=2 * batch * m * n * k,
        m=m,
        k=k,
        n=n,
        out_dtype=out_dt.short,
        a_trans=a_trans,
        b_trans=b_trans,
        **({"split_k": True} if machine.tile.split_k else {}),  # only then: every other record stays as it was
    )
    return out


def _expand_scale(scale: Tensor, rows: int, k: int, trans_layout: bool, name: str, machine: Machine) -> np.ndarray:
    """[rows, ceil(K/64), 2] (or [ceil(K/64), rows, 2]) E8M0 scales -> FP32 [rows, K] multipliers."""
    groups = -(-k // 64)
    expect = (groups, rows, 2) if trans_layout else (rows, groups, 2)
    if scale.dims != expect:
        machine.fail(
            ShapeError,
            f"{name} has shape {list(scale.dims)}; expected {list(expect)} (K={k}, blocks of 32 paired)",
            code="shape-mismatch",
            op="scaled_mm",
        )
    if scale.dtype != DataType.DT_FP8E8M0:
        machine.fail(DTypeError, f"{name} must be FP8E8M0, got {scale.dtype.short}", op="scaled_mm")
    s = to_float32(scale.data, scale.dtype)
    if trans_layout:
        s = np.swapaxes(s, 0, 1)
    s = s.reshape(rows, groups * 2)[:, : -(-k // 32)]
    return np.repeat(s, 32, axis=1)[:, :k]


def scaled_mm(
    mat_a: Tensor,
    mat_b: Tensor,
    out_dtype: DataType | str,
    scale_a: Tensor,
    scale_b: Tensor,
    *,
    a_trans: bool = False,
    b_trans: bool = False,
    scale_a_trans: bool = False,
    scale_b_trans: bool = False,
    c_matrix_nz: bool = False,
    extend_params: Mapping[str, Any] | None = None,
) -> Tensor:
    op = "scaled_mm"
    machine = current_machine(op)
    profile = machine.profile
    if not profile.has_feature("scaled_mm"):
        machine.fail(
            PlatformError,
            f"scaled_mm (MX matmul) is not available on {profile.name}",
            op=op,
            hint="use an Ascend 950 profile (ascend950) or a BF16/INT8 matmul",
        )
    a = require_tensor(mat_a, op, "mat_a")
    b = require_tensor(mat_b, op, "mat_b")
    out_dt = dtype_from_name(out_dtype)
    if out_dt not in profile.matmul_outputs(a.dtype, b.dtype, scaled=True):
        machine.fail(
            DTypeError,
            f"{a.dtype.short} x {b.dtype.short} -> {out_dt.short} is not a legal scaled_mm pairing on {profile.name}",
            code="matmul-dtype",
            op=op,
            constraint="C-API-02",
        )
    if a.dim != 2 or b.dim != 2:
        machine.fail(ShapeError, "scaled_mm takes 2-D operands", code="rank-mismatch", op=op)
    m, k, n, _ = _shapes(op, machine, a, b, a_trans, b_trans)
    cube = check_cube_op(machine, op, a.dtype, b.dtype, _FP32, k_align=profile.scaled_mm_k_align)
    sa = _expand_scale(require_tensor(scale_a, op, "scale_a"), m, k, scale_a_trans, "scale_a", machine)
    sb = _expand_scale(require_tensor(scale_b, op, "scale_b"), n, k, not scale_b_trans, "scale_b", machine)
    lhs = _operand(machine, a, a_trans, False) * sa
    rhs_nk = _operand(machine, b, not b_trans, False) * sb  # [N, K]
    acc = lhs @ rhs_nk.T
    out_shape = tuple(acc.shape)
    out = new_tile(machine, _round_out(acc, out_dt), out_dt, _out_valid(a, b, a_trans, b_trans, out_shape))
    machine.emit(
        op,
        "C",
        [a.ref(), b.ref(), scale_a.ref(), scale_b.ref()],
        out.ref(),
        cube_tile=dict(cube),
        flops=2 * m * n * k,
        m=m,
        k=k,
        n=n,
        out_dtype=out_dt.short,
    )
    return out
