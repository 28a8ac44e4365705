"""The manifest (``patterns/manifest.yaml``): the instances CI generates, and the requests that
must be refused. Entries use the CLI's vocabulary: ``atoms`` ("AT-10" or "AT-03,AT-09"),
``params`` (``SLOT.param`` keys for fixed stages), ``dims``, ``platform``, ``options``, and
``tiles`` (``--tile`` overrides by stage label), ``model`` (a Hugging Face config.json, relative to
the manifest, as ``--model``) and ``targets`` (default ``[ptosim]``; one
instance folder per target).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ..cards.loader import problems_from_validation
from ..cards.yamlsrc import load_located_file
from ..vocab.errors import PatternGenError, Problem
from ..vocab.targets import DEFAULT_TARGET
from .kernel_plan import Request
from .model_request import apply_model

__all__ = ["Manifest", "ManifestEntry", "RefusedEntry", "load_manifest", "to_request", "to_requests", "split_params"]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    skeleton: str
    atoms: str | list[str]
    params: dict[str, Any] = Field(default_factory=dict)
    dims: dict[str, int] = Field(default_factory=dict)
    platform: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    #: ``--tile`` overrides by stage label (what ``tune --apply`` writes)
    tiles: dict[str, list[int] | dict[str, list[int]]] = Field(default_factory=dict)
    name: str | None = None
    #: a Hugging Face config.json (relative to the manifest) that fills dims and parameters
    model: str | None = None
    why: str = ""


class ManifestEntry(_Entry):
    #: the code-generation targets to render this instance for (one folder each)
    targets: list[str] = Field(default_factory=lambda: [DEFAULT_TARGET], min_length=1)


class RefusedEntry(_Entry):
    expect: str  #: the error code the refusal must carry


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    instances: list[ManifestEntry]
    refused: list[RefusedEntry] = Field(default_factory=list)
    _located: Any = PrivateAttr(default=None)

    def where(self, group: str, index: int) -> dict[str, Any]:
        """``file``/``line``/``col`` of an entry, so a problem with it points into the manifest."""
        if self._located is None:
            return {}
        line, col = self._located.where((group, index))
        return {"file": self._located.file, "line": line, "col": col}

    @property
    def path(self) -> str:
        """The manifest file this was read from ("" when built in memory)."""
        return str(self._located.file) if self._located is not None else ""


def split_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Bare parameters (the slot) and ``STAGE.param`` ones (fixed stages)."""
    bare: dict[str, Any] = {}
    staged: dict[str, dict[str, Any]] = {}
    for key, value in params.items():
        if "." in key:
            stage, _, name = key.partition(".")
            staged.setdefault(stage, {})[name] = value
        else:
            bare[key] = value
    return bare, staged


def to_requests(entry: ManifestEntry) -> list[Request]:
    """One request per target of an instance entry."""
    return [to_request(entry, target) for target in entry.targets]


def to_request(entry: _Entry, target: str | None = None) -> Request:
    """The request an entry stands for (``atoms`` split at commas, ``STAGE.param`` keys to stages)
    for ``target`` (None: the default target)."""
    atoms = entry.atoms.split(",") if isinstance(entry.atoms, str) else list(entry.atoms)
    bare, staged = split_params(entry.params)
    req = Request(
        skeleton=entry.skeleton,
        atoms=tuple(a.strip() for a in atoms),
        params=bare,
        stage_params=staged,
        dims=dict(entry.dims),
        platform=entry.platform,
        options=dict(entry.options),
        tiles={k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in entry.tiles.items()},
        name=entry.name if target in (None, DEFAULT_TARGET) or entry.name is None else f"{entry.name}-{target}",
        target=None if target in (None, DEFAULT_TARGET) else target,
    )
    return req if entry.model is None else apply_model(req, Path(entry.model))[0]


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; PatternGenError with file:line:col for each problem."""
    if not path.is_file():
        raise PatternGenError(Problem("manifest", f"no manifest at {path}", str(path)))
    located = load_located_file(path)
    for group in ("instances", "refused"):  # a model path is relative to the manifest
        for item in (located.data.get(group) or []) if isinstance(located.data, dict) else []:
            if isinstance(item, dict) and isinstance(item.get("model"), str):
                item["model"] = str(path.parent / item["model"])
    try:
        manifest = Manifest.model_validate(located.data)
    except ValidationError as exc:
        problems = [Problem("manifest", p.message, p.file, p.line, p.col) for p in problems_from_validation(exc, located, "manifest")]
        raise PatternGenError(problems) from None
    manifest._located = located
    return manifest
