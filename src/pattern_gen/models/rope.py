"""Rotary position embedding as the Hugging Face model families define it: the inverse frequencies of
a rope-parameter set (default, linear, YaRN), the YaRN attention factor on cos/sin and the MLA
softmax-scale correction. Written from the YaRN paper's formulas (eqs. 17-21) and checked against
transformers' rotary embeddings in tests/models/test_rope_tables.py; FP32 throughout, as transformers
computes them, so the BF16 tables match bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["RopeSpec", "ROPE_TYPES", "yarn_mscale"]

#: the rope_type values a kernel's cos/sin tables can be built for
ROPE_TYPES = ("default", "linear", "yarn")


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    """YaRN's magnitude correction 0.1·m·ln(s) + 1 (1 when the context is not stretched)."""
    return 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0


@dataclass(frozen=True)
class RopeSpec:
    """One rope-parameter set of a model: base, rotated dims and scaling."""

    theta: float
    dim: int
    rope_type: str = "default"
    factor: float = 1.0
    original_max_position: int | None = None
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    mscale: float | None = None
    mscale_all_dim: float | None = None
    attention_factor: float | None = None
    truncate: bool = True

    def inv_freq(self) -> np.ndarray:
        """[dim/2] FP32 angle per position step of each rotated pair."""
        exponents = np.arange(0, self.dim, 2, dtype=np.float32) / np.float32(self.dim)
        pos_freqs = np.float32(self.theta) ** exponents
        base = (np.float32(1.0) / pos_freqs).astype(np.float32)
        if self.rope_type == "linear":
            return (base / np.float32(self.factor)).astype(np.float32)
        if self.rope_type != "yarn":
            return base
        stretched = (np.float32(1.0) / (np.float32(self.factor) * pos_freqs)).astype(np.float32)
        low, high = self._correction_range()
        if low == high:
            high += 0.001  # a one-point ramp would divide by zero
        ramp = np.clip((np.arange(self.dim // 2, dtype=np.float32) - np.float32(low)) / np.float32(high - low), 0, 1)
        keep = (np.float32(1.0) - ramp).astype(np.float32)  # 1: the pair keeps its original frequency
        return (stretched * (np.float32(1.0) - keep) + base * keep).astype(np.float32)

    def _correction_range(self) -> tuple[float, float]:
        """The pairs between which YaRN blends interpolation into extrapolation (eq. 17's bounds)."""
        assert self.original_max_position is not None

        def pair_of(rotations: float) -> float:
            return self.dim * math.log(self.original_max_position / (rotations * 2 * math.pi)) / (2 * math.log(self.theta))

        low, high = pair_of(self.beta_fast), pair_of(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        return max(low, 0), min(high, self.dim - 1)

    def cos_sin_scale(self) -> float:
        """The factor on cos and sin (YaRN's attention factor; 1 otherwise)."""
        if self.rope_type != "yarn":
            return 1.0
        if self.attention_factor is not None:
            return float(self.attention_factor)
        if self.mscale and self.mscale_all_dim:
            return float(yarn_mscale(self.factor, self.mscale) / yarn_mscale(self.factor, self.mscale_all_dim))
        return yarn_mscale(self.factor)

    def softmax_scale(self, qk_head_dim: int, *, mla: bool) -> float:
        """1/sqrt(qk_head_dim); MLA models (DeepSeek) also multiply by mscale(factor, mscale_all_dim)^2."""
        scale = qk_head_dim ** -0.5
        if mla and self.rope_type != "default" and self.mscale_all_dim:
            scale *= yarn_mscale(self.factor, self.mscale_all_dim) ** 2
        return scale

    def angles(self, positions: np.ndarray) -> np.ndarray:
        """[T, dim/2] FP32 angles: position times each pair's inverse frequency."""
        pos = np.asarray(positions).reshape(-1).astype(np.float32)
        return (pos[:, None] * self.inv_freq()[None, :]).astype(np.float32)
