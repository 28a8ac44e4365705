"""Code-generation targets: where the emitted kernel runs.

What a target is — its name, module, reserved names, PyPTO version — is data in
``vocab/targets.py`` (every step may ask). What is emit's is the target's folder here: its
``kernel.py.j2`` (header, import, host wrapper) and ``test.py.j2``. The ``@jit`` kernel function
itself is target-neutral (``emit/templates/kernel_body.j2``): every target emits the same text,
valid PyPTO.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from ...vocab.targets import TARGETS as SPECS
from ...vocab.targets import TargetSpec

__all__ = ["Target", "TARGETS", "get_target"]

_HERE = Path(__file__).resolve().parent


class Target(TargetSpec):
    """A target with its template folder."""

    @property
    def folder(self) -> Path:
        """The folder holding ``kernel.py.j2`` (header + host wrapper) and ``test.py.j2``."""
        return _HERE / self.name


TARGETS: dict[str, Target] = {name: Target(**{f.name: getattr(spec, f.name) for f in fields(spec)}) for name, spec in SPECS.items()}


def get_target(name: str) -> Target:
    """The target called ``name`` (KeyError names the known ones)."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}") from None
