"""A request filled from a Hugging Face config (``--model``, a manifest entry's ``model:``): the
config gives dims and parameters, an explicit flag wins over it and says so."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..models import model_settings
from ..vocab.text import yaml_word
from .kernel_plan import Request

__all__ = ["apply_model"]


def _same(given: object, config: object) -> bool:
    """A flag's text ("1e-5", "512") against the config's value (1e-05, 512)."""
    try:
        return float(str(given)) == float(str(config))
    except ValueError:
        return str(given).strip().lower() == str(config).strip().lower()


def apply_model(req: Request, path: Path) -> tuple[Request, list[str]]:
    """``req`` with the config's settings under its own; returns the lines that say where each
    setting came from and which explicit ones override the config."""
    got = model_settings(path, req.skeleton)
    notes = [f"{path}: a {got.family} config"]
    dims = dict(got.dims)
    for name, value in req.dims.items():
        if name in dims and not _same(value, dims[name]):
            notes.append(f"--dim {name}={value} overrides the config ({got.sources.get(name, name)} gives {dims[name]})")
        dims[name] = value
    params = dict(got.params)
    for name, value in req.params.items():
        if name in params and not _same(value, params[name]):
            notes.append(f"--param {name}={yaml_word(value)} overrides the config ({got.sources.get(name, name)} gives {yaml_word(params[name])})")
        params[name] = value
    stages = {stage: dict(ps) for stage, ps in got.stage_params.items()}
    for stage, ps in req.stage_params.items():
        for name, value in ps.items():
            given = stages.get(stage, {}).get(name)
            if given is not None and not _same(value, given):
                notes.append(f"--param {stage}.{name}={yaml_word(value)} overrides the config ({got.sources.get(f'{stage}.{name}', name)} gives {yaml_word(given)})")
            stages.setdefault(stage, {})[name] = value
    taken = ", ".join(f"{k}={v}" for k, v in got.dims.items())
    notes.insert(1, f"dims from the config: {taken}")
    notes += list(got.notes)
    return replace(req, dims=dims, params=params, stage_params=stages), notes
