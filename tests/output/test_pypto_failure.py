"""A failure raised inside the installed PyPTO is PyPTO's: ``run`` says so (``pypto-failure``) and does
not tell the user to fix or regenerate the generated file; a failure in the file itself still does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pattern_gen.output.instances import call_instance
from pattern_gen.vocab.errors import PatternGenError


def _module(path: Path, name: str, text: str):
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.fixture
def fake_pypto(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "pypto"
    pkg.mkdir(parents=True)
    module = _module(pkg / "__init__.py", "pypto", (
        "def simulate():\n"
        "    raise RuntimeError('Errcode: FFFFFF!\\n[SIMULATION]: hasCall=0 func->tileOps.size=98\\nlibtile_fwk_simulation.so(...)')\n"
    ))
    monkeypatch.setitem(sys.modules, "pypto", module)
    return module


def test_an_error_inside_pypto_is_pyptos(tmp_path, fake_pypto):
    kernel = _module(tmp_path / "kernel.py", "fake_kernel", "import pypto\n\ndef run():\n    pypto.simulate()\n")
    with pytest.raises(PatternGenError) as info:
        call_instance(kernel, "run")
    (problem,) = info.value.problems
    assert problem.code == "pypto-failure"
    assert "PyPTO's error, not the file's" in problem.message and "[SIMULATION]: hasCall=0" in problem.message
    assert "libtile_fwk" not in problem.message, "the native stack is left out"
    assert "regenerate" not in problem.message


def test_an_error_in_the_file_is_the_files(tmp_path, fake_pypto):
    kernel = _module(tmp_path / "kernel2.py", "fake_kernel2", "import pypto\n\ndef run():\n    return 1 / 0\n")
    with pytest.raises(PatternGenError) as info:
        call_instance(kernel, "run")
    (problem,) = info.value.problems
    assert problem.code == "instance" and "ZeroDivisionError" in problem.message and "regenerate" in problem.message
