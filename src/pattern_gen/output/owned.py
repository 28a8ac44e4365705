"""Folders pattern-gen owns whole (the docs sources, the built site): it may remove a file there
only if it wrote it.

A folder is owned when pattern-gen created it, found it empty, or finds its marker file in it;
the marker lists the files written last time, so a stale page is removed and a file somebody else
put there is not. A symbolic link is never owned (its target is somebody's folder), nor is a
folder holding files without the marker: ``docs build --out docs`` must not delete a team's
hand-written docs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Mapping

from ..vocab.errors import PatternGenError, Problem
from .writer import atomic_write
from ..vocab.paths import read_text_file

__all__ = ["claim", "sync_owned", "replace_owned"]


def _marker(folder: Path, name: str) -> Path:
    return folder / name


def _text_of(path: Path) -> str | None:
    try:
        return read_text_file(path, errors="replace")
    except OSError:
        return None


def _read_marker(path: Path) -> list[str] | None:
    try:
        data = json.loads(read_text_file(path))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else None


def claim(folder: Path, marker: str, what: str, adopt: Callable[[Path], bool] = lambda folder: False) -> list[str]:
    """Check that ``folder`` may be written whole; the files written there last time. ``adopt``
    recognises a folder an earlier version wrote before markers existed (all its files are ours)."""
    if folder.is_symlink() or (folder.exists() and folder.resolve() != folder.absolute().resolve()):
        raise PatternGenError(Problem("bad-path", f"{folder} is (or is inside) a symbolic link; {what} is written only into a real folder", str(folder)))
    if folder.exists() and not folder.is_dir():
        raise PatternGenError(Problem("bad-path", f"{folder} is not a folder; pick another place for {what}", str(folder)))
    if not folder.exists() or not any(folder.iterdir()):
        return []
    listed = _read_marker(_marker(folder, marker))
    if listed is not None:
        return listed
    if adopt(folder):
        return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    raise PatternGenError(
        Problem(
            "bad-path",
            f"{folder} holds files pattern-gen did not write (it has no {marker}); nothing was deleted — "
            f"pick a new or empty folder for {what}",
            str(folder),
        )
    )


def _write_marker(folder: Path, marker: str, files: list[str]) -> None:
    atomic_write(_marker(folder, marker), json.dumps({"written_by": "pattern-gen", "files": sorted(files)}, indent=1) + "\n")


def sync_owned(folder: Path, files: Mapping[str, str], marker: str, what: str, adopt: Callable[[Path], bool] = lambda f: False) -> tuple[int, int, int]:
    """Make the owned ``folder`` hold ``files``: write what changed (atomically), remove what pattern-gen
    wrote last time and no longer writes; (written, unchanged, removed)."""
    before = claim(folder, marker, what, adopt)
    written = unchanged = removed = 0
    for rel, text in sorted(files.items()):
        path = folder / rel
        if not path.is_symlink() and _text_of(path) == text:
            unchanged += 1
            continue
        atomic_write(path, text)
        written += 1
    for rel in sorted(set(before) - set(files) - {marker}):
        path = folder / rel
        if path.is_file() and not path.is_symlink():
            path.unlink()
            removed += 1
    _write_marker(folder, marker, list(files))
    return written, unchanged, removed


def replace_owned(folder: Path, marker: str, what: str, fill: Callable[[Path], None], adopt: Callable[[Path], bool] = lambda f: False) -> None:
    """Build ``what`` into a fresh sibling folder with ``fill``, then swap it in for the owned
    ``folder`` (a failed build leaves the old one as it was)."""
    claim(folder, marker, what, adopt)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.with_name(f".{folder.name}.building")
    if staging.exists() and not staging.is_symlink():
        shutil.rmtree(staging)
    fill(staging)
    files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    _write_marker(staging, marker, files)
    old = folder.with_name(f".{folder.name}.old")
    if folder.exists():
        if old.exists() and not old.is_symlink():
            shutil.rmtree(old)
        folder.rename(old)
    staging.rename(folder)
    if old.exists():
        shutil.rmtree(old)
