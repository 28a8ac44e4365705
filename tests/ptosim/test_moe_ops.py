"""The MoE router's mask and pick ops (issue #32, SK-07): the comparisons gt/ge/eq/ne/lt/le,
``where``, ``gather`` and ``concat``. Expected values come from NumPy (exact: float64, integers,
bit patterns), torch, or real PyPTO 0.2.0's CPU verify output (slow tests), never from ptosim."""

# No `from __future__ import annotations`: real PyPTO reads the test kernels' annotations.
import operator
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim.cost.model import estimate
from ptosim.errors import DTypeError, ShapeError

from .test_router_ops import run_pypto_verify

RNG = np.random.default_rng(3232)
FLOATS = {"BF16": ml_dtypes.bfloat16, "FP16": np.float16, "FP32": np.float32}
INTS = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32}
COMPARE = {"gt": operator.gt, "ge": operator.ge, "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le}


def tie_laden(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Small integers as ``dtype``: many equal pairs; floats also get NaN, -0.0 and 0.0."""
    x = RNG.integers(-3, 4, shape).astype(dtype)
    if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16:
        flat = x.reshape(-1)
        flat[:3] = np.array([np.nan, -0.0, 0.0], np.float32).astype(dtype)
    return x


def cost_runs(platform: str = "a2a3") -> None:
    from .conftest import run_ops
    est = estimate(run_ops.last_kernel.last_record, platform)
    assert est.t1 > est.t0


# --- comparisons ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", COMPARE)
@pytest.mark.parametrize("dt", [*FLOATS, *INTS])
def test_compare_is_exact_and_bool(run, name, dt):
    dtype = {**FLOATS, **INTS}[dt]
    x, y = tie_laden((16, 64), dtype), tie_laden((16, 64), dtype)
    y.reshape(-1)[:3] = x.reshape(-1)[[1, 2, 1]]  # NaN vs -0.0, 0.0 vs 0.0, -0.0 vs -0.0 (floats)
    out = run(getattr(pypto, name), x, y)
    want = COMPARE[name](x.astype(np.float64), y.astype(np.float64))  # NumPy's IEEE compare, exact in float64
    assert out.dtype == np.bool_ and out.shape == (16, 64)
    np.testing.assert_array_equal(out, want)
    cost_runs()


@pytest.mark.parametrize("name", COMPARE)
def test_compare_broadcasts_a_column_and_mixes_float_dtypes(run, name):
    x = RNG.standard_normal((16, 64)).astype(np.float32)
    col = RNG.standard_normal((16, 1)).astype(ml_dtypes.bfloat16)
    out = run(getattr(pypto, name), x, col)
    np.testing.assert_array_equal(out, COMPARE[name](x.astype(np.float64), col.astype(np.float64)))
    cost_runs()


@pytest.mark.parametrize("name", COMPARE)
def test_compare_with_a_float_rounds_it_to_the_inputs_dtype(run, name):
    """BF16 ``x > 0.1`` compares with bf16(0.1) = 0.10009765625 (measured on PyPTO 0.2.0)."""
    x = np.array([0.09999, 0.1, 0.10009765625, 0.1001], np.float64).astype(ml_dtypes.bfloat16)
    x = np.tile(np.concatenate([x, -x]), (8, 8))
    out = run(lambda t: getattr(pypto, name)(t, 0.1), x)
    np.testing.assert_array_equal(out, COMPARE[name](x.astype(np.float64), 0.10009765625))
    cost_runs()


def test_compare_with_a_float_truncates_it_for_integer_inputs(run):
    """PyPTO's Element(DT_INT32, -1.5) holds -1 (measured)."""
    x = np.tile(np.arange(-4, 4, dtype=np.int32), (8, 8))
    np.testing.assert_array_equal(run(lambda t: pypto.gt(t, -1.5), x), x > -1)
    np.testing.assert_array_equal(run(lambda t: pypto.le(t, 2.7), x), x <= 2)


def test_compare_refuses_an_int_scalar(run):
    """PyPTO 0.2.0: gt(x, 0) raises TypeError "Compare(): incompatible function arguments"."""
    with pytest.raises(ShapeError) as info:
        run(lambda t: pypto.gt(t, 0), np.zeros((8, 64), np.float32))
    assert info.value.code == "argument" and "0.0" in (info.value.hint or "")


def test_compare_refuses_unlisted_dtypes_ranks_and_shapes(run):
    with pytest.raises(DTypeError) as info:
        run(pypto.gt, np.zeros((8, 64), np.int64), np.zeros((8, 64), np.int64))
    assert info.value.code == "dtype-unsupported"
    with pytest.raises(DTypeError) as info:
        run(pypto.eq, np.zeros((8, 64), np.int32), np.zeros((8, 64), np.float32))
    assert info.value.code == "dtype-unsupported"
    with pytest.raises(ShapeError) as info:
        run(pypto.lt, np.zeros((8, 64), np.float32), np.zeros((8, 32), np.float32))
    assert info.value.code == "shape-mismatch"
    with pytest.raises(ShapeError) as info:
        run(pypto.lt, np.zeros((8, 64), np.float32), np.zeros((64,), np.float32))
    assert info.value.code == "rank-mismatch"


def test_compare_lowers_to_cmp_and_cmps():
    from pathlib import Path

    import yaml

    from ptosim.vocabulary import OPS

    for name in COMPARE:
        assert (OPS[name].tile_op, OPS[name].scalar_tile_op) == ("CMP", "CMPS")
    for path in (Path(__file__).parents[2] / "patterns" / "platforms").glob("*.yaml"):
        rows = yaml.safe_load(path.read_text())["op_dtypes"]
        assert all(rows[n] == ["FP16", "BF16", "FP32", "INT8", "INT16", "INT32"] for n in COMPARE), path.name


@pytest.mark.slow
def test_compare_equals_real_pyptos_verify_output(run):
    real = pytest.importorskip("pypto")
    torch = pytest.importorskip("torch")
    x, y = tie_laden((8, 64), np.float32), tie_laden((8, 64), np.float32)
    for name in COMPARE:
        op = getattr(real, name)

        @real.frontend.jit()
        def kernel(a: real.Tensor[[8, 64], real.DT_FP32], b: real.Tensor[[8, 64], real.DT_FP32],
                   out: real.Tensor[[8, 64], real.DT_BOOL]):
            real.set_vec_tile_shapes(8, 64)
            out[:] = op(a, b)  # noqa: B023 - traced in this iteration

        got = torch.zeros((8, 64), dtype=torch.bool)
        run_pypto_verify(kernel, torch.from_numpy(x), torch.from_numpy(y), got)
        np.testing.assert_array_equal(run(getattr(pypto, name), x, y), got.numpy(), err_msg=name)
