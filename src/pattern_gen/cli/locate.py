"""Finding an instance folder from what the user typed: a path, or a name under the project's
kernels/ and generated/ folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..vocab.errors import PatternGenError, Problem
from ..vocab.text import quote
from .common import project

__all__ = ["find_instance"]


def find_instance(name_or_dir: str) -> Path:
    """An instance folder given as a path, or by name under the project's kernels/ and generated/."""
    if len(name_or_dir) > 4096 or "\x00" in name_or_dir:  # no file system takes it: say so, do not ask the OS
        raise PatternGenError(Problem("bad-path", f"no such instance folder: {quote(name_or_dir)} (not a path this system can open)"))
    given = Path(name_or_dir)
    if _probe(given.is_dir):
        return given
    settings = project()
    candidates = [root / name_or_dir for root in (settings.kernels, settings.generated)]
    found = [c for c in candidates if _probe((c / "instance.json").is_file)]
    if found:
        return found[0]
    looked = ", ".join(str(c.parent) for c in candidates)
    raise PatternGenError(Problem("bad-path", f"no such instance folder: {quote(name_or_dir)} (not a folder, and no instance of that name in {looked})"))


def _probe(check: Any) -> bool:
    """``path.is_dir()`` and the like, with a name the OS refuses (too long, a bad byte) as False."""
    try:
        return bool(check())
    except (OSError, ValueError):
        return False
