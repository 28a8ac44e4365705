"""The hand-written golden references are Python files of their own: each imports and defines
``make_inputs``/``golden`` (their standalone header is not inlined into instances)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from pattern_gen.emit.render import GOLDEN


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("SK-*.py")), ids=lambda p: p.stem)
def test_composition_imports_alone(path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(GOLDEN))
    spec = importlib.util.spec_from_file_location(f"golden_{path.stem.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.make_inputs) and callable(module.golden)
    sys.modules.pop("atoms", None)
