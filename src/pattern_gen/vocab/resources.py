"""Where the shipped catalogue lives: inside the wheel, or at the repository top.

A wheel carries ``patterns/`` as ``pattern_gen/_data/patterns`` (see pyproject; the templates and
golden references are package files of ``pattern_gen.emit``);
an editable install reads the repository's own folders. User folders come on top through
``--catalogue DIR`` or ``PATTERN_GEN_CATALOGUE`` (``os.pathsep``-separated).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["package_patterns_dir", "user_catalogue_dirs", "repo_root"]

_HERE = Path(__file__).resolve().parent.parent  # the pattern_gen package


def repo_root() -> Path | None:
    """The source checkout this package runs from, if any (editable installs)."""
    root = _HERE.parent.parent
    return root if (root / "patterns").is_dir() and (root / "pyproject.toml").is_file() else None


def _data_or_repo(name: str) -> Path:
    shipped = _HERE / "_data" / name
    if shipped.is_dir():
        return shipped
    root = repo_root()
    if root is not None:
        return root / name
    raise FileNotFoundError(f"pattern-gen's {name}/ folder is missing from this installation")


def package_patterns_dir() -> Path:
    return _data_or_repo("patterns")


def user_catalogue_dirs(extra: list[str] | tuple[str, ...] = ()) -> list[Path]:
    dirs = [Path(p) for p in extra]
    env = os.environ.get("PATTERN_GEN_CATALOGUE", "")
    dirs.extend(Path(p) for p in env.split(os.pathsep) if p)
    return dirs
