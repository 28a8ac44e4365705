"""The token-count distribution a kernel is tuned for: ``--T 1,16,128`` (equal weights) or
``--T-dist FILE`` — a YAML mapping ``{T: weight}`` (e.g. the share of calls per batch size) or a
YAML list of observed token counts (a histogram: each occurrence weighs one)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

from ..cards.yamlsrc import load_located_file
from ..vocab.errors import PatternGenError, Problem

__all__ = ["parse_T_list", "load_T_dist", "DEFAULT_TS", "MAX_TUNE_T", "MAX_TS"]

#: decode, a small batch, a prefill chunk, a long prefill
DEFAULT_TS = (1, 16, 128, 1024)
#: the largest T the tuner estimates (each T is a full kernel run per configuration)
MAX_TUNE_T = 1 << 13
#: how many distinct Ts a sweep takes
MAX_TS = 16


def _check_T(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TUNE_T:
        raise PatternGenError(Problem("bad-option", f"{where}: a token count is an integer from 1 to {MAX_TUNE_T}; got {str(value)[:24]!r}"))
    return value


def _checked(weights: dict[int, float], where: str) -> dict[int, float]:
    if not weights:
        raise PatternGenError(Problem("bad-option", f"{where}: no token counts; give at least one, e.g. --T 1,16,128"))
    if len(weights) > MAX_TS:
        raise PatternGenError(Problem("bad-option", f"{where}: {len(weights)} distinct token counts (> {MAX_TS}); each is a kernel run per configuration — bucket them"))
    return dict(sorted(weights.items()))


def parse_T_list(text: str) -> dict[int, float]:
    """``"1,16,128"`` -> ``{1: 1.0, 16: 1.0, 128: 1.0}``."""
    weights: dict[int, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            value = int(part)
        except ValueError:
            raise PatternGenError(Problem("bad-option", f"--T {text!r}: {part!r} is not a whole number; e.g. --T 1,16,128")) from None
        weights[_check_T(value, f"--T {text}")] = 1.0
    return _checked(weights, f"--T {text!r}")


def load_T_dist(path: Path) -> dict[int, float]:
    """The distribution in a YAML file (mapping T -> weight, or a list of observed Ts)."""
    if not path.is_file():
        what = "not a regular file (a folder, FIFO or device?)" if path.exists() else "no such file"
        raise PatternGenError(Problem("bad-path", f"--T-dist {path}: {what}"))
    located = load_located_file(path)
    data = located.data
    where = str(path)
    if isinstance(data, list):
        counts = Counter(_check_T(v, f"{where}: item {i + 1}") for i, v in enumerate(data))
        return _checked({T: float(n) for T, n in counts.items()}, where)
    if not isinstance(data, dict):
        raise PatternGenError(Problem("bad-option", f"{where}: expected a mapping {{T: weight}} or a list of token counts, got {type(data).__name__}", where))
    weights: dict[int, float] = {}
    for key, value in data.items():
        line, col = located.where((key,))
        T = _check_T(key, f"{where}:{line}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise PatternGenError(Problem("bad-option", f"weight of T={T} must be a number >= 0, got {str(value)[:24]!r}", where, line, col))
        if value > 0:
            weights[T] = float(value)
    return _checked(weights, where)
