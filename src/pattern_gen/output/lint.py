"""The style generated files keep, checked by ruff where it is installed.

``generate`` writes ``RUFF_TOML`` beside the instance folders (so ``ruff check`` and ``ruff format
--check`` run in the output folder judge the files as ``generate --check`` does), and ``--check``
runs ruff on the rendered text. Ruff is a dev tool, not a dependency: rendering never needs it
(the templates render text that is already formatted), and without it the check is skipped.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping

__all__ = ["RUFF_TOML", "RUFF_TOML_NAME", "ruff_binary", "ruff_problems"]

RUFF_TOML_NAME = "ruff.toml"
RUFF_TOML = """\
# Written by `pattern-gen generate`: the style of the generated kernels, goldens and tests
# (`generate --check` runs ruff check and ruff format --check with it when ruff is installed).
line-length = 120
target-version = "py310"
extend-exclude = ["docs"]

[lint]
select = ["E", "F", "W", "I"]
# the cards name the dims, and a model's intermediate size is I
ignore = ["E741"]
"""

#: seconds one ruff run may take (both runs read every rendered file at once)
_TIMEOUT = 120


def ruff_binary() -> str | None:
    """The ruff executable of this environment (the ``ruff`` package's, else one on PATH), or None."""
    try:
        from ruff.__main__ import find_ruff_bin  # type: ignore[import-not-found]

        return str(find_ruff_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("ruff")


def ruff_problems(rendered: Mapping[str, Mapping[str, str]], ruff: str | None = None) -> list[str]:
    """``ruff check`` and ``ruff format --check`` of the rendered Python files (instance -> file ->
    text) under ``RUFF_TOML``: one line per problem, naming the file and ruff's message; [] when
    ruff is not installed."""
    ruff = ruff or ruff_binary()
    if ruff is None:
        return []
    with tempfile.TemporaryDirectory(prefix="pattern-gen-ruff-") as tmp:
        root = Path(tmp)
        (root / RUFF_TOML_NAME).write_text(RUFF_TOML, encoding="utf-8")
        for instance, files in rendered.items():
            for rel, text in files.items():
                if rel.endswith(".py"):
                    path = root / instance / rel
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
        check = _run([ruff, "check", "--no-cache", "--output-format", "concise", "--quiet", "."], root)
        fmt = _run([ruff, "format", "--no-cache", "--check", "."], root)
    problems = [f"ruff check: {line}" for line in check.splitlines() if line.strip() and ":" in line]
    problems += [f"ruff format: {name} would be reformatted" for name in _unformatted(fmt)]
    return problems


def _unformatted(report: str) -> list[str]:
    """The files ``ruff format --check`` names: ``Would reformat: <file>`` (older ruff) or
    ``--> <file>:<line>:<col>`` (newer ruff)."""
    names = []
    for line in report.splitlines():
        line = line.strip()
        if line.startswith("Would reformat:"):
            names.append(line.split(":", 1)[1].strip())
        elif line.startswith("-->"):
            names.append(line[3:].strip().split(":", 1)[0])
        elif line.startswith("ruff:"):
            names.append(line)
    return list(dict.fromkeys(names))


def _run(argv: list[str], cwd: Path) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"ruff: could not run {argv[0]}: {exc}"
    if done.returncode not in (0, 1):  # 2: ruff itself failed (a bad config, an unreadable file)
        return f"ruff: {' '.join(argv[1:3])} failed: {done.stderr.strip() or done.stdout.strip()}"
    return done.stdout
