"""The import graph of ``src/``, read from the source text with ``ast`` (nothing is imported).

Every import counts — at module level, inside a function (a deliberate lazy import, still a
dependency) and under ``if TYPE_CHECKING:`` — each with its line and where it sits, so a test can
say which import breaks a rule, at ``file:line``. Importing a name from a package counts as
importing its ``__init__``; ``from pkg import mod`` counts as importing ``pkg.mod``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


#: dotted module name -> its file
MODULES = _modules()


@dataclass(frozen=True)
class Import:
    """One import of one module by another."""

    importer: str
    target: str
    line: int
    #: "module" (runs at import time), "function" (inside a def: runs when called) or
    #: "type-checking" (under ``if TYPE_CHECKING:``: never runs)
    where: str

    @property
    def at(self) -> str:
        return f"{MODULES[self.importer].relative_to(SRC.parent)}:{self.line}"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, where))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, "function" if where == "module" else where)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    walk(ast.Module(body=[stmt], type_ignores=[]), "type-checking")
                for stmt in child.orelse:
                    walk(ast.Module(body=[stmt], type_ignores=[]), where)
            else:
                walk(child, where)

    walk(tree, "module")
    return found


def imports_of(name: str) -> list[Import]:
    """Every import of module ``name`` that names a module of ``src/`` (third-party ones left out)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: list[Import] = []
    for node, where in _import_nodes(tree):
        if isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            if node.level:
                base_parts = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            candidates = [base] + [f"{base}.{a.name}" for a in node.names]
        targets = set()
        for c in candidates:
            parts = c.split(".")  # the module itself, else its closest package
            while parts and ".".join(parts) not in MODULES:
                parts.pop()
            if parts and ".".join(parts) != name:
                targets.add(".".join(parts))
        out += [Import(name, t, node.lineno, where) for t in sorted(targets)]
    return out


#: every import of every module of ``src/``
IMPORTS: list[Import] = [imp for name in sorted(MODULES) for imp in imports_of(name)]
