"""A record of catalogues that validated clean, so an unchanged catalogue validates in start-up time.

``validate`` expands every skeleton with every atom, parameter combination and platform (about a
thousand flow expansions) and plans the manifest: a second or more of work whose answer only
changes when a card, profile, manifest or pattern-gen's own code changes. The key hashes all of
them; only a clean result is recorded (problems are always recomputed, so every message is fresh).
The record lives in ``$PATTERN_GEN_CACHE_DIR`` (else ``$XDG_CACHE_HOME/pattern-gen``, else
``~/.cache/pattern-gen``); any failure to read or write it just means validating again, and
``PATTERN_GEN_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable

from ..cards.yamlsrc import MAX_FILE_BYTES
from ..catalogue.catalogue import SPECIAL_FILES, card_files

__all__ = ["validation_key", "validated_before", "record_validated"]

#: the code whose rules decide validity: pattern-gen itself and the simulator's option/profile rules
_CODE_ROOTS = ("pattern_gen", "ptosim")


def _cache_dir() -> Path:
    explicit = os.environ.get("PATTERN_GEN_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pattern-gen" / "validated"


def _feed(digest: "hashlib._Hash", path: Path) -> None:
    """The path and its bytes, read as the loader reads: a regular file under the loader's size
    limit only (a FIFO named ``x.yaml`` would block, ``/dev/zero`` linked as a card never end)."""
    digest.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            raise OSError("not a regular file of a card's size")
        digest.update(path.read_bytes())
    except OSError:
        digest.update(b"<unreadable>")
    digest.update(b"\0")


def _catalogue_files(folder: Path) -> list[Path]:
    """What the catalogue loader reads of a folder, and nothing else (no walk of the tree)."""
    found = card_files(folder) + [folder / name for name in sorted(SPECIAL_FILES)]
    platforms = folder / "platforms"
    if platforms.is_dir():
        found += sorted(platforms.glob("*.yaml"))
    return [p for p in found if p.exists() or p.is_symlink()]


def validation_key(folders: Iterable[Path], files: Iterable[Path], manifest: Path | None) -> str:
    """SHA-256 over every YAML file of the catalogue folders, the explicit card files, the manifest
    and the source of pattern-gen and ptosim (paths and bytes, in a fixed order)."""
    digest = hashlib.sha256(b"pattern-gen validate v1\0")
    here = Path(__file__).resolve().parents[2]  # src/ (or site-packages/)
    for root in _CODE_ROOTS:
        for path in sorted((here / root).rglob("*.py")):
            _feed(digest, path)
    for folder in folders:
        for path in _catalogue_files(Path(folder)):
            _feed(digest, path)
    for path in sorted(Path(f) for f in files):
        _feed(digest, path)
    if manifest is not None and manifest.is_file():
        _feed(digest, manifest)
    return digest.hexdigest()


def _disabled() -> bool:
    return os.environ.get("PATTERN_GEN_NO_CACHE", "") not in ("", "0")


def validated_before(key: str) -> bool:
    if _disabled():
        return False
    try:
        return (_cache_dir() / key).is_file()
    except OSError:
        return False


def record_validated(key: str) -> None:
    """Record a clean validation (atomically; silently skipped when the cache cannot be written)."""
    if _disabled():
        return
    folder = _cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        os.close(fd)
        os.replace(tmp, folder / key)
    except OSError:
        pass
