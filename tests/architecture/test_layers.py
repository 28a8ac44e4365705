"""pattern-gen's packages only look down: the order ARCHITECTURE.md draws, as a table.

Each package of ``src/pattern_gen`` may import the packages its row names and nothing else of
pattern-gen (ptosim, the simulator, sits below them all; the top-level ``pattern_gen`` package
only holds the version). Every import counts — module level, inside a function, under
``if TYPE_CHECKING:`` (``source_imports``) — and a back-edge fails with its ``file:line``.

The pipeline, bottom first::

    vocab < cards < catalogue < flow < plan < emit < output < tune < cli
    flow < checks < cli                    (validate's checks: only the CLI imports them)
    vocab < models < plan                  (Hugging Face configs: only vocab below them)
    plan < docs < cli                      (docs reads plans and written instance folders; it
                                            neither renders through emit nor runs through output)
    models < adapters                      (host-side helpers for the user's code)

``checks`` (``pattern-gen validate``) runs the flow expander over every parameter combination,
so it sits above ``flow``; ``catalogue`` below ``flow`` only loads and cross-references.
"""

from __future__ import annotations

from source_imports import IMPORTS, MODULES

_BASE = {"pattern_gen"}  # the version, importable from everywhere

#: package -> the pattern-gen packages it may import (besides itself, ``pattern_gen`` and ptosim)
ALLOWED: dict[str, set[str]] = {
    "vocab": set(),
    "models": {"vocab"},
    "cards": {"vocab"},
    "catalogue": {"vocab", "cards"},
    "flow": {"vocab", "cards", "catalogue"},
    "checks": {"vocab", "cards", "catalogue", "flow"},
    "plan": {"vocab", "models", "cards", "catalogue", "flow"},
    "emit": {"vocab", "models", "cards", "catalogue", "flow", "plan"},
    "output": {"vocab", "models", "cards", "catalogue", "flow", "plan", "emit"},
    "tune": {"vocab", "models", "cards", "catalogue", "flow", "plan", "emit", "output"},
    "docs": {"vocab", "models", "cards", "catalogue", "flow", "plan"},
    "adapters": {"vocab", "models"},
    "cli": {"vocab", "models", "cards", "catalogue", "flow", "checks", "plan", "emit", "output", "tune", "docs", "adapters"},
}


def _package(module: str) -> str | None:
    """``pattern_gen.flow.expand`` -> ``flow``; ``pattern_gen`` itself -> None; ptosim -> None."""
    parts = module.split(".")
    if parts[0] != "pattern_gen" or len(parts) == 1:
        return None
    return parts[1]


def test_every_package_has_a_row() -> None:
    packages = {_package(m) for m in MODULES} - {None}
    missing = sorted(p for p in packages if p not in ALLOWED)
    assert not missing, f"packages {missing} have no row in ALLOWED: place them in the order (and in ARCHITECTURE.md)"
    assert not set(ALLOWED) - packages, f"rows for packages that are gone: {sorted(set(ALLOWED) - packages)}"


def test_packages_only_import_below_themselves() -> None:
    bad = []
    for imp in IMPORTS:
        src, dst = _package(imp.importer), _package(imp.target)
        if src is None or dst is None or src == dst or imp.target in _BASE:
            continue
        if dst not in ALLOWED.get(src, set()):
            kind = "" if imp.where == "module" else f" ({imp.where}-level)"
            bad.append(f"{imp.at}: {imp.importer} imports {imp.target}{kind}: {src} may import only {', '.join(sorted(ALLOWED[src])) or 'nothing of pattern-gen'}")
    assert not bad, "back-edges against the layer order:\n" + "\n".join(bad)


def test_the_table_is_an_order() -> None:
    """No two packages may import each other, even by the table (the rows draw a DAG)."""
    for a, below in ALLOWED.items():
        for b in below:
            assert a not in ALLOWED.get(b, set()), f"{a} and {b} may import each other"
            assert ALLOWED.get(b, set()) <= below, f"{a} may import {b} but not everything {b} may: {sorted(ALLOWED[b] - below)}"
