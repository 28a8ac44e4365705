"""Writing generated files: headers with a content hash, atomic writes, only on change.

Every generated file carries the hash of its body — in a two-line header for Python files, in a
``content_hash`` key for JSON — so a hand edit is detected: such a file is never overwritten
without ``force``. Files are written through a temporary file and ``os.replace`` (atomic), and
only when their bytes change. ``compare_tree`` is the non-mutating check behind
``generate --check``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..vocab.errors import PatternGenError, Problem
from ..vocab.paths import read_text_file

__all__ = ["finalize", "body_digest", "recorded_digest", "content_ok", "atomic_write", "write_files", "check_writes", "WriteReport", "compare_tree", "Drift"]

_HASH_PREFIX = "# content-hash: sha256:"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def finalize(rel: str, body: str, banner: str) -> str:
    """The file as written: header (banner + hash) and body; JSON gets a content_hash key."""
    if rel.endswith(".json"):
        data = json.loads(body)
        data.pop("content_hash", None)
        canonical = json.dumps(data, indent=2) + "\n"
        data["content_hash"] = "sha256:" + _digest(canonical)
        return json.dumps(data, indent=2) + "\n"
    return f"# {banner}\n{_HASH_PREFIX}{_digest(body)}\n{body}"


def body_digest(body: str) -> str:
    """The digest ``finalize`` records for a body (instance.json lists its siblings' by it)."""
    return _digest(body)


def recorded_digest(text: str) -> str | None:
    """The hash a generated Python file's header records (None: no header)."""
    lines = text.split("\n", 2)
    return lines[1][len(_HASH_PREFIX):].strip() if len(lines) >= 2 and lines[1].startswith(_HASH_PREFIX) else None


def content_ok(rel: str, text: str) -> bool | None:
    """True if the file's body matches its recorded hash, False if edited, None if it has none."""
    if rel.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError:
            return False
        recorded = data.pop("content_hash", None) if isinstance(data, dict) else None
        if recorded is None:
            return None
        return recorded == "sha256:" + _digest(json.dumps(data, indent=2) + "\n")
    lines = text.split("\n", 2)
    if len(lines) < 3 or not lines[1].startswith(_HASH_PREFIX):
        return None
    return lines[1][len(_HASH_PREFIX):] == _digest(lines[2])


@dataclass
class WriteReport:
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)


def _file_mode(path: Path) -> int:
    """The mode the file gets: an existing file keeps its own, a new one the usual 0666 & ~umask
    (``mkstemp`` alone would leave 0600)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def stage_file(path: Path, text: str) -> str:
    """``text`` in a temporary file beside ``path`` (same folder, so renaming it is atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = _file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return tmp


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and ``os.replace`` (never half a file)."""
    tmp = stage_file(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def check_writes(folder: Path, files: Mapping[str, str], *, force: bool = False) -> list[Problem]:
    """The hand-edit problems ``write_files`` would raise, without writing (for multi-folder writes
    that must refuse before the first byte)."""
    try:
        _plan_writes(folder, files, force)
    except PatternGenError as exc:
        return list(exc.problems)
    return []


def inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (resolved, links followed) lies in ``root`` (resolved)."""
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def write_files(folder: Path, files: Mapping[str, str], *, force: bool = False, root: Path | None = None) -> WriteReport:
    """Write ``{relative path: final text}`` into ``folder``; refuse to clobber hand edits, and to
    write anywhere outside ``root`` (default: ``folder``'s parent).

    Everything is checked before the first byte is written, so a refusal leaves the folder as it
    was. The files are staged as temporaries first and renamed into place one after another at
    the end, so an interrupted write leaves either the old or the new text of each file (and an
    instance folder with a mix is refused by its reader: instance.json records every file's hash)."""
    root = folder.parent if root is None else root
    outside = [rel for rel in files if Path(rel).is_absolute() or ".." in Path(rel).parts or not inside(root, folder / rel)]
    if outside or not inside(root, folder):
        raise PatternGenError(Problem("bad-path", f"refused to write {folder / (outside[0] if outside else '')} outside {root}"))
    report, plan = _plan_writes(folder, files, force)
    created = not folder.exists()
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in plan:
            staged.append((stage_file(path, text), path))
        for tmp, path in staged:
            os.replace(tmp, path)
            report.written.append(path)
    except OSError as exc:  # a full disk, a name too long, no permission: say so, leave no empty folder
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
        if created and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        raise PatternGenError(Problem("bad-path", f"cannot write into {folder}: {exc.strerror or exc}")) from None
    return report


def _plan_writes(folder: Path, files: Mapping[str, str], force: bool) -> tuple[WriteReport, list[tuple[Path, str]]]:
    report = WriteReport()
    problems = []
    plan: list[tuple[Path, str]] = []
    blocked = next((p for p in [folder, *folder.parents] if p.exists() and not p.is_dir()), None)
    if blocked is not None:
        raise PatternGenError(Problem("bad-path", f"cannot write into {folder}: {blocked} is a file, not a folder"))
    if folder.is_symlink():  # writing through it would land outside the output folder
        raise PatternGenError(Problem("bad-path", f"{folder} is a symlink (to {os.readlink(folder)}); pattern-gen writes only into real folders: remove the link"))
    for rel, text in sorted(files.items()):
        path = folder / rel
        if path.is_symlink():
            problems.append(Problem("bad-path", f"{path} is a symlink; pattern-gen does not write through links: remove it"))
            continue
        if path.is_dir():
            problems.append(Problem("bad-path", f"cannot write {path}: a folder of that name is in the way"))
            continue
        if path.exists():
            try:
                old = read_text_file(path)
            except (OSError, UnicodeDecodeError):
                old = None
            if old == text:
                report.unchanged.append(path)
                continue
            if not force and (old is None or content_ok(rel, old) is not True):
                problems.append(
                    Problem(
                        "hand-edited",
                        f"{path} was edited by hand (or is not a generated file); nothing was overwritten — "
                        "move the change into the card, or rerun with --force to discard it",
                    )
                )
                continue
        plan.append((path, text))
    if problems:
        raise PatternGenError(problems)
    return report, plan


@dataclass
class Drift:
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.edited or self.stale)

    def lines(self) -> list[str]:
        out = []
        for kind in ("changed", "missing", "edited", "stale"):
            out += [f"{kind}: {p}" for p in getattr(self, kind)]
        return out


