"""Reading an instance folder's ``instance.json``: the fields run, tune and explain rely on, checked
(a hand-corrupted or hand-edited file is one problem naming the field, never a traceback later),
and the sibling files checked to be the ones written with it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..cards.yamlsrc import read_source
from ..vocab.errors import PatternGenError, Problem
from ..vocab.paths import read_text_file
from .writer import content_ok, recorded_digest

__all__ = ["RequestMeta", "InstanceMeta", "read_instance", "REGENERATE"]

#: the advice for an instance folder that cannot be trusted
REGENERATE = "fix the file or regenerate the instance (pattern-gen new ... --force, or pattern-gen generate)"


class RequestMeta(BaseModel):
    """``instance.json``'s ``request``: what ``tune INSTANCE`` and the PyPTO twin estimate rebuild."""

    model_config = ConfigDict(extra="forbid")

    skeleton: str = Field(min_length=1, max_length=64)
    atoms: list[str] = Field(default_factory=list, max_length=8)
    params: dict[str, Any] = Field(default_factory=dict)
    stage_params: dict[str, dict[str, Any]] = Field(default_factory=dict)
    dims: dict[str, int] = Field(default_factory=dict)
    platform: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    name: str | None = None
    target: str | None = None
    tiles: dict[str, Any] = Field(default_factory=dict)



_Finite = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Share = Annotated[float, Field(ge=0, le=1)]
_Tolerance3 = tuple[_Finite, _Finite, _Share]
_Tolerance4 = tuple[_Finite, _Finite, _Share, _Share]
_Tolerance5 = tuple[_Finite, _Finite, _Share, _Share, Annotated[float, Field(ge=0, le=1024)]]

class InstanceMeta(BaseModel):
    """The fields of ``instance.json`` that running an instance reads (the rest is informative)."""

    model_config = ConfigDict(extra="allow")

    request: RequestMeta | None = None

    name: str = Field(min_length=1, max_length=255)
    #: the unroll_list (an instance written before lists holds one factor: PyPTO ran it with 1 appended)
    unroll: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1], min_length=1)
    test_T: list[Annotated[int, Field(ge=1, le=1 << 20)]] = Field(default_factory=lambda: [1], min_length=1)
    #: output -> (atol, rtol, ratio[, differ[, ties]]); instances written before the differ rule
    #: have three, ties only where the card gives one (ptosim.testing.judge)
    tolerances: dict[str, Union[_Tolerance3, _Tolerance4, _Tolerance5]] = Field(default_factory=dict)
    loop: dict[str, Any] = Field(default_factory=dict)
    target: str | None = None

    @field_validator("unroll", mode="before")
    @classmethod
    def _one_factor(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return [value, 1] if value != 1 else [1]
        return value


def read_instance(folder: Path) -> dict[str, Any]:
    """The ``instance.json`` of an instance folder, checked (a hand-corrupted file is one problem
    naming the field, never a traceback later)."""
    meta = folder / "instance.json"
    if not meta.is_file():
        raise PatternGenError(Problem("instance", f"{folder} is not an instance folder (no instance.json)", str(folder)))
    text = read_source(meta)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise PatternGenError(Problem("instance", f"instance.json is not valid JSON: {str(exc)[:120]}", str(meta))) from None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise PatternGenError(Problem("instance", f"instance.json is not a pattern-gen plan (no 'name'); {REGENERATE}", str(meta)))
    if content_ok("instance.json", text) is False:  # the plan drives run, tune and explain: never a hand-edited one
        raise PatternGenError(Problem("instance", f"instance.json was edited by hand (its content hash does not match); {REGENERATE}", str(meta)))
    _check_siblings(folder, data.get("files"))
    try:
        checked = InstanceMeta.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem("instance", f"instance.json: {'.'.join(map(str, e['loc'])) or 'the file'}: {e['msg']} (got {str(e.get('input'))[:60]}); {REGENERATE}", str(meta))
            for e in exc.errors()[:5]
        ]
        raise PatternGenError(problems) from None
    data.update(checked.model_dump(include={"unroll", "test_T", "tolerances", "loop", "request"}))
    return data


def _check_siblings(folder: Path, files: Any) -> None:
    """Each generated file must be the one written with this instance.json: a file generated for
    another plan (an interrupted ``new --force``, a copy from another instance) is refused; a
    hand-edited one (its own hash broken) is the user's experiment and runs."""
    if not isinstance(files, dict):
        return  # written before instance.json listed its files
    for name, digest in files.items():
        path = folder / str(name)
        if not isinstance(digest, str) or not path.is_file():
            continue
        try:
            text = read_text_file(path, errors="replace")
        except OSError:
            continue
        recorded = recorded_digest(text)
        if recorded is not None and content_ok(name, text) and recorded != digest:
            raise PatternGenError(Problem("instance", f"{name} was generated for another plan than this instance.json (an interrupted write, or a file copied from another instance); {REGENERATE}", str(path)))
