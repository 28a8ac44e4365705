"""Hugging Face model configs: which families pattern-gen knows, what a ``config.json`` gives a
skeleton (dims, parameters), and the rope those models use. Reads files only; no network."""

from __future__ import annotations

from pathlib import Path

from .config import HFConfig, read_hf_config
from .families import FAMILIES, Family, ModelSettings, family_of, rope_of
from .rope import ROPE_TYPES, RopeSpec, yarn_mscale

__all__ = [
    "FAMILIES",
    "Family",
    "HFConfig",
    "ModelSettings",
    "ROPE_TYPES",
    "RopeSpec",
    "family_of",
    "model_settings",
    "read_hf_config",
    "rope_of",
    "yarn_mscale",
]


def model_settings(path: Path, skeleton: str) -> ModelSettings:
    """What the config at ``path`` gives ``skeleton``; a family without a mapping for it is refused
    naming the skeletons it has."""
    cfg = read_hf_config(path)
    family = family_of(cfg)
    build = family.skeletons.get(skeleton)
    if build is None:
        raise cfg.problem("model_type", f"{family.name} configs fill {', '.join(family.skeletons)}, not {skeleton}; drop --model or pick one of those")
    return build(cfg)
