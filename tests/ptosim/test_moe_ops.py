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


@pytest.mark.parametrize("shape", [(4, 32), (8, 64), (16, 128)])
def test_compare_and_where_cost_pyptos_sim_cycles_on_a2a3(run, shape):
    """PyPTO 0.2.0's SIM (A2/A3) runs CMP in 11 cycles and WHERE_TT in 38 for every FP32 tile
    from [4, 32] to [16, 128]; the a2a3 profile's level-1 entries for them are fitted to that."""
    from .conftest import run_ops

    x = np.zeros(shape, np.float32)
    for fn, args, want in [(pypto.gt, (x, x), ("CMP", 11)), (lambda a: pypto.lt(a, 0.5), (x,), ("CMPS", 11)),
                           (pypto.where, (x.astype(np.bool_), x, x), ("WHERE_TT", 38))]:
        run(fn, *args, tile=shape)
        task = estimate(run_ops.last_kernel.last_record, "a2a3").graph.tasks[0]
        assert [(o.name, o.cycles) for o in task.ops if o.pipe == "VECTOR"] == [want]


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


# --- where ---------------------------------------------------------------------------------------


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("dt", ["BF16", "FP16", "FP32", "INT32"])
def test_where_moves_values_bit_for_bit(run, dt):
    dtype = {**FLOATS, **INTS}[dt]
    cond = RNG.random((16, 64)) > 0.5
    x, y = tie_laden((16, 64), dtype), tie_laden((16, 64), dtype)
    if dt != "INT32":
        x.reshape(-1)[3:6] = np.array([np.inf, -np.inf, np.nan], np.float32).astype(dtype)
        cond.reshape(-1)[:6] = True
    out = run(pypto.where, cond, x, y)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(bits(out), bits(np.where(cond, x, y)))
    cost_runs()


def test_where_broadcasts_condition_and_values(run):
    cond = RNG.random((16, 1)) > 0.5
    col = RNG.standard_normal((16, 1)).astype(np.float32)
    row = RNG.standard_normal((1, 64)).astype(np.float32)
    out = run(pypto.where, cond, col, row)
    assert out.shape == (16, 64)
    np.testing.assert_array_equal(bits(out), bits(np.where(cond, col, row)))
    cost_runs()


def test_where_with_scalars(run):
    """A Python number is Element(DT_FP32, value): rounded to FP32, then to the other value's dtype."""
    cond = RNG.random((16, 64)) > 0.5
    x = RNG.standard_normal((16, 64)).astype(ml_dtypes.bfloat16)
    out = run(lambda c, t: pypto.where(c, t, 0.1), cond, x)
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(bits(out), bits(np.where(cond, x, np.float32(0.1).astype(ml_dtypes.bfloat16))))
    both = run(lambda c: pypto.where(c, 1.0, -2), cond)
    assert both.dtype == np.float32
    np.testing.assert_array_equal(both, np.where(cond, 1.0, -2.0).astype(np.float32))
    cost_runs()


def test_where_widens_a_narrow_float_next_to_fp32(run):
    cond = RNG.random((16, 64)) > 0.5
    x = RNG.standard_normal((16, 64)).astype(np.float32)
    y = RNG.standard_normal((16, 64)).astype(ml_dtypes.bfloat16)
    out = run(pypto.where, cond, x, y)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.where(cond, x, y.astype(np.float32)))


def test_where_refuses_a_non_bool_condition_and_unmixable_values(run):
    x = np.zeros((8, 64), np.float32)
    with pytest.raises(DTypeError) as info:
        run(pypto.where, x, x, x)
    assert info.value.code == "dtype-unsupported" and "BOOL" in str(info.value)
    cond = np.ones((8, 64), np.bool_)
    with pytest.raises(DTypeError) as info:
        run(pypto.where, cond, x, np.zeros((8, 64), np.int32))
    assert info.value.code == "dtype-unsupported"
    with pytest.raises(DTypeError) as info:
        run(pypto.where, cond, np.zeros((8, 64), np.int16), np.zeros((8, 64), np.int16))
    assert info.value.code == "dtype-unsupported"
    with pytest.raises(DTypeError) as info:  # PyPTO 0.2.0: "Expected out type to be Float but got Int"
        run(lambda c, t: pypto.where(c, t, -1.0), cond, np.zeros((8, 64), np.int32))
    assert info.value.code == "dtype-unsupported"
    with pytest.raises(ShapeError) as info:
        run(pypto.where, cond, x, np.zeros((8, 32), np.float32))
    assert info.value.code == "shape-mismatch"
    with pytest.raises(ShapeError) as info:
        run(lambda c, t: pypto.where(c, t, "0"), cond, x)
    assert info.value.code == "argument"


