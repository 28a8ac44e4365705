"""Per-tile-op latency: PyPTO 0.2.0's level-1 fit, with its level-0 formula as the fallback.

PyPTO (``PipeSimulatorFast::PostSimulate``) prices a tile op from the shapes of all its operands:
``size`` = bytes of the first input's dtype x the smallest product of the last two dims over all
operands, ``cnt`` = the smallest product of the leading dims; then

    cycles = cnt * (int((a * size * r * 1e-6 + b) * freq_trans) + 1)  (+1400 COPY_IN, +300 COPY_OUT)

with r = 1 for FP32 DIV/EXP/LN/SQRT and INT32 MUL/MULS, else 2. The products are done in single
precision there (``a`` is a float), which this module reproduces so the cycle counts match exactly.
Ops without an (a, b) pair use the level-0 formula ``10 + repeats * 2 - 1`` with 256-byte repeats.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Sequence

import numpy as np

from .params import CostParams

__all__ = ["tileop_cycles", "copy_in_cycles", "shape_size"]


def shape_size(shapes: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(smallest last-two-dims product, smallest leading-dims product) over the operand shapes."""
    size = cnt = None
    for shape in shapes:
        dims = [int(d) if int(d) > 0 else 256 for d in shape] or [1]
        last = math.prod(dims[-2:])
        lead = math.prod(dims[:-2]) if len(dims) > 2 else 1
        size = last if size is None else min(size, last)
        cnt = lead if cnt is None else min(cnt, lead)
    return int(size or 1), int(cnt or 1)


def tileop_cycles(opcode: str, shapes: Sequence[Sequence[int]], dtype: str, dtype_bytes: int, params: CostParams) -> int:
    """Cycles of one tile op. ``dtype`` is the first input's dtype (the output's when none)."""
    return _by_shapes(opcode, tuple(tuple(s) for s in shapes), dtype, int(dtype_bytes), params)


def copy_in_cycles(full: tuple[int, ...], block: tuple[int, ...], dtype: str, dtype_bytes: int, params: CostParams) -> int:
    """``tileop_cycles("COPY_IN", [full, block], ...)`` for tuples (the cube lowering's hot path)."""
    return _by_shapes("COPY_IN", (full, block), dtype, dtype_bytes, params)


@lru_cache(maxsize=16384)
def _by_shapes(opcode: str, shapes: tuple[tuple[int, ...], ...], dtype: str, dtype_bytes: int, params: CostParams) -> int:
    size, cnt = shape_size(shapes)
    return _cycles(opcode, size, cnt, dtype.upper(), dtype_bytes, params)


@lru_cache(maxsize=8192)
def _cycles(opcode: str, size: int, cnt: int, dtype: str, dtype_bytes: int, params: CostParams) -> int:
    lat = params.cost.latency
    pair = lat.level1.get(opcode)
    nbytes = size * dtype_bytes
    if pair is None:
        total = nbytes * cnt
        repeats = int((total - lat.level0.bytes_per_repeat) / lat.level0.bytes_per_repeat) + 1
        return int(lat.level0.default_cycles + repeats * lat.level0.cycles_per_repeat - 1)
    ratio = 1 if opcode in lat.ratio_one.get(dtype, ()) else 2
    a, b = np.float32(pair[0]), np.float32(pair[1])
    prod = float(a * np.float32(nbytes) * np.float32(ratio))  # single precision, as in the C++ model
    cycles = cnt * (int((prod * 1e-6 + float(b)) * lat.freq_trans) + 1)
    if opcode == "COPY_IN":
        cycles += lat.gm_read_cycles
    elif opcode == "COPY_OUT":
        cycles += lat.gm_write_cycles
    return int(cycles)
