"""Every a2a3 instance of the manifest, written for the pypto target, compiles and runs PyPTO
0.2.0's SIM cost model unchanged (issue 11). Skipped where pypto is not installed."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

pytest.importorskip("pypto", reason="pypto is not installed: pip install 'pattern-gen[pypto]'")

from pattern_gen.catalogue import load_catalogue  # noqa: E402
from pattern_gen.output.instances import write_instance  # noqa: E402
from pattern_gen.output.pypto_run import run_pypto_instance  # noqa: E402
from pattern_gen.plan.manifest import load_manifest, to_request  # noqa: E402
from pattern_gen.vocab.resources import package_patterns_dir  # noqa: E402

CAT = load_catalogue([])
ENTRIES = [e for e in load_manifest(package_patterns_dir() / "manifest.yaml").instances if (e.platform or "a2a3") == "a2a3"]


def _known_failure(entry) -> bool:
    """SK-05 at its seed dims (H 2048, NQ 16, NKV 8, D 128) does not compile on PyPTO 0.2.0:
    'Shape size mismatch: 262144 != -1024 … rawShape=[256, 1024], actualrawShape=[-1, 8, 128]'
    in its encoder (dev_encode.cpp). The same kernel at small dims compiles and verifies. A failed
    compile leaves PyPTO's process state unusable, so that case runs in a subprocess."""
    return entry.skeleton == "SK-05" and not entry.dims


def _folder(entry, tmp_path):
    request = dataclasses.replace(to_request(entry), target="pypto", name=None)
    return write_instance(CAT, request, tmp_path)[1]


@pytest.mark.parametrize(
    "entry",
    [e for e in ENTRIES if not _known_failure(e)],
    ids=lambda e: f"{e.skeleton}-{e.atoms}-{e.params}-{e.dims}".replace(" ", ""),
)
def test_compiles_and_simulates_on_pypto(entry, tmp_path):
    done = run_pypto_instance(_folder(entry, tmp_path), T=3)
    assert done.pypto is not None and done.pypto["e2e_us"] > 0 and done.pypto["tasks"] > 0


@pytest.mark.parametrize("entry", [e for e in ENTRIES if _known_failure(e)], ids=lambda e: e.skeleton)
def test_known_pypto_failure_still_fails(entry, tmp_path):
    """When PyPTO fixes it, this fails: then move the case back into the test above."""
    folder = _folder(entry, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pattern_gen.cli", "run", str(folder), "--T", "3"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert done.returncode == 2 and "Shape size mismatch" in done.stderr, done.stdout + done.stderr
