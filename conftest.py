"""Which tests are ``slow``: deselected by the default run (pyproject's ``-m "not slow"``), run by
``python -m pytest -n auto -m slow`` — CI runs both.

Marked here, not in the files, so the generated instance folders stay the same text a team's
repository gets (their pytest has no ``slow`` marker). Slow are: everything that drives real PyPTO
(each compile takes seconds, a verifier run ~30–75 s), the docs site in a real browser, and the
fuzzers and mutation sweeps.
"""

from __future__ import annotations

import pytest

#: path fragments of the slow tests (relative to the repository root, '/'-separated)
SLOW = (
    "tests/real_pypto/",
    "tests/docs/test_site.py",
    "tests/hardening/",
    "tests/catalogue/test_mutations.py",
    "tests/catalogue/test_golden_sweep.py",
)


def _is_slow(item: pytest.Item) -> bool:
    path = item.path.as_posix()
    if any(f"/{fragment}" in path or path.endswith(fragment) for fragment in SLOW):
        return True
    return "/generated/" in path and item.path.parent.name.endswith("-pypto")  # the real-PyPTO target's tests


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
