"""The cost-model benchmark's report: what counts as inside the goal, the split by kernel family and
the summary per family."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "costmodel_vs_pypto.py"
_spec = importlib.util.spec_from_file_location("costmodel_vs_pypto", _PATH)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _row(instance: str, ratio: float, pypto_tasks: int, ptosim_tasks: int, family: str = "ffn", T: int = 1) -> dict:
    return {"case": f"{instance}@T{T}", "instance": instance, "T": T, "split": bench._split_of(family),
            "family": family, "pypto_us": 10.0, "ptosim_us": 10.0 * ratio, "ratio": ratio,
            "pypto_tasks": pypto_tasks, "ptosim_tasks": ptosim_tasks}


def test_inside_is_symmetric_in_the_ratio_and_bounds_the_task_count():
    g, t = bench.MANIFEST_GOAL, bench.TASK_GOAL
    assert bench._inside(_row("a", g * 0.999, 100, 100)) == (True, True)
    assert bench._inside(_row("a", 1 / (g * 0.999), 100, 100)) == (True, True)
    assert bench._inside(_row("a", g * 1.001, 100, 100))[0] is False
    assert bench._inside(_row("a", 1 / (g * 1.001), 100, 100))[0] is False
    assert bench._inside(_row("a", 1.0, 100, round(100 * (1 + t)) + 1))[1] is False


def test_split_is_fit_only_for_a_family_a_rule_was_read_from():
    fams = bench.families
    for f in fams.FAMILIES:
        assert bench._split_of(f.id) == ("fit" if fams.rules_from(f.id) else "holdout")
    assert bench._split_of(None) == "holdout"  # an instance no family has yet


def test_by_family_reports_split_rules_cases_and_the_worst_ratios():
    rows = [_row("sk03-a", 1.0, 10, 10, "norm-linear"), _row("sk03-b", 1.3, 10, 20, "norm-linear", T=4),
            _row("sk06-c", 0.9, 10, 9, "swiglu-int8")]
    cases = {"norm-linear": ["sk03-a@T1", "sk03-b@T4", "sk03-b@T16"], "swiglu-int8": ["sk06-c@T1"], "swiglu": ["sk06-d@T1"]}
    lines = bench._by_family(rows, cases)
    body = {line.split()[0]: line.split() for line in lines[1:]}
    assert list(body) == ["norm-linear", "swiglu", "swiglu-int8"]  # the table's order, families without values too
    nl = body["norm-linear"]
    assert nl[1] == "fit" and int(nl[2]) == len(bench.families.rules_from("norm-linear"))
    assert nl[3:7] == ["3", "2", "1", "1"]  # cases, with a value, within the time goal, task counts within
    assert nl[7:9] == ["1.300", "2.000"]  # worst ratio, worst task ratio
    assert body["swiglu-int8"][1] == "holdout" and body["swiglu-int8"][2] == "0" and body["swiglu-int8"][7:9] == ["0.900", "0.900"]
    assert body["swiglu"][3:5] == ["1", "0"] and body["swiglu"][7] == "-"
    split = bench._by_split(rows, cases)
    assert split[0].startswith("fit") and "2 of 3 cases" in split[0] and "worst ratio 1.300 (sk03-b@T4)" in split[0]
    assert split[1].startswith("holdout") and "2 families, 1 of 2 cases" in split[1]
    table = bench._markdown(rows, cases)
    assert table.count("| outside |") == 1 and "By family:" in table
    assert "| `vec-fuse-whole-blocks` |" in table and "norm-linear-int8" in table  # the rules' families
