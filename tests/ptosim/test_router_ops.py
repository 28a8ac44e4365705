"""The ops an MoE router needs (issue #32, SK-07 / AT-15): ptosim's numerics against float64
rounded once, against torch, and against real PyPTO 0.2.0's CPU verify path where installed."""

# No `from __future__ import annotations`: real PyPTO reads the test kernels' annotations.
import os
import tempfile
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim.errors import DTypeError, ShapeError

RNG = np.random.default_rng(32)
FLOATS = {"BF16": ml_dtypes.bfloat16, "FP16": np.float16, "FP32": np.float32}


def f32_steps_sigmoid(x: np.ndarray) -> np.ndarray:
    """PyPTO's sigmoid steps in FP32, each rounded once (exp from float64)."""
    x32 = x.astype(np.float32)
    with np.errstate(over="ignore"):
        e = np.exp(-x32.astype(np.float64)).astype(np.float32)
    return (np.float32(1) / (e + np.float32(1))).astype(np.float32)


def logits(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return RNG.uniform(-30.0, 30.0, shape).astype(dtype)


# --- real PyPTO's CPU verify path --------------------------------------------------------------


def run_pypto_verify(kernel: Any, *args: Any) -> None:
    """Run a real @pypto.frontend.jit kernel on PyPTO 0.2.0's CPU verifier (output args are filled).
    0.2.0 copies CPU inputs with CopyToHost (all zero without an NPU): hand it the tensors' data."""
    import pypto as real
    from pypto import pypto_impl
    from pypto.frontend.parser import entry
    from pypto.runtime import _pto_to_tensor_data, _pto_verify_datas

    def setup(pto_tensors: list) -> None:
        entry.BuildOnlineManager().build_and_load_calculator()
        pypto_impl.SetVerifyData(_pto_to_tensor_data(pto_tensors), [], _pto_verify_datas.get_data())

    entry.JitCallableWrapper._setup_verify_data = staticmethod(setup)
    here, work = os.getcwd(), tempfile.mkdtemp(prefix="ptosim-verify-")
    os.chdir(work)  # PyPTO writes its output/ folder into the working directory
    try:
        real.set_verify_options(enable_pass_verify=True)
        kernel(*args)
    finally:
        os.chdir(here)


# --- sigmoid -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", FLOATS)
def test_sigmoid_takes_pyptos_fp32_steps_and_rounds_once(run, dt):
    x = logits((16, 64), FLOATS[dt])
    x.flat[:5] = [0.0, -0.0, 88.0, -88.0, -104.0]  # 1/2, saturation, exp overflow -> 0
    out = run(pypto.sigmoid, x)
    want = f32_steps_sigmoid(x).astype(FLOATS[dt])
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))
    assert out.dtype == x.dtype


def test_sigmoid_is_within_an_ulp_of_float64(run):
    x = logits((16, 64), np.float32)
    out = run(pypto.sigmoid, x).astype(np.float64)
    exact = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    assert np.all(np.abs(out - exact) <= 2 * np.spacing(exact.astype(np.float32)))


def test_sigmoid_matches_torch(run):
    torch = pytest.importorskip("torch")
    x = logits((16, 64), np.float32)
    out = run(pypto.sigmoid, x)
    np.testing.assert_allclose(out, torch.sigmoid(torch.from_numpy(x)).numpy(), rtol=2.4e-7, atol=1e-30)


@pytest.mark.parametrize("bad", [np.int32, np.int16])
def test_sigmoid_refuses_integers(run, bad):
    with pytest.raises(DTypeError) as info:
        run(pypto.sigmoid, np.zeros((4, 64), bad), tile=(4, 64))
    assert info.value.code == "dtype-unsupported"


def test_sigmoid_lowers_to_pyptos_five_tile_ops():
    import yaml

    for path in (Path(__file__).parents[2] / "patterns" / "platforms").glob("*.yaml"):
        profile = yaml.safe_load(path.read_text())
        assert profile["cost"]["lowering"]["sigmoid"] == ["MULS", "EXP", "ADDS", "VEC_DUP", "DIV"], path.name


