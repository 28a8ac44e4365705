"""The test tree cannot shadow a real package.

pytest puts pyproject's ``pythonpath`` entries on ``sys.path``. When that was ``tests``, the folder
``tests/pypto`` became the namespace package ``pypto`` on a machine without PyPTO, and every
``pytest.importorskip("pypto")`` passed instead of skipping. Only plain helper modules may sit on the
path, and none of them may carry the name of an importable package.
"""

from __future__ import annotations

import importlib.util
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pythonpath() -> list[Path]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [ROOT / entry for entry in config["tool"]["pytest"]["ini_options"].get("pythonpath", [])]


def test_only_helper_folders_are_on_the_path() -> None:
    for folder in _pythonpath():
        assert folder.is_dir(), folder
        assert folder != ROOT / "tests", "tests/ on sys.path lets a test folder shadow a package"
        packages = [p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))]
        assert not packages, f"{folder}: folders on the test path become importable packages: {packages}"


def test_no_helper_module_shadows_an_importable_name() -> None:
    for folder in _pythonpath():
        others = [p for p in sys.path if Path(p or ".").resolve() != folder.resolve()]
        for module in folder.glob("*.py"):
            found = importlib.machinery.PathFinder.find_spec(module.stem, others)
            assert found is None, f"{module.name} on the test path shadows {found.origin}"
