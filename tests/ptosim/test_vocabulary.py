"""ptosim's one table of ops, dtypes and cast modes (``ptosim.vocabulary``) against what uses it:
every op is defined where the table says and dtype-checked by every profile; every dtype's storage type
has the table's size and kind; the enum codes are real PyPTO 0.2.0's (checked when it is installed)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ptosim
from ptosim.platform import available_platforms, load_platform
from ptosim.vocabulary import CAST_MODES, DTYPES, OPS


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_is_defined_where_the_table_says_and_exported(name: str) -> None:
    info = OPS[name]
    module = importlib.import_module(f"ptosim.{info.module}")
    assert callable(getattr(module, name, None)), f"ptosim.{info.module} defines no {name}"
    assert getattr(ptosim, name) is getattr(module, name)
    assert name in ptosim.__all__


@pytest.mark.parametrize("platform", available_platforms())
def test_every_profile_checks_the_checked_ops(platform: str) -> None:
    """(A tile op the profile's ``level1`` does not fit is priced by its level-0 rule, as in PyPTO.)"""
    profile = load_platform(platform)
    for info in OPS.values():
        if info.dtype_checked:
            assert info.name in profile.op_dtypes, f"{platform}: op_dtypes lacks {info.name}"


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_dtype_storage_matches_the_table(name: str) -> None:
    spec = DTYPES[name]
    member = getattr(ptosim, f"DT_{name}")
    assert member.short == name and member.value == spec.code
    assert np.dtype(member.np_dtype).itemsize == spec.nbytes == ptosim.bytes_of(member)
    kind = {"f": "float", "V": "float", "i": "int", "u": "uint", "b": "bool"}[np.dtype(member.np_dtype).kind]
    assert kind == spec.kind


def test_cast_modes_in_pypto_order() -> None:
    assert [m.name for m in ptosim.CastMode] == [f"CAST_{m}" for m in CAST_MODES]
    assert [m.value for m in ptosim.CastMode] == list(range(len(CAST_MODES)))


def test_codes_are_real_pyptos() -> None:
    """The enum codes ptosim gives DataType and CastMode are the ones PyPTO 0.2.0 uses."""
    pypto = pytest.importorskip("pypto")
    for name, spec in DTYPES.items():
        real = getattr(pypto.DataType, f"DT_{name}", None)
        assert real is not None, f"PyPTO has no DT_{name}"
        assert int(real.value if hasattr(real, "value") else real) == spec.code, name
    for i, mode in enumerate(CAST_MODES):
        real = getattr(pypto.CastMode, f"CAST_{mode}")
        assert int(real.value if hasattr(real, "value") else real) == i, mode
    for name in OPS:
        assert callable(getattr(pypto, name, None)), f"PyPTO 0.2.0 has no pypto.{name}"