@pytest.mark.slow
def test_where_equals_real_pyptos_verify_output(run):
    real = pytest.importorskip("pypto")
    torch = pytest.importorskip("torch")

    @real.frontend.jit()
    def kernel(c: real.Tensor[[8, 64], real.DT_BOOL], a: real.Tensor[[8, 64], real.DT_BF16],
               b: real.Tensor[[8, 64], real.DT_BF16], out: real.Tensor[[8, 64], real.DT_BF16]):
        real.set_vec_tile_shapes(8, 64)
        out[:] = real.where(c, a, b)

    cond = RNG.random((8, 64)) > 0.5
    x, y = tie_laden((8, 64), ml_dtypes.bfloat16), RNG.standard_normal((8, 64)).astype(ml_dtypes.bfloat16)
    got = torch.zeros((8, 64), dtype=torch.bfloat16)
    as_torch = [torch.from_numpy(cond)] + [torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) for a in (x, y)]
    run_pypto_verify(kernel, *as_torch, got)
    ours = run(pypto.where, cond, x, y)
    np.testing.assert_array_equal(ours.view(np.int16), got.view(torch.int16).numpy())


# --- gather --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", ["BF16", "FP16", "FP32", "INT16", "INT32"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_gather_picks_along_the_last_dim_bit_for_bit(run, dt, index_dtype):
    dtype = {**FLOATS, **INTS}[dt]
    x = (RNG.standard_normal((16, 64)) * 100).astype(dtype)
    index = RNG.integers(0, 64, (16, 8)).astype(index_dtype)
    out = run(lambda a, i: pypto.gather(a, -1, i), x, index)
    want = np.array([[x[r, index[r, j]] for j in range(8)] for r in range(16)], dtype)
    assert out.dtype == x.dtype and out.shape == (16, 8)
    np.testing.assert_array_equal(bits(out), bits(want))
    cost_runs()


def test_gather_along_dim_0_with_a_smaller_and_a_wider_index(run):
    x = RNG.standard_normal((16, 64)).astype(np.float32)
    index = RNG.integers(0, 16, (4, 32)).astype(np.int32)  # fewer rows, fewer columns than x
    out = run(lambda a, i: pypto.gather(a, 0, i), x, index, tile=(16, 64))
    np.testing.assert_array_equal(out, np.array([[x[index[r, j], j] for j in range(32)] for r in range(4)]))
    narrow = RNG.standard_normal((8, 16)).astype(np.float32)
    wide = RNG.integers(0, 16, (8, 32)).astype(np.int32)  # wider than the input along dim (measured to run)
    out = run(lambda a, i: pypto.gather(a, 1, i), narrow, wide)
    np.testing.assert_array_equal(out, np.array([[narrow[r, wide[r, j]] for j in range(32)] for r in range(8)]))
    cost_runs()


def test_gather_cost_is_pyptos_three_tile_ops(run):
    """SIM on [8, 64] FP32 with an [8, 8] INT32 index: COPY_IN 1427, COPY_IN 1408, GATHER_ELEMENT 11."""
    from .conftest import run_ops

    run(lambda a, i: pypto.gather(a, 1, i), np.zeros((8, 64), np.float32), np.zeros((8, 8), np.int32))
    task = estimate(run_ops.last_kernel.last_record, "a2a3").graph.tasks[0]
    assert [(o.name, o.cycles) for o in task.ops] == [("COPY_IN", 1427), ("COPY_IN", 1408), ("GATHER_ELEMENT", 11)]


