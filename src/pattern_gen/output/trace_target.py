"""Where ``run --profile`` may write its timeline: a new file, or one of the timelines it wrote
before; never a folder, FIFO, device or a user's own file (the write would hang, vanish or lose it)."""

from __future__ import annotations

import os
from pathlib import Path

from ..vocab.errors import PatternGenError, Problem

__all__ = ["check_trace_target"]


#: how every timeline this tool writes begins (ptosim.cost.trace); an existing file that does not
#: is a user's, and is not overwritten
_TRACE_HEAD = b'{"traceEvents"'


def check_trace_target(profile: str) -> None:
    """Refuse, before the run, a timeline path that is not a new or earlier-written timeline file:
    a folder, a FIFO or device (a write would hang or vanish), a symlink loop, a user's own file."""
    where = f"--profile {profile}"
    try:
        target = Path(profile).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise PatternGenError(Problem("bad-path", f"{where}: cannot follow the path: {exc}")) from None
    if not target.parent.is_dir():
        raise PatternGenError(Problem("bad-path", f"{where}: the folder {target.parent} does not exist"))
    if target.exists() or target.is_symlink():
        if not target.is_file():
            raise PatternGenError(Problem("bad-path", f"{where}: {target} is not a regular file (a folder, FIFO or device); name a .json file"))
        try:
            with open(target, "rb") as fh:
                head = fh.read(len(_TRACE_HEAD))
        except OSError as exc:
            raise PatternGenError(Problem("bad-path", f"{where}: cannot read the existing file: {exc.strerror or exc}")) from None
        if head and head != _TRACE_HEAD:
            raise PatternGenError(Problem("bad-path", f"{where}: {target} exists and is not a timeline; name another file or remove it"))
    if not os.access(target.parent, os.W_OK):
        raise PatternGenError(Problem("bad-path", f"{where}: cannot write in {target.parent}"))
