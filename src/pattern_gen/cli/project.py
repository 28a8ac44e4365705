"""A team's project configuration: ``pattern-gen.toml`` or ``[tool.pattern-gen]`` in ``pyproject.toml``.

Found by walking up from the working directory (as ruff and mypy do); the first file that has a
pattern-gen section wins. Paths in it are relative to the file. Every command reads it; flags
override it; ``pattern-gen config`` prints each resolved setting and where it came from. Without a
config, the defaults are today's: the shipped catalogue, its manifest, ``generated/`` of the
checkout pattern-gen runs from (or ``./generated``), ``./kernels``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from ..vocab.errors import PatternGenError, Problem, did_you_mean
from ..vocab.paths import checked_path as config_path
from ..vocab.resources import repo_root

__all__ = ["Project", "KEYS", "find_config", "load_project", "config_path"]

CONFIG_FILE = "pattern-gen.toml"

#: a config is a few lines; a device or a huge file is not read whole
MAX_CONFIG_BYTES = 1 << 20

#: key -> (what it sets, kind): "path", "paths" or "str"
KEYS: dict[str, tuple[str, str]] = {
    "catalogue": ("folders of the team's own cards, on top of the shipped catalogue", "paths"),
    "manifest": ("the manifest `generate` reads", "path"),
    "generated": ("the folder `generate` owns and `generate --check` compares", "path"),
    "kernels": ("where `new` writes instance folders (`--out`)", "path"),
    "platform": ("the default platform (`--platform`)", "str"),
    "target": ("the default code-generation target of `new` (`--target`)", "str"),
}


@dataclass
class Project:
    """The resolved settings, each with where it came from."""

    file: Path | None = None
    catalogue: list[Path] = field(default_factory=list)
    manifest: Path | None = None
    generated: Path = Path("generated")
    kernels: Path = Path("kernels")
    platform: str | None = None
    target: str | None = None
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def root(self) -> Path | None:
        return self.file.parent if self.file is not None else None

    def rows(self) -> list[tuple[str, str, str]]:
        """(key, value, source) of every setting, for ``pattern-gen config``."""
        out = []
        for key in KEYS:
            value = getattr(self, key)
            text = ", ".join(str(v) for v in value) if isinstance(value, list) else ("" if value is None else str(value))
            out.append((key, text or "(none)", self.sources.get(key, "default")))
        return out


def _section(path: Path) -> dict[str, Any] | None:
    """The pattern-gen table of a config file (None: the file has none)."""
    try:
        if not path.is_file():
            raise OSError(f"{path} is not a regular file")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise OSError(f"larger than {MAX_CONFIG_BYTES} bytes")
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise PatternGenError(Problem("bad-config", f"cannot read {path}: {exc}", str(path))) from None
    except tomllib.TOMLDecodeError as exc:
        raise PatternGenError(Problem("bad-config", f"not valid TOML: {exc}", str(path))) from None
    except (RecursionError, ValueError) as exc:  # tomllib recurses per nesting level; ValueError: a 5000-digit int
        raise PatternGenError(Problem("bad-config", f"not valid TOML: {type(exc).__name__} (nested too deep or a number too long)", str(path))) from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("pattern-gen")
        return table if isinstance(table, dict) else None
    return data.get("tool", {}).get("pattern-gen", data) if isinstance(data.get("tool"), dict) else data


def find_config(start: Path) -> Path | None:
    """The nearest ``pattern-gen.toml`` or ``pyproject.toml`` with ``[tool.pattern-gen]``, walking up."""
    for folder in [start, *start.parents]:
        candidate = folder / CONFIG_FILE
        if candidate.is_file():
            return candidate
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file() and "pattern-gen" in pyproject.read_text(encoding="utf-8", errors="replace"):
            if _section(pyproject) is not None:
                return pyproject
    return None


def _line_of(path: Path, key: str) -> int | None:
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip().startswith((f"{key} ", f"{key}=", f'"{key}"')):
            return i
    return None


def _defaults(project: Project, cwd: Path) -> None:
    root = repo_root()
    inside_checkout = root is not None and (cwd == root or root in cwd.parents)
    project.generated = (root / "generated") if inside_checkout and root is not None else cwd / "generated"
    project.kernels = cwd / "kernels"


def load_project(cwd: Path | None = None) -> Project:
    """The project settings for ``cwd`` (default: the working directory)."""
    cwd = (cwd or Path.cwd()).resolve()
    project = Project()
    _defaults(project, cwd)
    path = find_config(cwd)
    if path is None:
        return project
    table = _section(path) or {}
    project.file = path
    base = path.parent
    problems = []
    for key, value in table.items():
        line = _line_of(path, key)
        where = f"{path.name}:{line}" if line else path.name
        if key not in KEYS:
            problems.append(Problem("bad-config", f"unknown setting {key!r}" + did_you_mean(key, KEYS) + f"; settings: {', '.join(KEYS)}", str(path), line))
            continue
        kind = KEYS[key][1]
        if kind == "paths":
            items = [value] if isinstance(value, str) else value
            if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
                problems.append(Problem("bad-config", f"{key} must be a folder or a list of folders, got {value!r}"[:200], str(path), line))
                continue
            try:
                setattr(project, key, [config_path(base, v) for v in items])
            except ValueError as exc:
                problems.append(Problem("bad-config", f"{key}: a folder {exc}", str(path), line))
                continue
        elif not isinstance(value, str) or not value:
            problems.append(Problem("bad-config", f"{key} must be a non-empty string, got {value!r}"[:200], str(path), line))
            continue
        elif kind == "path":
            try:
                setattr(project, key, config_path(base, value))
            except ValueError as exc:
                problems.append(Problem("bad-config", f"{key}: the path {exc}", str(path), line))
                continue
        else:
            setattr(project, key, value)
        project.sources[key] = where
    if problems:
        raise PatternGenError(problems)
    return project
