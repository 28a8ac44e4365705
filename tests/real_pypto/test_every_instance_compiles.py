"""Every a2a3 instance of the manifest, written for the pypto target, compiles and runs PyPTO
0.2.0's SIM cost model unchanged (issue 11). Skipped where pypto is not installed.

An entry whose manifest ``targets`` already hold ``pypto`` has its pypto twin committed in
generated/, and that twin's own generated test compiles and simulates the same kernel at T = 3
(and 2 and 1) with the same assertion (e2e_us > 0, tasks > 0) in the same slow lane: compiling it
here again bought nothing but minutes of PyPTO. Those entries are not compiled here;
``test_the_twins_cover_the_entries_left_to_them`` checks, without PyPTO, that each of them has that
twin (its kernel.py and golden.py as rendered now) and that the twin's test still runs SIM at T = 3.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

pytest.importorskip("pypto", reason="pypto is not installed: pip install -e '.[pypto]'")

from pattern_gen.catalogue import load_catalogue  # noqa: E402
from pattern_gen.output.instances import render_plan, write_instance  # noqa: E402
from pattern_gen.output.pypto_run import run_pypto_instance  # noqa: E402
from pattern_gen.plan.manifest import load_manifest, to_request  # noqa: E402
from pattern_gen.plan.resolver import resolve  # noqa: E402
from pattern_gen.vocab.resources import package_patterns_dir  # noqa: E402

CAT = load_catalogue([])
A2A3 = [e for e in load_manifest(package_patterns_dir() / "manifest.yaml").instances if (e.platform or "a2a3") == "a2a3"]
#: compiled by their committed twin's generated test (generated/<name>-pypto/test_*.py)
TWINNED = [e for e in A2A3 if "pypto" in e.targets]
ENTRIES = [e for e in A2A3 if "pypto" not in e.targets]
GENERATED = Path(__file__).resolve().parents[2] / "generated"


def _id(e) -> str:
    return f"{e.skeleton}-{e.atoms}-{e.params}-{e.dims}".replace(" ", "")


def _folder(entry, tmp_path):
    request = dataclasses.replace(to_request(entry), target="pypto", name=None)
    return write_instance(CAT, request, tmp_path)[1]


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_compiles_and_simulates_on_pypto(entry, tmp_path):
    done = run_pypto_instance(_folder(entry, tmp_path), T=3)
    assert done.pypto is not None and done.pypto["e2e_us"] > 0 and done.pypto["tasks"] > 0


@pytest.mark.parametrize("entry", TWINNED, ids=_id)
def test_the_twins_cover_the_entries_left_to_them(entry):
    plan = resolve(CAT, to_request(entry, "pypto"))
    twin = GENERATED / plan.name
    files = render_plan(CAT, plan)
    for name in ("kernel.py", "golden.py"):
        assert (twin / name).read_text(encoding="utf-8") == files[name], f"{twin.name}/{name} is not the kernel rendered now"
    (test,) = twin.glob("test_*.py")
    text = test.read_text(encoding="utf-8")
    t_values = re.search(r"^T_VALUES = \[(.*)\]$", text, re.M)
    assert t_values and "3" in [t.strip() for t in t_values.group(1).split(",")], test.name
    assert 'run_mode="sim"' in text and 'estimate["e2e_us"] > 0 and estimate["tasks"] > 0' in text, test.name
