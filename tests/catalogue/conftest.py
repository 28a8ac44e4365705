"""Shared fixtures for the catalogue tests (issue 2: cards, loader, checks, list/show/validate/schema).

- ``shipped``: the shipped ``patterns/`` folder (read only).
- ``catalogue_copy``: a private copy of ``patterns/`` in a temp folder, with helpers to edit a card
  (``edit`` asserts that the text to replace is there, so a card change upstream fails loudly
  instead of silently testing nothing) and to find the line of a piece of text.
- ``cli`` (tests/conftest.py): runs the CLI in-process and returns a ``CliRun``
  with exit code, stdout, stderr and the problem lines (``error: file:line:col: message [code]``).

Tests run with ``--import-mode=importlib``: helpers live here as fixtures, never imported.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from pattern_gen.vocab.resources import package_patterns_dir


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


