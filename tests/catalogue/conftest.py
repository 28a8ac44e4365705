"""Shared fixtures for the catalogue tests (issue 2: cards, loader, checks, list/show/validate/schema).

- ``shipped``: the shipped ``patterns/`` folder (read only).
- ``catalogue_copy``: a private copy of ``patterns/`` in a temp folder, with helpers to edit a card
  (``edit`` asserts that the text to replace is there, so a card change upstream fails loudly
  instead of silently testing nothing) and to find the line of a piece of text.
- ``cli``: runs ``pattern_gen.cli.main`` in-process (click's CliRunner) and returns a ``CliRun``
  with exit code, stdout, stderr and the problem lines (``error: file:line:col: message [code]``).

Tests run with ``--import-mode=importlib``: helpers live here as fixtures, never imported.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from pattern_gen.cli import main
from pattern_gen.vocab.resources import package_patterns_dir

_PROBLEM = re.compile(r"^error: (?P<text>.*) \[(?P<code>[a-z][a-z0-9-]*)\]$")


@pytest.fixture(autouse=True)
def _no_user_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's PATTERN_GEN_CATALOGUE must not leak into the tests."""
    monkeypatch.delenv("PATTERN_GEN_CATALOGUE", raising=False)


@pytest.fixture(scope="session")
def shipped() -> Path:
    return package_patterns_dir()


@dataclass
class CatalogueCopy:
    """A writable copy of the shipped catalogue."""

    root: Path

    def path(self, rel: str) -> Path:
        return self.root / rel

    def text(self, rel: str) -> str:
        return self.path(rel).read_text(encoding="utf-8")

    def write(self, rel: str, text: str) -> Path:
        target = self.path(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        return target

    def edit(self, rel: str, old: str, new: str, count: int = 1) -> Path:
        """Replace ``old`` by ``new`` (``count`` occurrences; ``old`` must occur that often at least)."""
        text = self.text(rel)
        assert text.count(old) >= count, f"{old!r} not found {count}x in {rel}: the shipped card changed"
        return self.write(rel, text.replace(old, new, count))

    def line(self, rel: str, needle: str, nth: int = 1) -> int:
        """1-based line number of the ``nth`` line of ``rel`` that contains ``needle``."""
        hits = [i for i, ln in enumerate(self.text(rel).splitlines(), 1) if needle in ln]
        assert len(hits) >= nth, f"{needle!r} not found in {rel}"
        return hits[nth - 1]


@pytest.fixture
def catalogue_copy(tmp_path: Path, shipped: Path) -> CatalogueCopy:
    root = tmp_path / "patterns"
    shutil.copytree(shipped, root)
    return CatalogueCopy(root)


@dataclass
class CliRun:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None
    problems: list[tuple[str, str]] = field(default_factory=list)  #: (text, code) per "error:" line

    def codes(self) -> list[str]:
        return [code for _, code in self.problems]

    def with_code(self, code: str) -> list[str]:
        return [text for text, c in self.problems if c == code]

    def assert_bad_input(self) -> None:
        """Exit code 2, at least one problem line, no traceback, no unexpected exception."""
        assert self.exit_code == 2, f"exit {self.exit_code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}\n{self.exception!r}"
        assert self.exception is None or isinstance(self.exception, SystemExit), repr(self.exception)
        assert "Traceback" not in self.stderr and "Traceback" not in self.stdout
        assert self.problems, f"no 'error: … [code]' line in stderr:\n{self.stderr}"
        for text, _ in self.problems:
            assert text.strip(), "a problem line without a message"


def _runner() -> CliRunner:
    try:  # click 8.1 mixes stderr into stdout unless told not to; 8.2 keeps them apart and dropped the flag
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def run_cli(*args: str, env: dict[str, str] | None = None) -> CliRun:
    result = _runner().invoke(main, list(args), env=env, catch_exceptions=True)
    stderr = result.stderr
    problems = [(m["text"], m["code"]) for m in map(_PROBLEM.match, stderr.splitlines()) if m]
    exc = result.exception
    if isinstance(exc, SystemExit):
        exc = None
    return CliRun(result.exit_code, result.stdout, stderr, exc, problems)


@pytest.fixture
def cli():
    """``cli("validate", str(folder))`` -> CliRun."""
    return run_cli