def test_gather_refusals(run):
    x = np.zeros((8, 64), np.float32)
    with pytest.raises(ShapeError) as info:
        run(lambda a, i: pypto.gather(a, 1, i), x, np.full((8, 8), 64, np.int32))
    assert info.value.code == "out-of-bounds"
    with pytest.raises(ShapeError) as info:
        run(lambda a, i: pypto.gather(a, 1, i), x, np.full((8, 8), -1, np.int32))
    assert info.value.code == "out-of-bounds"
    with pytest.raises(ShapeError) as info:  # PyPTO: "The shape of params and indices should be equal"
        run(lambda a, i: pypto.gather(a, 1, i), x, np.zeros((16, 8), np.int32), tile=(16, 64))
    assert info.value.code == "shape-mismatch"
    with pytest.raises(ShapeError) as info:
        run(lambda a, i: pypto.gather(a, 1, i), x, np.zeros((8,), np.int32))
    assert info.value.code == "rank-mismatch"
    with pytest.raises(ShapeError) as info:
        run(lambda a, i: pypto.gather(a, 2, i), x, np.zeros((8, 8), np.int32))
    assert info.value.code == "argument"
    with pytest.raises(DTypeError) as info:  # PyPTO: "The datatype of indices is incorrect"
        run(lambda a, i: pypto.gather(a, 1, i), x, np.zeros((8, 8), np.int16))
    assert info.value.code == "dtype-unsupported"
    with pytest.raises(DTypeError) as info:  # PyPTO: FC0001 "The datatype is not supported"
        run(lambda a, i: pypto.gather(a, 1, i), np.zeros((8, 64), np.int8), np.zeros((8, 8), np.int32))
    assert info.value.code == "dtype-unsupported"


@pytest.mark.slow
def test_gather_equals_real_pyptos_verify_output(run):
    real = pytest.importorskip("pypto")
    torch = pytest.importorskip("torch")

    @real.frontend.jit()
    def kernel(a: real.Tensor[[8, 64], real.DT_FP32], i: real.Tensor[[8, 8], real.DT_INT32],
               out: real.Tensor[[8, 8], real.DT_FP32]):
        real.set_vec_tile_shapes(8, 64)
        out[:] = real.gather(a, 1, i)

    x = RNG.standard_normal((8, 64)).astype(np.float32)
    index = RNG.integers(0, 64, (8, 8)).astype(np.int32)
    got = torch.zeros((8, 8))
    run_pypto_verify(kernel, torch.from_numpy(x), torch.from_numpy(index), got)
    np.testing.assert_array_equal(bits(run(lambda a, i: pypto.gather(a, 1, i), x, index)), bits(got.numpy()))


# --- concat --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [*FLOATS, *INTS])
def test_concat_joins_bit_for_bit(run, dt):
    dtype = {**FLOATS, **INTS}[dt]
    a, b, c = ((RNG.standard_normal((16, n)) * 50).astype(dtype) for n in (16, 16, 32))
    out = run(lambda p, q, r: pypto.concat([p, q, r], -1), a, b, c)
    assert out.dtype == a.dtype and out.shape == (16, 64)
    np.testing.assert_array_equal(bits(out[:, :16]), bits(a))
    np.testing.assert_array_equal(bits(out[:, 16:32]), bits(b))
    np.testing.assert_array_equal(bits(out[:, 32:]), bits(c))
    cost_runs()


def test_concat_along_dim_0_by_default_and_of_one_part(run):
    a, b = RNG.standard_normal((8, 64)).astype(np.float32), RNG.standard_normal((4, 64)).astype(np.float32)
    out = run(lambda p, q: pypto.concat([p, q]), a, b)
    np.testing.assert_array_equal(out[:8], a)
    np.testing.assert_array_equal(out[8:], b)
    np.testing.assert_array_equal(run(lambda p: pypto.concat([p], 0), a), a)


def test_concat_costs_a_copy_task_per_part(run):
    from .conftest import run_ops

    run(lambda p, q: pypto.concat([p, q], -1), np.zeros((8, 32), np.float32), np.zeros((8, 32), np.float32))
    tasks = estimate(run_ops.last_kernel.last_record, "a2a3").graph.tasks
    assert [[o.name for o in t.ops] for t in tasks] == [["COPY_IN", "COPY_OUT"]] * 2


