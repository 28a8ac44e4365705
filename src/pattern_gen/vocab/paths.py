"""Paths from settings (a config file, the environment): checked before any open, so a NUL, an
over-long name or a symlink loop is a message, not an OSError or RuntimeError deep in a command."""

from __future__ import annotations

from pathlib import Path

__all__ = ["checked_path", "read_text_file", "NotAFile", "MAX_TEXT_BYTES"]

#: Linux's PATH_MAX and NAME_MAX: longer fails at every open with an OSError
_MAX_PATH, _MAX_NAME = 4096, 255


def checked_path(base: Path, text: str) -> Path:
    """A path setting (from a config file or the environment) resolved against ``base``; ValueError
    with the reason for a NUL, an over-long path or name, or a symlink loop."""
    if "\0" in text:
        raise ValueError("holds a NUL character")
    if len(text) > _MAX_PATH or any(len(part.encode()) > _MAX_NAME for part in Path(text).parts):
        raise ValueError(f"is longer than a path may be ({_MAX_PATH} characters, {_MAX_NAME} per name)")
    try:
        return (base / text).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise ValueError(f"cannot be followed: {exc}") from None


#: larger than any file pattern-gen writes or reads back (the largest generated kernel is ~60 kB)
MAX_TEXT_BYTES = 16 << 20


class NotAFile(OSError):
    """The path is a FIFO, device, socket or folder, or larger than a file of ours can be."""


def read_text_file(path: Path, *, limit: int = MAX_TEXT_BYTES, errors: str = "strict") -> str:
    """A regular file's text, read without blocking: a FIFO named kernel.py (whose open would wait
    for a writer forever) or /dev/zero linked as one (endless) raises NotAFile instead."""
    import os
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFile(f"{path} is not a regular file (a FIFO, device or folder)")
        if info.st_size > limit:
            raise NotAFile(f"{path} is {info.st_size} bytes, more than a file of ours ({limit})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(limit + 1)
    finally:
        os.close(fd)
    return raw.decode("utf-8", errors=errors)