def compare_tree(root: Path, expected: Mapping[str, Mapping[str, str]], *, owned: set[str] | None = None) -> Drift:
    """Compare ``root/<instance>/<file>`` with what generation would write.

    ``owned`` names the top-level entries of ``root`` that generation manages besides the instance
    folders (e.g. ``docs``); anything else at the top is stale.
    """
    drift = Drift()
    for instance, files in sorted(expected.items()):
        for rel, text in sorted(files.items()):
            path = root / instance / rel
            name = f"{instance}/{rel}"
            if not path.exists():
                drift.missing.append(name)
                continue
            try:
                old = read_text_file(path)
            except (OSError, UnicodeDecodeError):  # a folder or binary data where a file belongs
                drift.edited.append(name)
                continue
            if old == text:
                continue
            if content_ok(rel, old) is False:
                drift.edited.append(name)
            else:
                drift.changed.append(name)
        folder = root / instance
        if folder.is_dir():
            for path in sorted(folder.rglob("*")):
                rel = path.relative_to(folder).as_posix()
                if path.is_file() and rel not in files and "__pycache__" not in rel:
                    drift.stale.append(f"{instance}/{rel}")
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.name.startswith(".") or entry.name in expected or entry.name in (owned or set()) or entry.name == "__pycache__":
                continue
            drift.stale.append(entry.name + ("/" if entry.is_dir() else ""))
    return drift


def _same_text(path: Path, text: str) -> bool:
    try:
        return read_text_file(path) == text
    except (OSError, UnicodeDecodeError):
        return False


def sync_folder(folder: Path, files: Mapping[str, str]) -> tuple[int, int, int]:
    """Make ``folder`` hold exactly ``files`` (a folder pattern-gen owns whole, e.g. the docs
    sources): write changed files atomically, remove the others; (written, unchanged, removed)."""
    written = unchanged = removed = 0
    for rel, text in sorted(files.items()):
        path = folder / rel
        if _same_text(path, text):
            unchanged += 1
            continue
        atomic_write(path, text)
        written += 1
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.relative_to(folder).as_posix() not in files:
                path.unlink()
                removed += 1
    return written, unchanged, removed


_STAGED = re.compile(r"\.(kernel\.py|golden\.py|instance\.json|test_\w+\.py|[\w.-]+\.(md|svg|json|yml|css))\.[A-Za-z0-9_]{8}\.tmp")


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Temporary files ``atomic_write`` left when a process was killed mid-write (``.name.XXXX.tmp``)."""
    removed = []
    if folder.is_dir() and not folder.is_symlink():
        for path in sorted(folder.glob(".*.tmp")):
            # only stage_file's own names (".<file>.<8 random chars>.tmp"): a user's ".notes.tmp" stays
            if path.is_file() and not path.is_symlink() and _STAGED.fullmatch(path.name):
                path.unlink()
                removed.append(path)
    return removed
