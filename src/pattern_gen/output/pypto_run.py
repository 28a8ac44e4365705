"""Running a pypto-target instance on the installed PyPTO: its SIM cost model (beside ptosim's
estimate of the same plan at the same T) or its CPU verifier (compared with the golden).

PyPTO is optional: without it every entry point here is one problem with the install command.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from ..catalogue.catalogue import Catalogue
from ..vocab.errors import PatternGenError, Problem
from .instances import (
    RunResult,
    call_instance,
    check_run_args,
    compare_with_golden,
    instance_request,
    load_instance_module,
    read_instance,
    run_instance,
    write_instance,
)

__all__ = ["PYPTO_INSTALL", "require_pypto", "run_pypto_instance", "ptosim_twin_estimate", "PyptoRun"]

PYPTO_INSTALL = "pip install pypto==0.2.0 torch==2.13.0 (CPU; or the pypto extra of the pattern-gen checkout: pip install -e '.[pypto]')"


@contextlib.contextmanager
def _quiet(log: Path) -> Iterator[None]:
    """PyPTO's C++ core and its helper scripts print progress (and a matplotlib traceback when that
    is not installed) on the process's stdout and stderr: send both to ``log``, so that
    pattern-gen's own output (and ``--json``) stays clean. Python exceptions still propagate."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "wb") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def require_pypto() -> None:
    """PatternGenError naming the install command when pypto or torch cannot be imported."""
    missing = [m for m in ("pypto", "torch") if importlib.util.find_spec(m) is None]
    if missing:
        raise PatternGenError(Problem("instance", f"running on PyPTO needs {' and '.join(missing)}: {PYPTO_INSTALL}"))


@dataclass
class PyptoRun:
    result: RunResult
    #: PyPTO's SIM estimate (sim) or None (verify)
    pypto: dict[str, Any] | None
    #: ptosim's estimate of the same plan at the same T (sim) or None
    ptosim: dict[str, Any] | None


def run_pypto_instance(folder: Path, *, T: int | None = None, seed: int = 0, verify: bool = False) -> PyptoRun:
    """Run a pypto-target instance: SIM (PyPTO's estimate) or, with ``verify``, the CPU verifier
    against the golden."""
    meta = read_instance(folder)
    if meta.get("target") != "pypto":
        raise PatternGenError(Problem("instance", f"{folder.name} is a {meta.get('target') or 'ptosim'} instance, not a pypto one: write one with `pattern-gen new … --target pypto`", str(folder)))
    T = check_run_args(meta, T, seed)
    require_pypto()
    kernel = load_instance_module(folder, "kernel")
    golden = load_instance_module(folder, "golden")
    result = RunResult(meta["name"], T, seed, passed=True)
    inputs = call_instance(golden, "make_inputs", T, seed=seed)
    with tempfile.TemporaryDirectory(prefix="pattern-gen-pypto-") as work, _quiet(Path(work) / "pypto.log"):
        outputs = call_instance(kernel, "run", inputs, run_mode="verify" if verify else "sim", workdir=work)
        estimate = None if verify else dict(getattr(kernel, "LAST_RUN", {}).get("estimate") or {})
    if verify:
        compare_with_golden(result, kernel, golden, inputs, outputs, meta.get("tolerances", {}))
    if estimate:
        estimate.pop("output", None)  # a temporary folder, gone now
        result.estimate = {"pypto": estimate}
    return PyptoRun(result, estimate, None)


def ptosim_twin_estimate(cat: Catalogue, folder: Path, T: int, seed: int = 0) -> dict[str, Any] | None:
    """ptosim's estimate of the plan of a pypto-target instance at ``T``: the same request
    rendered for ptosim in a temporary folder and run there."""
    meta = read_instance(folder)
    if not isinstance(meta.get("request"), dict):
        return None
    req = replace(instance_request(meta, str(folder / "instance.json")), target=None, name=None)
    with tempfile.TemporaryDirectory(prefix="pattern-gen-twin-") as work:
        _, twin, _ = write_instance(cat, req, Path(work))
        return run_instance(twin, T=T, seed=seed).estimate
