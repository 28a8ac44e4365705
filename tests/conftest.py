"""Shared test helpers: the CLI run in-process (click's CliRunner) as a ``CliRun``.

``cli(*args, env=None)`` -> ``CliRun`` with the exit code, stdout, stderr, the unexpected
exception if any, and the ``error: … [code]`` lines parsed into (text, code) problems.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable

import pytest
from click.testing import CliRunner

# The CLI's consoles take their width when imported; pytest (xdist workers) may set COLUMNS=80,
# which would fold long paths in tables. Tests read whole lines.
os.environ["COLUMNS"] = "250"
# validate's record of clean catalogues (cli/validate_cache.py) would let a test that patches a
# check pass on a catalogue validated before: off for the suite (test_validate_cache.py turns it on).
os.environ["PATTERN_GEN_NO_CACHE"] = "1"

from pattern_gen.cli import main  # noqa: E402

_PROBLEM = re.compile(r"^error: (?P<text>.*) \[(?P<code>[a-z][a-z0-9-]*)\]$")


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

    def assert_bad_input(self, *codes: str) -> None:
        """Exit 2, problem lines (with these codes), no traceback, no unexpected exception."""
        assert self.exit_code == 2, f"exit {self.exit_code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}\n{self.exception!r}"
        assert self.exception is None, repr(self.exception)
        assert "Traceback" not in self.stderr + self.stdout
        assert self.problems, f"no 'error: … [code]' line in stderr:\n{self.stderr}"
        for text, _ in self.problems:
            assert text.strip(), "a problem line without a message"
        for code in codes:
            assert code in self.codes(), f"{code} not in {self.codes()}:\n{self.stderr}"

    def assert_ok(self) -> None:
        assert self.exit_code == 0, f"exit {self.exit_code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}\n{self.exception!r}"


def _runner() -> CliRunner:
    try:  # click 8.1 mixes stderr into stdout unless told not to; 8.2 keeps them apart and dropped the flag
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()


def run_cli(*args: object, env: dict[str, str] | None = None) -> CliRun:
    result = _runner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=True)
    stderr = result.stderr
    problems = [(m["text"], m["code"]) for m in map(_PROBLEM.match, stderr.splitlines()) if m]
    exc = result.exception
    if isinstance(exc, SystemExit):
        exc = None
    return CliRun(result.exit_code, result.stdout, stderr, exc, problems)


@pytest.fixture
def cli() -> Callable[..., CliRun]:
    """``cli("new", "--skeleton", "SK-03", ...)`` -> CliRun."""
    return run_cli
