"""``frontend.jit``: argument binding, in-place outputs, annotations as PyPTO reads them."""


import importlib.util
import textwrap

import numpy as np
import pytest

import ptosim as pypto

MODULE = '''
from __future__ import annotations  # every annotation below is a string

import ptosim as pypto


def build(cols):
    T = pypto.DYNAMIC
    FP32 = pypto.DT_FP32

    @pypto.frontend.jit
    def double(x: pypto.Tensor[[T, cols], FP32], y: pypto.Tensor[[T, cols], FP32]):
        pypto.set_vec_tile_shapes(1, cols)
        for i in pypto.loop(x.shape[0]):
            pypto.assemble(pypto.mul(pypto.view(x, [1, cols], [i, 0]), 2.0), [i, 0], y)

    return double


@pypto.frontend.jit
def module_level(x: pypto.Tensor[[2, 8], pypto.DT_FP32], y: pypto.Tensor[[2, 8], pypto.DT_FP32]):
    pypto.set_vec_tile_shapes(2, 8)
    pypto.assemble(pypto.add(x, 1.0), [0, 0], y)
'''


def test_string_annotations_are_refused_as_pypto_refuses_them(tmp_path):
    """PyPTO 0.2.0 reads annotations as objects: under postponed annotations every parameter is a
    non-tensor and the call fails. ptosim refuses the kernel when it is defined, naming the fix."""
    path = tmp_path / "kernels_with_future_annotations.py"
    path.write_text(textwrap.dedent(MODULE))
    spec = importlib.util.spec_from_file_location("kernels_with_future_annotations", path)
    module = importlib.util.module_from_spec(spec)
    with pytest.raises(pypto.ShapeError) as info:
        spec.loader.exec_module(module)
    text = str(info.value)
    assert "module_level" in text and "'x'" in text and "from __future__ import annotations" in text


def test_a_quoted_annotation_is_refused():
    def f(x: "pypto.Tensor[[4], pypto.DT_FP32]"):
        pass

    with pytest.raises(pypto.ShapeError, match="annotated with the string"):
        pypto.frontend.jit(f)


def test_a_return_annotation_is_refused():
    def f(x: pypto.Tensor[[4], pypto.DT_FP32]) -> None:
        pass

    with pytest.raises(pypto.ShapeError, match="return annotation is not allowed"):
        pypto.frontend.jit(f)


def test_annotations_resolve_in_the_defining_scope():
    cols = 16
    FP32 = pypto.DT_FP32

    @pypto.frontend.jit
    def double(x: pypto.Tensor[[pypto.DYNAMIC, cols], FP32], y: pypto.Tensor[[pypto.DYNAMIC, cols], FP32]):
        pypto.set_vec_tile_shapes(1, cols)
        for i in pypto.loop(x.shape[0]):
            pypto.assemble(pypto.mul(pypto.view(x, [1, cols], [i, 0]), 2.0), [i, 0], y)

    x = np.arange(48, dtype=np.float32).reshape(3, 16)
    y = np.zeros_like(x)
    double(x, y)
    np.testing.assert_array_equal(y, 2 * x)
    with pytest.raises(pypto.ShapeError):  # the annotation is really applied: 16 columns
        double(np.zeros((3, 8), np.float32), np.zeros((3, 8), np.float32))


def test_outputs_are_written_in_place_and_scalars_pass_through():
    seen = []

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def k(x: pypto.Tensor[[4, 8], pypto.DT_FP32], y: pypto.Tensor[[4, 8], pypto.DT_FP32], scale):
        seen.append(scale)
        pypto.set_vec_tile_shapes(4, 8)
        pypto.assemble(pypto.mul(x, scale), [0, 0], y)

    y = np.zeros((4, 8), np.float32)
    assert k(np.ones((4, 8), np.float32), y, 3.0) is None
    assert (y == 3).all() and seen == [3.0]


def test_each_call_runs_on_a_fresh_machine():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[4, 8], pypto.DT_FP32]):
        pypto.add(x, 1.0)  # no tile set in this call: the previous call's tile must not leak

    @pypto.frontend.jit
    def setter(x: pypto.Tensor[[4, 8], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 8)

    setter(np.zeros((4, 8), np.float32))
    with pytest.raises(pypto.TileShapeError):
        k(np.zeros((4, 8), np.float32))
