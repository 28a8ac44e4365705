"""Code-generation targets: one kernel text, two hosts (issue 11)."""

from __future__ import annotations

import ast

import pytest

from pattern_gen.emit.targets import TARGETS
from pattern_gen.output.instances import render_plan

SK03 = {"dims": {"K": 256, "N": 128}}


def _jit_function(source: str) -> str:
    """The source text of the module's @jit kernel function."""
    tree = ast.parse(source)
    (fn,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.endswith("_kernel")]
    lines = source.splitlines()
    return "\n".join(lines[fn.decorator_list[0].lineno - 1 : fn.end_lineno])


@pytest.mark.parametrize(
    ("skeleton", "atoms", "fields"),
    [
        ("SK-03", "AT-10", SK03),
        ("SK-03", "AT-10", {**SK03, "params": {"quant_mode": "int8_w8a8"}}),
        ("SK-04", "AT-10", {"dims": {"H": 256, "Q": 128, "NH": 4, "D": 64, "DKV": 64, "R": 32}}),
        ("SK-05", "AT-11", {"dims": {"H": 256, "NQ": 4, "NKV": 2, "D": 64}}),
    ],
)
def test_the_kernel_text_is_the_same_for_every_target(cat, resolve_req, skeleton, atoms, fields):
    texts = {}
    for target in TARGETS:
        plan = resolve_req(skeleton, atoms, target=None if target == "ptosim" else target, **fields)
        files = render_plan(cat, plan)
        kernel = files["kernel.py"]
        assert "\nfrom __future__ import annotations" not in kernel
        texts[target] = _jit_function(kernel)
        assert ") -> None:" not in texts[target]
    assert texts["ptosim"] == texts["pypto"]
    assert "import pypto\n" in render_plan(cat, resolve_req(skeleton, atoms, target="pypto", **fields))["kernel.py"]


def test_pypto_target_names_and_refusals(cat, resolve_req, problems):
    plan = resolve_req("SK-03", "AT-10", target="pypto", **SK03)
    assert plan.name.endswith("-pypto") and plan.target == "pypto"
    codes = problems("SK-03", "AT-10", target="pypto", options={"max_workspace_kb": 1024}, **SK03)
    assert [c for c, _ in codes] == ["bad-option"] and "PyPTO 0.2.0 has no runtime option 'max_workspace_kb'" in codes[0][1]
    codes = problems("SK-03", "AT-10", target="pytpo", **SK03)
    assert codes[0][0] == "unknown-target" and "did you mean 'pypto'" in codes[0][1]


def test_pypto_target_on_a_platform_pypto_cannot_simulate_writes_and_says_so(cat, resolve_req):
    plan = resolve_req("SK-03", "AT-10", target="pypto", platform="ascend950", params={"quant_mode": "mxfp8"}, **SK03)
    assert any("simulates only Atlas A2/A3" in n for n in plan.notes)
    test = next(text for rel, text in render_plan(cat, plan).items() if rel.startswith("test_"))
    assert "pytest.mark.skip(" in test and "reason=" in test


def test_run_target_pypto_without_pypto_is_bad_input(cli, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("pypto", "torch") else real(name, *a))
    made = cli("new", "--skeleton", "SK-03", "--dim", "K=256", "--dim", "N=128", "--target", "pypto", "--out", str(tmp_path), "-q")
    made.assert_ok()
    (folder,) = tmp_path.iterdir()
    run = cli("run", str(folder))
    run.assert_bad_input("instance")
    assert "pip install pypto==0.2.0 torch==2.13.0" in run.stderr and "pattern-gen[" not in run.stderr  # never the index name


def test_verify_says_what_to_expect_and_how_long_it_took(cli, tmp_path, monkeypatch):
    """PyPTO's CPU verifier can run for minutes: run --verify says so before it starts and reports
    the time after (a fake run: no pypto needed)."""
    import pattern_gen.cli.instances as cli_instances
    from pattern_gen.output.instances import RunResult
    from pattern_gen.output.pypto_run import PyptoRun

    made = cli("new", "--skeleton", "SK-03", "--dim", "K=256", "--dim", "N=128", "--target", "pypto", "--out", str(tmp_path), "-q")
    made.assert_ok()
    (folder,) = tmp_path.iterdir()
    monkeypatch.setattr(cli_instances, "run_pypto_instance", lambda *a, **k: PyptoRun(RunResult("x", 3, 0, passed=True), None, None))
    run = cli("run", str(folder), "--T", "3", "--verify")
    run.assert_ok()
    assert "CPU verifier computes every tile op" in run.stderr and "12 min" in run.stderr and "verified in" in run.stderr
