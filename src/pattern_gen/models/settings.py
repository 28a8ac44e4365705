"""What a Hugging Face config gives one skeleton (``ModelSettings``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ModelSettings"]


@dataclass(frozen=True)
class ModelSettings:
    """What a config gives one skeleton: dims, slot and stage parameters, and, per setting, the
    config field it came from (shown when an explicit flag overrides it)."""

    family: str
    skeleton: str
    dims: dict[str, int]
    params: dict[str, Any] = field(default_factory=dict)
    stage_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
