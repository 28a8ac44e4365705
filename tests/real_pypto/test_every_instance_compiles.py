"""Every a2a3 instance of the manifest, written for the pypto target, compiles and runs PyPTO
0.2.0's SIM cost model unchanged (issue 11). Skipped where pypto is not installed."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("pypto", reason="pypto is not installed: pip install -e '.[pypto]'")

from pattern_gen.catalogue import load_catalogue  # noqa: E402
from pattern_gen.output.instances import write_instance  # noqa: E402
from pattern_gen.output.pypto_run import run_pypto_instance  # noqa: E402
from pattern_gen.plan.manifest import load_manifest, to_request  # noqa: E402
from pattern_gen.vocab.resources import package_patterns_dir  # noqa: E402

CAT = load_catalogue([])
ENTRIES = [e for e in load_manifest(package_patterns_dir() / "manifest.yaml").instances if (e.platform or "a2a3") == "a2a3"]


def _folder(entry, tmp_path):
    request = dataclasses.replace(to_request(entry), target="pypto", name=None)
    return write_instance(CAT, request, tmp_path)[1]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: f"{e.skeleton}-{e.atoms}-{e.params}-{e.dims}".replace(" ", ""))
def test_compiles_and_simulates_on_pypto(entry, tmp_path):
    done = run_pypto_instance(_folder(entry, tmp_path), T=3)
    assert done.pypto is not None and done.pypto["e2e_us"] > 0 and done.pypto["tasks"] > 0