def test_concat_refusals(run):
    a = np.zeros((8, 32), np.float32)
    with pytest.raises(DTypeError) as info:  # PyPTO: "The dataType of all tensors should be equal"
        run(lambda p, q: pypto.concat([p, q], -1), a, np.zeros((8, 32), ml_dtypes.bfloat16))
    assert info.value.code == "dtype-unsupported"
    with pytest.raises(ShapeError) as info:  # PyPTO: "The shape of all tensors should be equal except at axis"
        run(lambda p, q: pypto.concat([p, q], -1), a, np.zeros((4, 32), np.float32))
    assert info.value.code == "shape-mismatch"
    with pytest.raises(ShapeError) as info:
        run(lambda p, q: pypto.concat([p, q], 2), a, a)
    assert info.value.code == "argument"
    with pytest.raises(ShapeError) as info:
        run(lambda p: pypto.concat([], 0), a)
    assert info.value.code == "argument"
    with pytest.raises(ShapeError) as info:
        run(lambda p: pypto.concat(p, 0), a)
    assert info.value.code == "argument"


@pytest.mark.slow
def test_concat_equals_real_pyptos_verify_output(run):
    real = pytest.importorskip("pypto")
    torch = pytest.importorskip("torch")

    @real.frontend.jit()
    def kernel(a: real.Tensor[[8, 16], real.DT_FP32], b: real.Tensor[[8, 48], real.DT_FP32],
               out: real.Tensor[[8, 64], real.DT_FP32]):
        real.set_vec_tile_shapes(8, 64)
        out[:] = real.concat([a, b], -1)

    a, b = RNG.standard_normal((8, 16)).astype(np.float32), RNG.standard_normal((8, 48)).astype(np.float32)
    got = torch.zeros((8, 64))
    run_pypto_verify(kernel, torch.from_numpy(a), torch.from_numpy(b), got)
    np.testing.assert_array_equal(bits(run(lambda p, q: pypto.concat([p, q], -1), a, b)), bits(got.numpy()))


# --- the ops together ----------------------------------------------------------------------------


@pytest.mark.parametrize("platform", ["a2a3", "ascend950"])
def test_a_router_masking_step_composes_and_is_priced(run, platform):
    """Mask the scores under a per-row threshold, pick experts by index, join two picks: the
    shape of an MoE router's group-limited selection, checked against NumPy and priced."""
    from .conftest import run_ops

    scores = RNG.uniform(-4, 4, (16, 64)).astype(np.float32)
    threshold = np.quantile(scores, 0.75, axis=1, keepdims=True).astype(np.float32)
    first, second = (RNG.integers(0, 64, (16, 4)).astype(np.int32) for _ in range(2))

    def router(s, t, i, j):
        masked = pypto.where(pypto.ge(s, t), s, -1.0e30)
        return pypto.concat([pypto.gather(masked, 1, i), pypto.gather(masked, 1, j)], -1)

    out = run(router, scores, threshold, first, second, platform=platform)
    masked = np.where(scores >= threshold, scores, np.float32(-1.0e30))
    want = np.concatenate([np.take_along_axis(masked, k.astype(np.int64), 1) for k in (first, second)], 1)
    np.testing.assert_array_equal(bits(out), bits(want))
    names = {o.op for o in run_ops.last_kernel.last_record.ops}
    assert names == {"ge", "where", "gather", "assemble"}
    cost_runs(platform)


def test_gather_by_topks_indices_gives_topks_values(run):
    """An MoE router picks experts with topk and reads their weights with gather: topk's INT32
    indices are a valid gather index, and picking by them returns topk's values bit for bit."""
    scores = RNG.uniform(-30, 30, (16, 64)).astype(np.float32)

    def pick(s):
        values, index = pypto.topk(s, 8, -1, True)
        return values, pypto.gather(s, -1, index), index

    values, picked, index = run(pick, scores)
    want = -np.sort(-scores, axis=1)[:, :8]
    np.testing.assert_array_equal(bits(values), bits(want))
    np.testing.assert_array_equal(bits(picked), bits(want))
    np.testing.assert_array_equal(np.take_along_axis(scores, index.astype(np.int64), 1), want)
    cost_runs()
