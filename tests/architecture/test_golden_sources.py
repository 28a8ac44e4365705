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
    sys.modules.pop("attention", None)


def test_every_shipped_atom_names_its_reference() -> None:
    """A shipped atom without an entry would be treated as a team's own and need golden/AT-NN.py."""
    from pattern_gen.catalogue import load_catalogue
    from pattern_gen.emit.references import ATOM_REFERENCES, reference_signature

    cat = load_catalogue([])
    atoms = {c.id for c in cat.atoms()}
    assert atoms <= set(ATOM_REFERENCES), f"no reference function named for {sorted(atoms - set(ATOM_REFERENCES))}"
    for function in set(ATOM_REFERENCES.values()):
        assert reference_signature(function).startswith(f"def {function}(")
