"""Path arguments the OS cannot even look at (a NUL byte, a name too long) are bad input: refused
before any command code meets a ValueError or ENAMETOOLONG. Light on purpose: the command group
imports it at start-up."""

from __future__ import annotations

import errno
import os
from typing import Any

import click

from ..vocab.text import quote

__all__ = ["FsPath", "unopenable"]


def unopenable(path: str) -> str | None:
    """Why the OS cannot look at ``path``, else None; a path that does not exist is not this (the
    caller says "no such file")."""
    try:
        os.stat(path)
    except ValueError as exc:  # an embedded NUL byte
        return f"not a path this system can open ({exc})"
    except OSError as exc:  # not there, not a folder, no permission: the command says which
        if exc.errno == errno.ENAMETOOLONG:
            return f"not a path this system can open ({exc.strerror})"
    return None


class FsPath(click.Path):
    """``click.Path`` that refuses such a name as a usage error (exit 2)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        why = unopenable(os.fspath(value)) if isinstance(value, (str, os.PathLike)) else None
        if why:
            self.fail(f"{quote(str(value))}: {why}", param, ctx)
        return super().convert(value, param, ctx)
