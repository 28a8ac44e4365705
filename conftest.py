"""Which tests are ``slow``: deselected by the default run (pyproject's ``-m "not slow"``), run by
``python -m pytest -n auto -m slow`` — CI runs both.

Marked here, not in the files, so the generated instance folders stay the same text a team's
repository gets (their pytest has no ``slow`` marker). Slow are: everything that drives real PyPTO
(each compile takes seconds, a verifier run ~30–75 s), the docs site in a real browser, the
fuzzers and mutation sweeps, the golden sweep over every parameter value, and generated golden
cases above ``FAST_LANE_MAX_T`` tokens.
"""

from __future__ import annotations

import os

import pytest

from pattern_gen.plan.test_points import FAST_LANE_MAX_T

#: path fragments of the slow tests (relative to the repository root, '/'-separated)
SLOW = (
    "tests/real_pypto/",
    "tests/docs/test_site.py",
    "tests/hardening/test_cli_fuzz.py",
    "tests/hardening/test_file_mutations.py",
    "tests/catalogue/test_mutations.py",
    "tests/catalogue/test_golden_sweep.py",
)


def _is_slow(item: pytest.Item) -> bool:
    path = item.path.as_posix()
    if any(f"/{fragment}" in path or path.endswith(fragment) for fragment in SLOW):
        return True
    if "/generated/" not in path:
        return False
    if item.path.parent.name.endswith("-pypto"):  # the real-PyPTO target's tests
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return isinstance(params.get("T"), int) and params["T"] > FAST_LANE_MAX_T  # a long golden case


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ARG001
    if config.getoption("markexpr") == "not slow":
        terminalreporter.write_line(
            "slow tests left out (real PyPTO, the browser, the fuzzers): python -m pytest -n auto -m slow",
            yellow=True,
        )


#: CI's fresh-venv run (the README's test command, no extras) writes the tests it skipped here, one
#: node id a line, so the run with the extras installed takes those and the slow lane — not the
#: whole fast lane a second time (.ci/run)
SKIPPED_LOG = "PATTERN_GEN_SKIPPED_LOG"


def _log_skip(nodeid: str) -> None:
    path = os.environ.get(SKIPPED_LOG)
    if path:  # workers and the xdist controller may both report one skip: .ci/run sorts -u
        with open(path, "a", encoding="utf-8") as log:
            log.write(nodeid + "\n")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and report.when in ("setup", "call"):
        _log_skip(report.nodeid)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module that skips as a whole (``importorskip("torch")``) is one skipped collection."""
    if report.skipped and report.nodeid:
        _log_skip(report.nodeid)
