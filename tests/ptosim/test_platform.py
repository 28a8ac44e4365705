"""Platform profiles: the typed schema (profile_schema.py), its errors, and the cost section."""

from __future__ import annotations


import numpy as np
import pytest
import yaml
from pydantic import BaseModel

import ptosim
from ptosim.cost import CostParams
from ptosim.cost.lower import nbytes_of
from ptosim.dtypes import DataType
from ptosim.errors import PlatformError
from ptosim.platform import load_platform, profile_from_mapping
from ptosim.profile_schema import OP_DTYPE_OPS, OPS, CostSection
from ptosim.tensor import unwritten_fill


def _raw(name: str = "a2a3") -> dict:
    with open(load_platform(name).source, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _error(data: dict) -> PlatformError:
    with pytest.raises(PlatformError) as info:
        profile_from_mapping(data, source="test.yaml")
    return info.value


@pytest.mark.parametrize("name", ["a2a3", "ascend950"])
def test_shipped_profiles_load(name):
    p = load_platform(name)
    assert p.name == name and p.aic > 0 and p.ub > 0
    assert set(p.footprint_factor) == {"unary", "binary", "reduce", "broadcast"}
    assert set(p.op_dtypes) <= set(OP_DTYPE_OPS)
    assert p.raw["name"] == name  # the whole mapping is kept for the cost model


def test_a_misspelt_top_level_key_names_the_right_one():
    data = _raw()
    data["op_dtype"] = data.pop("op_dtypes")
    err = _error(data)
    assert err.code == "platform"
    assert err.path == ("op_dtype",)
    assert "'op_dtype'" in str(err) and "did you mean 'op_dtypes'?" in str(err)
    assert err.problems == [(("op_dtype",), err.problems[0][1])]


def test_a_misspelt_nested_key_reports_its_path():
    data = _raw()
    ff = data["vec_rules"]["footprint_factor"]
    ff["unry"] = ff.pop("unary")
    err = _error(data)
    paths = [p for p, _m in err.problems]
    assert ("vec_rules", "footprint_factor", "unry") in paths
    assert ("vec_rules", "footprint_factor", "unary") in paths  # now missing as well
    text = dict(err.problems)[("vec_rules", "footprint_factor", "unry")]
    assert "did you mean 'unary'?" in text


def test_every_problem_is_listed_and_path_is_the_first():
    data = _raw()
    data["cores"]["aic"] = 0
    data["vec_rules"]["footprint_factor"]["binary"] = 0
    data["cube_rules"]["capacity_align"].pop("default")
    data["dtypes"].append("FP33")
    data["clock_mhz"] = 0
    err = _error(data)
    paths = [p for p, _m in err.problems]
    assert err.path == paths[0]
    assert ("cores", "aic") in paths
    assert ("clock_mhz",) in paths
    assert ("vec_rules", "footprint_factor", "binary") in paths
    assert ("cube_rules", "capacity_align") in paths
    assert ("dtypes", len(data["dtypes"]) - 1) in paths
    messages = " | ".join(m for _p, m in err.problems)
    assert "did you mean 'FP32'?" in messages and "'default'" in messages


@pytest.mark.parametrize("kind", ["unary", "binary", "reduce", "broadcast"])
def test_every_footprint_kind_is_required(kind):
    data = _raw()
    del data["vec_rules"]["footprint_factor"][kind]
    err = _error(data)
    assert err.path == ("vec_rules", "footprint_factor", kind)
    assert f"lacks key {kind!r}" in str(err)


def test_op_dtypes_takes_ptosim_ops_and_known_dtypes_only():
    data = _raw()
    data["op_dtypes"]["summ"] = ["FP32"]
    data["op_dtypes"]["add"] = ["BF61"]
    err = _error(data)
    texts = dict(err.problems)
    assert "did you mean 'sum'?" in texts[("op_dtypes", "summ")]
    assert "did you mean 'BF16'?" in texts[("op_dtypes", "add", 0)]


def test_cost_section_typos_are_errors():
    data = _raw()
    data["cost"]["latency"]["freq_tran"] = data["cost"]["latency"].pop("freq_trans")
    err = _error(data)
    assert err.path == ("cost", "latency", "freq_tran")
    assert "did you mean 'freq_trans'?" in str(err)


def test_the_ops_lists_match_the_api():
    assert set(OPS) <= set(ptosim.__all__)
    assert set(OP_DTYPE_OPS) <= set(OPS)


def test_other_platform_errors_have_no_problems():
    with pytest.raises(PlatformError) as info:
        load_platform("no_such_platform")
    assert info.value.path == () and info.value.problems == []


# --- the cost section: defaults written once -------------------------------------------------------


def test_cost_defaults_come_from_the_schema():
    data = _raw()
    del data["cost"]
    params = CostParams.from_profile(profile_from_mapping(data))
    assert params.cost == CostSection()  # every default written once, in the schema
    assert params.cost.latency.freq_trans == CostSection.model_fields["latency"].default.freq_trans == 2000
    ub = data["buffers"]["UB"]
    assert params.vec_ub_limit == ub * 438272 // 196608  # a2a3's fitted limit, scaled with the UB
    a2a3 = CostParams.from_profile(load_platform("a2a3"))
    assert a2a3.vec_ub_limit == 438272 == a2a3.cost.vec_subgraph_ub_limit_bytes


def test_the_scalar_defaults_are_what_a2a3_states():
    """A profile that leaves a coefficient out gets a2a3's value; only tables (level1, ratio_one,
    lowering) and the UB limit (scaled with the UB) default to something else."""
    def scalars(section, prefix=""):
        out = {}
        for key, value in section:
            if isinstance(value, BaseModel):
                out.update(scalars(value, f"{prefix}{key}."))
            elif not isinstance(value, dict) and key != "vec_subgraph_ub_limit_bytes":
                out[prefix + key] = value
        return out

    assert scalars(CostParams.from_profile(load_platform("a2a3")).cost) == scalars(CostSection())


def test_cost_section_values_are_read():
    c = CostParams.from_profile(load_platform("ascend950")).cost
    assert c.latency.freq_trans == 1600 and c.sched.aicpu_count == 7
    assert c.latency.ratio_one["FP32"] == frozenset({"DIV", "EXP", "LN", "SQRT"})
    assert c.lowering["rsqrt"] == ("SQRT", "VEC_DUP", "DIV")


# --- dtypes and the never-written fill --------------------------------------------------------------


@pytest.mark.parametrize("dt", list(DataType))
def test_nbytes_of_reads_the_dtype_table(dt):
    assert nbytes_of(dt.short) == dt.nbytes


def test_unwritten_fill():
    assert np.isnan(unwritten_fill(DataType.DT_BF16)) and np.isnan(unwritten_fill("FP32"))
    assert unwritten_fill(DataType.DT_INT32) == np.iinfo(np.int32).min
    assert unwritten_fill("INT8") == -128
    assert unwritten_fill(DataType.DT_UINT8) == 0
    assert unwritten_fill(DataType.DT_BOOL) is True


def test_dtype_sizes_and_kinds_match_their_storage_types():
    """The sizes the resolver uses without loading ml_dtypes are those of the NumPy storage types."""
    from ptosim.dtypes import DataType

    for member in DataType:
        dt = member.np_dtype
        assert member.nbytes == dt.itemsize, member
        kind = {"f": "float", "V": "float", "i": "int", "u": "uint", "b": "bool"}[dt.kind]
        assert member.is_float == (kind == "float") and member.is_int == (kind in ("int", "uint")), member
