"""Parity of the op registry (``pattern_gen.vocab.ops.OPS``) with everything that must know an op.

Adding an op is one ``OpSpec``, its ptosim function, its platform-profile entries and, for a new
family, a typing rule and a spelling macro. Each test here names what is still missing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import ptosim
from pattern_gen.cards import model as m
from pattern_gen.docs.describe import op_text
from pattern_gen.emit.render import TEMPLATES
from pattern_gen.emit.targets import TARGETS
from pattern_gen.flow.typer import OpTyper
from pattern_gen.flow.types import COp, ScalarArg, Var
from pattern_gen.vocab.expr import Num
from pattern_gen.vocab.ops import OPS
from pattern_gen.vocab.resources import package_patterns_dir

PROFILES = sorted((package_patterns_dir() / "platforms").glob("*.yaml"))


def _macros(path: Path) -> set[str]:
    return set(re.findall(r"\{%-?\s*macro\s+(\w+)\(", path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(OPS))
def test_ptosim_exports_the_call(name: str) -> None:
    spec = OPS[name]
    assert callable(getattr(ptosim, spec.pypto_name, None)), f"ptosim has no {spec.pypto_name!r} for op {name!r}: add it to ptosim and its __init__"


@pytest.mark.parametrize("name", sorted(OPS))
def test_flow_types_it(name: str) -> None:
    assert callable(getattr(OpTyper, f"op_{OPS[name].family}", None)), f"no OpTyper.op_{OPS[name].family} for op {name!r}"


def test_every_target_spells_every_op() -> None:
    shared = _macros(TEMPLATES / "ops.j2")
    for target in TARGETS.values():
        own = _macros(target.folder / "ops.j2") if (target.folder / "ops.j2").is_file() else set()
        missing = sorted({s.family for s in OPS.values()} - shared - own)
        assert not missing, f"target {target.name}: no macro for {missing} in ops.j2"
        for template in ("kernel.py.j2", "test.py.j2"):
            assert (target.folder / template).is_file(), f"target {target.name} lacks {template}"


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_every_profile_lists_the_dtype_checked_ops(profile: Path) -> None:
    from ptosim.vocabulary import OPS as TABLE  # a profile rules ptosim's ops, card syntax or not

    op_dtypes = yaml.safe_load(profile.read_text(encoding="utf-8"))["op_dtypes"]
    checked = {n for n, s in TABLE.items() if s.dtype_checked}
    assert not checked - set(op_dtypes), f"{profile.name}: op_dtypes lacks {sorted(checked - set(op_dtypes))}"
    assert not set(op_dtypes) - checked, f"{profile.name}: op_dtypes names unknown ops {sorted(set(op_dtypes) - checked)}"


@pytest.mark.parametrize("name", sorted(OPS))
def test_card_schema_takes_it(name: str) -> None:
    """A stage with the op parses as that op's model (the card union is built from OPS)."""
    spec = OPS[name]
    if not any(f.is_required() for f in spec.model.model_fields.values() if f.alias != "op" and f is not spec.model.model_fields.get("op")):
        stage = m.Stage.model_validate({"label": "s", "unit": "V", "ops": [{"op": name}]})  # nothing to give
        assert type(stage.ops[0]) is spec.model
        return
    with pytest.raises(Exception) as info:  # missing fields: the error names the op's own model
        m.Stage.model_validate({"label": "s", "unit": "V", "ops": [{"op": name}]})
    assert "unknown op" not in str(info.value), f"the card schema does not know {name!r}"
    assert spec.model.__name__ in str(info.value) or name in str(info.value)


@pytest.mark.parametrize("name", sorted(OPS))
def test_pseudo_code_renders(name: str) -> None:
    spec = OPS[name]
    attrs = {}
    for key in spec.attrs:
        attrs[key] = [Num(4), Num(8)] if key in spec.shape_attrs else ("NONE" if key == "mode" else True if key.endswith(("trans", "sat", "keepdim", "inplace")) else "FP32")
    if "dim" in attrs:
        attrs["dim"] = -1
    op = COp(name, "y", [Var("a"), ScalarArg(Num(2))], attrs, None, [], "AT-00", ())
    text = op_text(op)
    assert "{" not in text and text.strip(), text


def test_every_recorded_ptosim_op_with_card_syntax_is_a_card_op() -> None:
    """The card vocabulary is derived from ptosim's table: an op of a family with card syntax is a
    card op without an edit in pattern-gen (``zeros`` has no card syntax: cards say ``full``; gather
    and concat have none: the MoE router picks by a threshold on topk's values, not by index)."""
    from ptosim.vocabulary import OPS as TABLE

    for info in TABLE.values():
        if info.name in OPS:
            spec = OPS[info.name]
            assert (spec.unit, spec.footprint, spec.dtype_checked, spec.family) == (info.unit, info.footprint, info.dtype_checked, info.family)
    ptosim_only = {"zeros", "gather", "concat"}
    assert set(TABLE) - set(OPS) == ptosim_only, "a ptosim op of a family with card syntax is a card op"
