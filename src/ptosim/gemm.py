"""FP32 GEMMs on 16-bit float weights without a full FP32 copy of the weight.

BLAS has no BF16 GEMM, so a BF16 weight must be widened to FP32 first. Widening a large weight
at once writes (and page-faults) twice its size in fresh memory and then the GEMM reads it back.
``streamed_matmul`` widens one cache-sized block of the weight at a time into a reused scratch
buffer and multiplies it at once, so the weight is read once, at half the bytes of an FP32 copy.
Each output column still comes from one FP32 dot product over the whole K axis, so results are
those of one GEMM (up to the accumulation order, which is free).
"""

from __future__ import annotations

import numpy as np

from .dtypes import DataType

__all__ = ["streamable", "streamed_matmul", "STREAM_MIN_ELEMENTS"]

#: weights smaller than this are widened whole (the block loop would only add call overhead)
STREAM_MIN_ELEMENTS = 1 << 20
_SCRATCH_BYTES = 4 << 20  # a widened block of at least a few MiB, still cache-sized
_MAX_BLOCKS = 8  # few, large BLAS calls: small multithreaded GEMMs stall on thread hand-offs


def streamable(dtype: DataType, size: int) -> bool:
    """True for weights worth streaming: BF16/FP16 (exact in FP32) and large."""
    return dtype in (DataType.DT_BF16, DataType.DT_FP16) and size >= STREAM_MIN_ELEMENTS


def _widen_into(block: np.ndarray, dtype: DataType, out: np.ndarray) -> None:
    """``out[...] = block`` widened exactly to FP32 (``out`` is a float32 array of block's shape)."""
    if dtype == DataType.DT_BF16:  # bf16 is the top half of an fp32
        np.left_shift(block.view(np.uint16), 16, out=out.view(np.uint32), dtype=np.uint32)
    else:
        np.copyto(out, block, casting="safe")


def streamed_matmul(lhs: np.ndarray, storage: np.ndarray, dtype: DataType, trans: bool) -> np.ndarray:
    """``lhs [M, K] @ B`` in FP32 where ``B`` is ``storage`` ([K, N], or [N, K] when ``trans``)."""
    k = lhs.shape[1]
    n = storage.shape[0] if trans else storage.shape[1]
    by_bytes = (_SCRATCH_BYTES // (4 * k)) // 64 * 64
    per_block = -(-n // _MAX_BLOCKS)
    by_count = -(-per_block // 64) * 64
    step = min(n, max(64, by_bytes, by_count))
    out = np.empty((lhs.shape[0], n), np.float32)
    scratch = np.empty((step, k) if trans else (k, step), np.float32)
    for j in range(0, n, step):
        e = min(step, n - j)
        if trans:  # rows j..j+e of the [N, K] weight, i.e. columns of B
            blk = scratch[:e]
            _widen_into(storage[j : j + e], dtype, blk)
            np.matmul(lhs, blk.T, out=out[:, j : j + e])
        else:
            blk = scratch[:, :e]
            _widen_into(storage[:, j : j + e], dtype, blk)
            np.matmul(lhs, blk, out=out[:, j : j + e])
    return out
