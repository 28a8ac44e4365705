"""The shape of the source tree: no import cycles, small modules, ptosim on its own.

The import graph is read from the source text (``source_imports``, with ``ast``): every import
counts, at module level, inside a function or under ``if TYPE_CHECKING:``. A function-level import
still is a dependency — it only runs later — so it may not close a cycle either, with one
sanctioned exception (``SANCTIONED``). The order of pattern-gen's packages is
``test_layers.py``'s.
"""

from __future__ import annotations

import ast

import pytest
from source_imports import IMPORTS, MODULES, SRC

#: module size limit (lines); a module over it does more than one job
MAX_LINES = 400

#: The one sanctioned import cycle: ptosim's ``Tensor`` overloads operators (``a + b``,
#: ``t[...]``, ``t.move(...)``) with the functions of ``ops``, ``indexing`` and ``scatter``, which
#: all build on ``tensor``. ``tensor.py`` imports them inside the operator methods, so the cycle
#: never runs at import time (a deliberate choice recorded in ARCHITECTURE.md); only these
#: edges, and only inside functions, may close a cycle.
SANCTIONED = {
    ("ptosim.tensor", "ptosim.ops"),
    ("ptosim.tensor", "ptosim.indexing"),
    ("ptosim.tensor", "ptosim.scatter"),
}


def _graph(skip_sanctioned: bool) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for imp in IMPORTS:
        if skip_sanctioned and imp.where == "function" and (imp.importer, imp.target) in SANCTIONED:
            continue
        graph[imp.importer].add(imp.target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        color[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if color.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in color:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        color[node] = 2
        return None

    for node in sorted(graph):
        if node not in color:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle() -> None:
    cycle = _cycle(_graph(skip_sanctioned=True))
    assert cycle is None, "import cycle (function-level imports count): " + " -> ".join(cycle or [])


def test_the_sanctioned_cycle_is_the_only_one_and_stays_inside_functions() -> None:
    """Each sanctioned edge exists, only as function-level imports, and without the exception the
    graph does have its cycle (else the exception is stale: drop it)."""
    for importer, target in sorted(SANCTIONED):
        found = [imp for imp in IMPORTS if (imp.importer, imp.target) == (importer, target)]
        assert found, f"{importer} no longer imports {target}: drop the exception from SANCTIONED"
        top = [imp.at for imp in found if imp.where != "function"]
        assert not top, f"{importer} imports {target} outside a function at {', '.join(top)}: an import-time cycle"
    assert _cycle(_graph(skip_sanctioned=False)) is not None, "ptosim's tensor/ops circle is gone: drop SANCTIONED"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_small(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name].relative_to(SRC)} has {lines} lines (> {MAX_LINES}): split it along a seam"


def test_ptosim_never_imports_pattern_gen() -> None:
    bad = [f"{imp.at}: {imp.importer} imports {imp.target}" for imp in IMPORTS if imp.importer.startswith("ptosim") and imp.target.startswith("pattern_gen")]
    assert not bad, "\n".join(bad)


def test_library_never_imports_the_cli() -> None:
    bad = [
        f"{imp.at}: {imp.importer} imports {imp.target}"
        for imp in IMPORTS
        if imp.importer.startswith("pattern_gen") and not imp.importer.startswith("pattern_gen.cli") and imp.target.startswith("pattern_gen.cli")
    ]
    assert not bad, "\n".join(bad)


def test_no_private_cross_module_imports() -> None:
    """``from .other import _helper`` couples two modules through a private name: make it public."""
    bad = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(("pattern_gen", "ptosim"))):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        bad.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {name}: from {'.' * node.level}{node.module or ''} import {alias.name}")
    assert not bad, "\n".join(bad)
