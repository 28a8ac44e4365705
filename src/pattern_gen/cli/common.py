"""What every command shares: the consoles, printing problems, exit codes, the loaded catalogue."""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..catalogue.catalogue import Catalogue, load_catalogue
from ..vocab.errors import PatternGenError, Problem
from .project import Project, load_project

__all__ = ["out", "err", "terminal_safe", "handle_errors", "catalogue", "catalogue_dirs", "manifest_path", "project", "pairs", "default_generated", "literal", "add_literal_row", "strict_json", "warn"]

def _width() -> int | None:
    """Rich wraps at 80 columns when not on a terminal: piped output (CI logs, ``| less``) keeps
    its lines whole up to 200 columns instead. ``COLUMNS`` still wins."""
    return None if os.environ.get("COLUMNS") or sys.stdout.isatty() else 200


#: C0/C1 controls but newline and tab, and the bidi overrides/isolates (Trojan-Source): a name or
#: path from a card, an instance.json or the command line must not move the cursor, set a title or
#: an OSC 8 link, or reorder what the user reads
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` with every control and bidi character shown as its escape (``\\x1b``, ``\\u202e``)."""
    return _CONTROLS.sub(lambda m: repr(m.group())[1:-1], text)


class _Terminal(Console):
    """A console that shows text literally: no markup or emoji unless a call asks for markup
    (``markup=True``, with ``escape`` around what it quotes), and control characters escaped."""

    def render_str(self, text: str, **kwargs: Any) -> Text:  # every str printed or put in a table
        return super().render_str(terminal_safe(text), **kwargs)


out = _Terminal(highlight=False, soft_wrap=False, width=_width(), markup=False, emoji=False)
err = _Terminal(stderr=True, highlight=False, width=_width(), markup=False, emoji=False)

#: commands whose failure message adds that nothing was written
_WRITING_COMMANDS = {"new", "generate", "build", "serve", "init", "new-card"}


def mark_written() -> None:
    """A writing command has written its files: a later failure (``new --run``) must not say
    that nothing was written."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.find_root().obj is not None:
        ctx.find_root().obj["wrote"] = True


def _fail(problems: list[Problem]) -> None:
    for p in problems:
        # the message quotes card text: shown as Text, never read as markup or emoji codes
        err.print(Text.assemble(("error", "red"), ": ", terminal_safe(str(p))), highlight=False, soft_wrap=True)
    n = len(problems)
    ctx = click.get_current_context(silent=True)
    written = ctx is not None and (ctx.find_root().obj or {}).get("wrote")
    wrote = " nothing was written." if ctx is not None and ctx.info_name in _WRITING_COMMANDS and not written else ""
    err.print(f"{n} problem{'s' if n != 1 else ''};{wrote}" if wrote else f"{n} problem{'s' if n != 1 else ''}.", style="dim")


def literal(value: object, style: str = "") -> Text:
    """Card-provided text as it is written: rich would read ``List[int]`` or ``[/x]`` in a title,
    rule or doc as markup (dropping it, or failing with a MarkupError), and ``:name:`` as an emoji."""
    return Text(terminal_safe(str(value)), style=style)


def warn(text: str) -> None:
    """A ``warning:`` line on stderr, shown literally (it may quote a path or card text)."""
    err.print(literal(f"warning: {text}", "yellow"), soft_wrap=True)


def add_literal_row(table: Table, *cells: object, style: str | None = None) -> None:
    """A table row whose cells are shown literally (see ``literal``); the caller formats them."""
    table.add_row(*(literal(c) for c in cells), style=style)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn PatternGenError into printed problems and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PatternGenError as exc:
            _fail(exc.problems)
            sys.exit(2)
        except (OSError, RuntimeError) as exc:
            problem = filesystem_problem(exc)
            if problem is None:
                raise
            _fail([problem])
            sys.exit(2)

    return wrapper


#: what the file system refuses for a reason the user can act on (a path, a disk, a permission)
_PATH_ERRNOS = {errno.ELOOP, errno.ENAMETOOLONG, errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT, errno.ENOTDIR, errno.EISDIR}


def filesystem_problem(exc: BaseException) -> Problem | None:
    """A path the file system refuses, met anywhere in a command, as one ``bad-path`` problem (a
    symlink loop is a RuntimeError from ``Path.resolve`` on Python 3.11, an OSError from 3.13)."""
    if isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop"):
        return Problem("bad-path", f"{str(exc)[:300]}: a symbolic link points back at itself; remove or fix the link")
    if isinstance(exc, OSError) and exc.errno in _PATH_ERRNOS:
        where = exc.filename if isinstance(exc.filename, str) else None
        return Problem("bad-path", f"{(where or 'a file')[:300]}: {exc.strerror or exc}; check the path, its permissions and the free space")
    return None


def project() -> Project:
    """The project settings of this invocation (``pattern-gen.toml`` found from the working
    directory; loaded once per command)."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None and ctx.find_root().obj is not None else {}
    if "project" not in obj:
        obj["project"] = load_project()
    return obj["project"]


def catalogue_dirs(ctx: click.Context) -> list[str]:
    """The project's catalogue folders, then the ``--catalogue`` ones."""
    return [str(p) for p in project().catalogue] + list(ctx.find_root().obj["catalogue_dirs"])


def catalogue(ctx: click.Context) -> Catalogue:
    """The catalogue of this invocation (loaded once, with the project's and ``--catalogue`` folders)."""
    obj = ctx.find_root().obj
    if "catalogue" not in obj:
        obj["catalogue"] = load_catalogue(catalogue_dirs(ctx))
    return obj["catalogue"]


def manifest_path(ctx: click.Context, given: str | None) -> Path:
    """``--manifest``, else the project's, else the catalogue's ``manifest.yaml``."""
    if given:
        return Path(given)
    return project().manifest or catalogue(ctx).dirs[0] / "manifest.yaml"


def pairs(values: tuple[str, ...], flag: str) -> dict[str, str]:
    """``NAME=VALUE`` arguments of a repeatable flag as a dict; a problem for each malformed one."""
    result: dict[str, str] = {}
    problems = []
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            problems.append(Problem("bad-param-value", f"{flag} {text!r}: expected NAME=VALUE"))
            continue
        if key.strip() in result and result[key.strip()] != value.strip():  # which one was meant?
            problems.append(Problem("bad-param-value", f"{flag} {key.strip()} is given twice ({result[key.strip()]!r} and {value.strip()!r}); give it once"))
            continue
        result[key.strip()] = value.strip()
    if problems:
        raise PatternGenError(problems)
    return result


def default_generated() -> Path:
    """The folder ``generate`` owns: the project's ``generated``, else the checkout's ``generated/``
    when run inside it, else ``./generated``."""
    return project().generated


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def strict_json(value: Any) -> str:
    """Strict JSON for ``--json`` (NaN -> null, ±inf -> "inf"/"-inf": ``Infinity`` is no JSON)."""
    return json.dumps(_finite(value), indent=2, default=str, allow_nan=False)

