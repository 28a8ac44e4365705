"""The cost-model benchmark's report: what counts as inside the goal and the summary per family."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "costmodel_vs_pypto.py"
_spec = importlib.util.spec_from_file_location("costmodel_vs_pypto", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _row(instance: str, ratio: float, pypto_tasks: int, ptosim_tasks: int) -> dict:
    return {"case": f"{instance}@T1", "instance": instance, "T": 1, "split": "holdout", "pypto_us": 10.0,
            "ptosim_us": 10.0 * ratio, "ratio": ratio, "pypto_tasks": pypto_tasks, "ptosim_tasks": ptosim_tasks}


def test_inside_is_symmetric_in_the_ratio_and_bounds_the_task_count():
    g, t = bench.MANIFEST_GOAL, bench.TASK_GOAL
    assert bench._inside(_row("a", g * 0.999, 100, 100)) == (True, True)
    assert bench._inside(_row("a", 1 / (g * 0.999), 100, 100)) == (True, True)
    assert bench._inside(_row("a", g * 1.001, 100, 100))[0] is False
    assert bench._inside(_row("a", 1 / (g * 1.001), 100, 100))[0] is False
    assert bench._inside(_row("a", 1.0, 100, round(100 * (1 + t)) + 1))[1] is False


def test_by_family_groups_on_skeleton_and_atom():
    rows = [_row("sk03-at10-gamma-x", 1.0, 10, 10), _row("sk03-at10-nogamma-y", 1.3, 10, 20),
            _row("sk05-at11-z", 0.9, 10, 10)]
    lines = bench._by_family(rows)
    assert [line.split()[0] for line in lines] == ["sk03-at10", "sk05-at11"]
    assert "2 cases:   1 within" in lines[0] and "1 task counts" in lines[0] and "1.00-1.30" in lines[0]
    table = bench._markdown(rows)
    assert table.count("outside") == 1 and "By family:" in table