@pytest.mark.slow
def test_sigmoid_equals_real_pyptos_verify_output(run):
    real = pytest.importorskip("pypto")
    torch = pytest.importorskip("torch")

    @real.frontend.jit()
    def sigmoid_kernel(x: real.Tensor[[8, 64], real.DT_FP32], y: real.Tensor[[8, 64], real.DT_FP32]):
        real.set_vec_tile_shapes(8, 64)
        y[:] = real.sigmoid(x)

    x = np.linspace(-20.0, 20.0, 8 * 64, dtype=np.float32).reshape(8, 64)
    y = torch.full((8, 64), float("nan"))
    run_pypto_verify(sigmoid_kernel, torch.from_numpy(x), y)
    ours = run(pypto.sigmoid, x)
    # PyPTO's verify uses torch's FP32 exp, which is not always correctly rounded: <= 1 ulp apart
    assert np.all(np.abs(ours - y.numpy()) <= np.spacing(y.numpy()))
    assert np.mean(ours == y.numpy()) > 0.99


# --- topk ----------------------------------------------------------------------------------------


def stable_topk(x: np.ndarray, k: int, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """float64 reference: best first, equal values in index order."""
    key = x.astype(np.float64)
    idx = np.take(np.argsort(-key if largest else key, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx


def tie_laden(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return RNG.integers(-4, 5, shape).astype(dtype)


@pytest.mark.parametrize("dt", FLOATS)  # the profiles' topk row: the float dtypes
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("values", [logits, tie_laden])
def test_topk_is_the_stable_sort_of_the_row(run, dt, largest, values):
    x = values((16, 64), FLOATS[dt])
    v, i = run(lambda t: pypto.topk(t, 8, -1, largest), x)
    want_v, want_i = stable_topk(x, 8, 1, largest)
    assert i.dtype == np.int32 and v.dtype == x.dtype and v.shape == i.shape == (16, 8)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(v.view(np.uint8), want_v.view(np.uint8))


def test_topk_along_dim_0_and_by_default_the_last(run):
    x = logits((16, 64), np.float32)
    v0, i0 = run(lambda t: pypto.topk(t, 3, 0), x, tile=(16, 64))
    want_v, want_i = stable_topk(x, 3, 0, True)
    np.testing.assert_array_equal(i0, want_i)
    np.testing.assert_array_equal(v0, want_v)
    _, i_last = run(lambda t: pypto.topk(t, 5), x)
    np.testing.assert_array_equal(i_last, stable_topk(x, 5, 1, True)[1])


@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_torch_values_and_untied_indices(run, largest):
    torch = pytest.importorskip("torch")
    for x in (logits((16, 64), np.float32), tie_laden((16, 64), np.float32)):
        v, i = run(lambda t: pypto.topk(t, 8, -1, largest), x)
        tv, ti = torch.topk(torch.from_numpy(x), 8, -1, largest)
        np.testing.assert_array_equal(v, tv.numpy())
        untied = (np.sum(x[:, None, :] == v[:, :, None], axis=-1) == 1)  # values that occur once in the row
        np.testing.assert_array_equal(i[untied], ti.numpy()[untied])
        np.testing.assert_array_equal(np.take_along_axis(x, i.astype(np.int64), 1), v)


@pytest.mark.parametrize("k", [0, 65, -1])
def test_topk_refuses_k_outside_the_axis(run, k):
    with pytest.raises(ShapeError) as info:
        run(lambda t: pypto.topk(t, k), np.zeros((8, 64), np.float32))
    assert info.value.code == "argument" and "k =" in str(info.value)


def test_topk_refuses_a_bad_dim_and_unlisted_dtypes(run):
    with pytest.raises(ShapeError):
        run(lambda t: pypto.topk(t, 2, 2), np.zeros((8, 64), np.float32))
    with pytest.raises(DTypeError) as info:
        run(lambda t: pypto.topk(t, 2), np.zeros((8, 64), np.int32))
    assert info.value.code == "dtype-unsupported"
