"""ptosim's import structure, read from the source with ``ast`` (nothing is imported).

* The module-level import graph has no cycle. Only statements run at import time count: imports
  inside functions (and classes' methods) and under ``if TYPE_CHECKING:`` are left out. Importing
  ``ptosim.a.b`` from outside the package ``ptosim.a`` also runs ``ptosim/a/__init__.py``, so it
  counts as an import of ``ptosim.a`` too.
* No ptosim module imports an underscore-prefixed name from another ptosim module.
* ptosim never imports pattern_gen (anywhere, functions included).
* No module is much over 400 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ptosim

PKG_DIR = Path(ptosim.__file__).resolve().parent
PKG = "ptosim"
MAX_LINES = 420  # "about 400"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PKG_DIR.rglob("*.py"))}
TREES: dict[str, ast.Module] = {name: ast.parse(p.read_text(encoding="utf-8"), str(p)) for name, p in MODULES.items()}


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module name an ``ImportFrom`` reads from."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level(body: list[ast.stmt]):
    """Import statements executed when the module body runs (not in functions, not TYPE_CHECKING)."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            yield stmt
        elif isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from _module_level(stmt.body)
            yield from _module_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _module_level(block)
        elif isinstance(stmt, (ast.With, ast.For, ast.While)):
            yield from _module_level(stmt.body)
        elif isinstance(stmt, ast.ClassDef):  # a class body runs at import time; its methods do not
            yield from _module_level(stmt.body)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """ptosim modules an import statement runs, including packages it enters on the way."""
    names: set[str] = set()
    if isinstance(node, ast.Import):
        names.update(alias.name for alias in node.names)
    else:
        source = _resolve(module, node)
        names.add(source)
        names.update(f"{source}.{alias.name}" for alias in node.names)  # ``from . import cost``
    found = set()
    for name in names:
        if name != PKG and not name.startswith(PKG + "."):
            continue
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            target = ".".join(parts[:i])
            if target not in MODULES or target == module:
                continue
            # the packages enclosing the importer are already being imported: no new edge
            if _is_package(target) and (module == target or module.startswith(target + ".")):
                continue
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    return {m: set().union(*(_targets(m, n) for n in _module_level(tree.body))) for m, tree in TREES.items()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_source_is_found():
    assert {"ptosim", "ptosim.ops", "ptosim.cost", "ptosim.cost.model", "ptosim.trace"} <= set(MODULES)


def test_module_level_imports_have_no_cycle():
    graph = import_graph()
    assert "ptosim.cost" in graph["ptosim.trace"]  # entering a sub-package counts
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_the_cycle_finder_finds_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_private_names_cross_modules():
    offenders = []
    for module, tree in TREES.items():
        for node in ast.walk(tree):  # anywhere, functions included
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _resolve(module, node)
            if source != PKG and not source.startswith(PKG + "."):
                continue
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    offenders.append(f"{module}:{node.lineno} imports {name} from {source}")
    assert not offenders, "\n".join(offenders)


def test_ptosim_never_imports_pattern_gen():
    offenders = []
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [_resolve(module, node)]
            else:
                continue
            offenders += [f"{module}:{node.lineno} imports {n}" for n in names
                          if n == "pattern_gen" or n.startswith("pattern_gen.")]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    lines = len(MODULES[module].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it along a real seam"
