"""Code-generation targets as data: their names, the default, the module a kernel imports as
``pypto``, the names each reserves, the PyPTO version it keeps to and the platforms it runs here.

Pure data, so every step may ask about a target (``flow``: the names a card may not define;
``plan``: a request's target, the name token, the options the version takes). The templates of
a target — its folder — are emit's (``emit/targets``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .identifiers import PYTHON_RESERVED

__all__ = ["TargetSpec", "TARGETS", "DEFAULT_TARGET", "KERNEL_RESERVED", "RESERVED", "target_spec"]

#: Names a card may not define at the top level: kernel-level names of the emitted code (every
#: target's host code uses them) and Python's keywords and builtins the kernel relies on.
KERNEL_RESERVED = frozenset({"pypto", "np", "tile", "t_off", "T", "run", "kernel", "inputs", "outputs", "opts"}) | PYTHON_RESERVED


@dataclass(frozen=True)
class TargetSpec:
    """One code-generation target, as data (its templates live in ``emit/targets/<name>/``)."""

    name: str
    #: what the target runs on, for plans and docs
    title: str
    #: the Python module the kernel imports as ``pypto``
    module: str
    #: names the target's host code defines beside the kernel (on top of ``KERNEL_RESERVED``)
    reserved: frozenset[str] = frozenset()
    #: the PyPTO version whose option set the target's kernels must keep to (``upstream``: the
    #: reference digest's, which ptosim validates)
    pypto_version: str = "upstream"
    #: platforms the target can run here (None: every platform of the catalogue)
    simulates: frozenset[str] | None = None
    #: why the others cannot (shown in the plan and as the test's skip reason)
    simulates_why: str = ""

    def cannot_run(self, platform: str) -> str:
        """Why this target cannot run ``platform`` here ("" when it can)."""
        if self.simulates is None or platform in self.simulates:
            return ""
        return f"{self.simulates_why} The kernel is written; its PyPTO test skips."

    @property
    def all_reserved(self) -> frozenset[str]:
        return KERNEL_RESERVED | self.reserved


TARGETS: dict[str, TargetSpec] = {
    "ptosim": TargetSpec(
        name="ptosim",
        title="ptosim, the bundled NumPy tile simulator",
        module="ptosim",
        reserved=frozenset({"UNROLL", "PLATFORM", "INPUTS", "OUTPUTS", "Mapping", "unwritten_fill", "np"}),
    ),
    "pypto": TargetSpec(
        name="pypto",
        title="real PyPTO 0.2.0 (SIM cost model, CPU verifier, NPU)",
        module="pypto",
        reserved=frozenset(
            {"UNROLL", "PLATFORM", "INPUTS", "OUTPUTS", "PYPTO_VERSION", "LAST_RUN", "Mapping", "Any", "glob", "json", "os", "tempfile", "torch"}
        ),
        pypto_version="0.2.0",
        simulates=frozenset({"a2a3"}),
        simulates_why="PyPTO 0.2.0 from PyPI simulates only Atlas A2/A3 (NpuArch DAV_2201, A2A3.ini); scaled_mm and FP8 need DAV_3510.",
    ),
}

DEFAULT_TARGET = "ptosim"

#: Names a card may not define at the top level: kernel-level names of every target's emitted code.
RESERVED = frozenset().union(*(target.all_reserved for target in TARGETS.values()))


def target_spec(name: str) -> TargetSpec:
    """The target called ``name`` (KeyError names the known ones)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}") from None
