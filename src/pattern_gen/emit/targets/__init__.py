"""Code-generation targets: where the emitted kernel runs.

A target is one folder here: a ``Target`` (its module, the names it reserves, its host wrapper
and test templates). The ``@jit`` kernel function itself is target-neutral
(``emit/templates/kernel_body.j2``): every target emits the same text, valid PyPTO.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Target", "TARGETS", "DEFAULT_TARGET", "get_target", "KERNEL_RESERVED"]

_HERE = Path(__file__).resolve().parent

#: Names a card may not define at the top level: kernel-level names of the emitted code (every
#: target's host code uses them) and Python's keywords and builtins the kernel relies on.
KERNEL_RESERVED = frozenset(
    {"pypto", "np", "tile", "t_off", "T", "run", "kernel", "inputs", "outputs", "opts"}
    | set(keyword.kwlist)
    | {"sum", "abs", "min", "max", "range", "len", "int", "float", "list", "dict"}
)


@dataclass(frozen=True)
class Target:
    """One code-generation target."""

    name: str
    #: what the target runs on, for plans and docs
    title: str
    #: the Python module the kernel imports as ``pypto``
    module: str
    #: the folder holding ``kernel.py.j2`` (header + host wrapper) and ``test.py.j2``
    folder: Path
    #: names the target's host code defines beside the kernel (on top of ``KERNEL_RESERVED``)
    reserved: frozenset[str] = frozenset()

    @property
    def all_reserved(self) -> frozenset[str]:
        return KERNEL_RESERVED | self.reserved


TARGETS: dict[str, Target] = {
    "ptosim": Target(
        name="ptosim",
        title="ptosim, the bundled NumPy tile simulator",
        module="ptosim",
        folder=_HERE / "ptosim",
        reserved=frozenset({"UNROLL", "PLATFORM", "INPUTS", "OUTPUTS", "Mapping", "unwritten_fill"}),
    ),
}

DEFAULT_TARGET = "ptosim"


def get_target(name: str) -> Target:
    """The target called ``name`` (KeyError names the known ones)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}") from None
