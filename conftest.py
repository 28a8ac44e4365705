"""Which tests are ``slow``: deselected by the default run (pyproject's ``-m "not slow"``), run by
``python -m pytest -n auto -m slow`` — CI runs both.

Marked here, not in the files, so the generated instance folders stay the same text a team's
repository gets (their pytest has no ``slow`` marker). Slow are: everything that drives real PyPTO
(each compile takes seconds, a verifier run ~30–75 s), the docs site in a real browser, the
fuzzers and mutation sweeps, the golden sweep over every parameter value, and generated golden
cases above ``FAST_LANE_MAX_T`` tokens.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import importlib.abc
import os
import shutil
import sys
import tempfile
from pathlib import Path

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


# --- PyPTO's CPU verifier: its calculator built once per machine, not once per process -------------
#: PyPTO 0.2.0 builds a C++ library (CMake against torch, libtile_fwk_calculator.so) in a temporary
#: folder the first time a process runs its CPU verifier, and throws the build away: measured ~95 s of
#: a 100 s first verify under load, against 6 s for the next one in the same process. Every xdist
#: worker (and every pytest run of CI) paid it again. The same sources and torch build the same
#: library: build it once into a folder keyed by the pypto and torch installs, under a lock, and load
#: that. Where pypto is not imported nothing is patched.
PYPTO_CALCULATOR_CACHE = "PATTERN_GEN_PYPTO_CALCULATOR_CACHE"
_calculator_patched = False


def _patch_pypto_calculator(utils) -> None:
    global _calculator_patched
    if _calculator_patched or not hasattr(utils, "BuildOnlineManager"):
        return
    _calculator_patched = True
    BuildOnlineManager = utils.BuildOnlineManager
    build = BuildOnlineManager.build_and_load_calculator

    def build_once(self) -> None:
        if self.calculator_loaded:
            return
        try:
            torch_ctx = self._TorchContext()
            from importlib import metadata

            key = "|".join(
                (metadata.version("pypto"), torch_ctx.torch_version, torch_ctx.torch_root_dir,
                 str(torch_ctx.torch_c_use_cxx11_abi), str(self.pkg_lib_dir), sys.version)
            )
        except Exception:  # noqa: BLE001 — PyPTO's own path, with its own errors
            return build(self)
        root = Path(os.environ.get(PYPTO_CALCULATOR_CACHE) or Path(tempfile.gettempdir()) / "pattern-gen-pypto-calculator")
        root.mkdir(parents=True, exist_ok=True)
        final = root / hashlib.sha256(key.encode()).hexdigest()[:16]
        library = final / "lib" / "libtile_fwk_calculator.so"
        with open(root / "build.lock", "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for this build, not builds beside it
            if not library.is_file():
                work = Path(tempfile.mkdtemp(dir=root))
                try:
                    ctx = self._CMakeContext.CompileContext(src_dir=Path(self.pkg_lib_dir, "calculator"), tmp_dir=work)
                    ctx.cfg_cmd_ext = (
                        f"-DPY3_MOD_TORCH_VERSION={torch_ctx.torch_version}"
                        f" -DPY3_MOD_TORCH_ROOT_PATH={torch_ctx.torch_root_dir}"
                        f" -DPY3_MOD_TORCH_C_GLIBCXX_USE_CXX11_ABI={torch_ctx.torch_c_use_cxx11_abi}"
                    )
                    installed = self._CMakeContext().compile(ctx=ctx)
                    if not (installed / "lib" / "libtile_fwk_calculator.so").is_file():
                        raise RuntimeError(f"{installed}/lib/libtile_fwk_calculator.so not exists.")
                    shutil.rmtree(final, ignore_errors=True)
                    os.replace(installed, final)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
        ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)
        self.calculator_loaded = True

    BuildOnlineManager.build_and_load_calculator = build_once


class _PatchPyptoOnImport(importlib.abc.MetaPathFinder):
    """Patches ``pypto._utils`` when something imports it (importing pypto here would cost every
    run, the fast lane's too, seconds)."""

    def find_spec(self, name, path, target=None):
        if name != "pypto._utils":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                exec_module = spec.loader.exec_module

                def exec_and_patch(module, _exec=exec_module):
                    _exec(module)
                    _patch_pypto_calculator(module)

                spec.loader.exec_module = exec_and_patch
                return spec
        return None


if "pypto._utils" in sys.modules:
    _patch_pypto_calculator(sys.modules["pypto._utils"])
else:
    sys.meta_path.insert(0, _PatchPyptoOnImport())
