"""A reshape of a view of a vector result: PyPTO 0.2.0 compiles it only when the view starts on a
UB block (32 B) along its last axis (measured on PyPTO 0.2.0, FP32 [1, 64] result, views [1, n] at
column o reshaped to [1, 1, n]: (1, 0), (4, 0), (8, 8), (32, 8), (64, 0) compile; (1, 1), (2, 4),
(16, 4) fail with "Shape size mismatch ... InitRawTensorAndMemoryRequirement"). ptosim refuses the
same, and names the fix (reshape the whole result, then view it)."""

import numpy as np
import pytest

import ptosim as pypto
from ptosim.errors import ShapeError

X = np.random.default_rng(7).standard_normal((8, 64)).astype(np.float32)


def _view_then_reshape(n, o):
    def fn(x):
        e = pypto.add(x, 1.0)
        return pypto.reshape(pypto.view(e, [8, n], [0, o]), [8, 1, n])
    return fn


@pytest.mark.parametrize(("n", "o"), [(1, 0), (4, 0), (8, 8), (32, 8), (64, 0)])
def test_aligned_view_reshapes(run, n, o):
    out = run(_view_then_reshape(n, o), X)
    np.testing.assert_array_equal(out.reshape(8, n), (X + 1.0)[:, o:o + n])


@pytest.mark.parametrize(("n", "o"), [(1, 1), (2, 4), (16, 4), (1, 5)])
def test_unaligned_view_reshape_is_refused(run, n, o):
    with pytest.raises(ShapeError, match="not a multiple of 32 B") as info:
        run(_view_then_reshape(n, o), X)
    assert "reshape the whole vector result first" in str(info.value)


def test_view_of_the_reshaped_result_is_the_fix(run):
    """topk's k-th value column as AT-15 takes it: the [8, 2] values reshaped whole, then viewed."""
    def fn(x):
        v, _ = pypto.topk(pypto.add(x, 1.0), 2, -1)
        return pypto.view(pypto.reshape(v, [8, 1, 2]), [8, 1, 1], [0, 0, 1])
    out = run(fn, X)
    np.testing.assert_array_equal(out.reshape(8), np.sort(X + 1.0, axis=-1)[:, -2])


def test_a_view_of_an_input_is_not_a_vector_result(run):
    """A view of a GM argument is no UB block: the rule is about views of vector results."""
    def fn(x):
        return pypto.reshape(pypto.view(x, [8, 1], [0, 1]), [8, 1, 1])
    out = run(fn, X)
    np.testing.assert_array_equal(out.reshape(8), X[:, 1])
