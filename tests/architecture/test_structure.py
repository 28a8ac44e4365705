"""The shape of the source tree: no import cycles, small modules, layers that only look down.

The import graph is built from the source text (``ast``), not by importing: module-level imports
only (an import inside a function is a deliberate lazy import, one inside ``if TYPE_CHECKING:``
never runs). Importing a name from a package counts as importing its ``__init__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
#: module size limit (lines); a module over it does more than one job
MAX_LINES = 400


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module) -> list[ast.stmt]:
    found: list[ast.stmt] = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If) and not _is_type_checking(node):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                for h in node.handlers:
                    walk(h.body)

    walk(tree.body)
    return found


def _edges(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    targets: set[str] = set()
    for node in _top_level_imports(tree):
        if isinstance(node, ast.Import):
            bases = [a.name for a in node.names]
            candidates = bases
        else:
            if node.level:
                base_parts = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            candidates = [base] + [f"{base}.{a.name}" for a in node.names]
        for c in candidates:
            # the module itself, else its closest package
            parts = c.split(".")
            while parts and ".".join(parts) not in MODULES:
                parts.pop()
            if parts and ".".join(parts) != name:
                targets.add(".".join(parts))
    return targets


GRAPH = {name: _edges(name, path) for name, path in MODULES.items()}


def _cycle() -> list[str] | None:
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        color[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH.get(node, ())):
            if color.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in color:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        color[node] = 2
        return None

    for node in sorted(GRAPH):
        if node not in color:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle() -> None:
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_is_small(name: str) -> None:
    lines = len(MODULES[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name].relative_to(SRC)} has {lines} lines (> {MAX_LINES}): split it along a seam"


def _imports_of(prefix: str) -> dict[str, set[str]]:
    return {n: e for n, e in GRAPH.items() if n == prefix or n.startswith(prefix + ".")}


def test_ptosim_never_imports_pattern_gen() -> None:
    bad = {n: sorted(e for e in es if e.startswith("pattern_gen")) for n, es in _imports_of("ptosim").items()}
    assert not {n: e for n, e in bad.items() if e}


def test_library_never_imports_the_cli() -> None:
    bad = {
        n: sorted(e for e in es if e.startswith("pattern_gen.cli"))
        for n, es in GRAPH.items()
        if n.startswith("pattern_gen") and not n.startswith("pattern_gen.cli")
    }
    assert not {n: e for n, e in bad.items() if e}


def test_vocab_is_the_bottom_layer() -> None:
    bad = {
        n: sorted(e for e in es if e.startswith("pattern_gen") and not e.startswith("pattern_gen.vocab") and e != "pattern_gen")
        for n, es in _imports_of("pattern_gen.vocab").items()
    }
    assert not {n: e for n, e in bad.items() if e}


def test_no_private_cross_module_imports() -> None:
    """``from .other import _helper`` couples two modules through a private name: make it public."""
    bad = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(("pattern_gen", "ptosim"))):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        bad.append(f"{name}: from {'.' * node.level}{node.module or ''} import {alias.name}")
    assert not bad, "\n".join(bad)
