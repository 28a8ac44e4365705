"""view / assemble / reshape, valid_shape semantics and named buffers."""


import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim.errors import PtoSimError, ShapeError
from ptosim.tensor import TensorSpec

X = np.arange(8 * 32, dtype=np.float32).reshape(8, 32) + 1.0  # no zeros, so padding is visible


# --- view ------------------------------------------------------------------------------------


def test_view_reads_a_block(run):
    out = run(lambda x: pypto.view(x, [4, 16], [2, 8]), X)
    np.testing.assert_array_equal(out, X[2:6, 8:24])


def test_view_past_valid_shape_reads_zero(run):
    out = run(lambda x: pypto.view(x, [4, 16], [2, 8], valid_shape=[3, 10]), X)
    want = np.zeros((4, 16), np.float32)
    want[:3, :10] = X[2:5, 8:18]
    np.testing.assert_array_equal(out, want)


def test_valid_shape_tail_block_may_extend_past_the_source(run):
    # a [4, 32] block at row 6 of an 8-row tensor is legal when only 2 rows are valid
    out = run(lambda x: pypto.view(x, [4, 32], [6, 0], valid_shape=[2, 32]), X)
    np.testing.assert_array_equal(out[:2], X[6:8])
    assert (out[2:] == 0).all()


def test_view_of_a_view_keeps_the_padding_zero(run):
    def body(x):
        v = pypto.view(x, [4, 32], [0, 0], valid_shape=[2, 32])
        return pypto.view(v, [4, 16], [0, 16])

    out = run(body, X)
    np.testing.assert_array_equal(out[:2], X[:2, 16:])
    assert (out[2:] == 0).all()


def test_results_of_ops_on_a_partial_view_keep_its_valid_shape():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 32)
        v = pypto.view(x, [4, 32], [0, 0], valid_shape=[3, 32])
        col = pypto.sum(v, -1, keepdim=True)  # [4, 1], 3 rows valid
        pypto.assemble(pypto.div(pypto.add(v, 1.0), col), [0, 0], y)

    y = np.full((8, 32), -7.0, np.float32)
    k(X, y)
    np.testing.assert_array_equal(y[:3], ((X[:3] + 1) / X[:3].sum(1, keepdims=True)).astype(np.float32))
    assert (y[3:] == -7).all()


def test_reduction_ignores_padding_past_valid_shape(run):
    neg = -X  # all negative: a zero from the padding would win amax

    def body(x):
        v = pypto.view(x, [4, 32], [0, 0], valid_shape=[4, 20])
        return pypto.amax(v, -1, keepdim=True)

    out = run(body, neg, tile=(4, 32))
    np.testing.assert_array_equal(out[:, 0], neg[:4, :20].max(axis=1))


@pytest.mark.parametrize("shape,offsets,valid", [
    ([4, 16], [6, 0], None),  # rows 6..9 of 8
    ([4, 16], [0, 20], None),  # cols 20..35 of 32
    ([4, 16], [-1, 0], None),
    ([4, 16], [6, 0], [3, 16]),  # valid rows 6..8 of 8
])
def test_view_out_of_bounds(run, shape, offsets, valid):
    with pytest.raises(ShapeError) as exc:
        run(lambda x: pypto.view(x, shape, offsets, valid_shape=valid), X)
    assert exc.value.code == "out-of-bounds" and "C-DATA-02" in str(exc.value)


@pytest.mark.parametrize("shape,offsets", [([4], [0]), ([4, 16], [0]), ([1, 4, 16], [0, 0, 0])])
def test_view_rank_mismatch(run, shape, offsets):
    with pytest.raises(ShapeError) as exc:
        run(lambda x: pypto.view(x, shape, offsets), X)
    assert exc.value.code == "rank-mismatch"


@pytest.mark.parametrize("valid", [[5, 16], [4, 17], [-1, 16]])
def test_valid_shape_larger_than_shape(run, valid):
    with pytest.raises(ShapeError) as exc:
        run(lambda x: pypto.view(x, [4, 16], [0, 0], valid_shape=valid), X)
    assert exc.value.code == "valid-shape"


def test_valid_shape_rank_mismatch(run):
    with pytest.raises(ShapeError) as exc:
        run(lambda x: pypto.view(x, [4, 16], [0, 0], valid_shape=[4]), X)
    assert exc.value.code == "rank-mismatch"


def test_view_dtype_reinterprets_bits(run):
    out = run(lambda x: pypto.view(x, [2, 4], [0, 0], dtype=pypto.DT_INT8), X)
    np.testing.assert_array_equal(out, X[:2, :4].copy().view(np.int8))


# --- assemble --------------------------------------------------------------------------------


def test_assemble_writes_only_the_valid_region():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 32)
        blk = pypto.view(x, [4, 32], [6, 0], valid_shape=[2, 16])
        pypto.assemble(pypto.mul(blk, 2.0), [6, 0], y)

    y = np.full((8, 32), -7.0, np.float32)
    k(X, y)
    want = np.full((8, 32), -7.0, np.float32)
    want[6:8, :16] = X[6:8, :16] * 2
    np.testing.assert_array_equal(y, want)


def test_assemble_list_form():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
        top = pypto.view(x, [4, 32], [0, 0])
        bottom = pypto.view(x, [4, 32], [4, 0])
        pypto.assemble([(bottom, [0, 0]), (top, [4, 0])], y, parallel=True)

    y = np.zeros((8, 32), np.float32)
    k(X, y)
    np.testing.assert_array_equal(y, np.concatenate([X[4:], X[:4]]))


@pytest.mark.parametrize("offsets,code", [([6, 0], "out-of-bounds"), ([0, 20], "out-of-bounds"),
                                          ([0], "rank-mismatch"), ([0, 0, 0], "rank-mismatch")])
def test_assemble_bounds_and_rank(offsets, code):
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
        pypto.assemble(pypto.view(x, [4, 16], [0, 0]), offsets, y)

    with pytest.raises(ShapeError) as exc:
        k(X, np.zeros((8, 32), np.float32))
    assert exc.value.code == code and "C-DATA-02" in str(exc.value)


def test_assemble_dtype_mismatch():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_BF16]):
        pypto.assemble(pypto.view(x, [4, 16], [0, 0]), [0, 0], y)

    with pytest.raises(PtoSimError) as exc:
        k(X, np.zeros((8, 32), ml_dtypes.bfloat16))
    assert exc.value.code == "dtype-unsupported" and "cast" in str(exc.value)


def test_a_deferred_matmul_result_and_later_reads_of_its_target_agree():
    # assemble of a matmul result is deferred (lazy.py); reading the target must see it
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[16, 32], pypto.DT_FP32], w: pypto.Tensor[[32, 32], pypto.DT_FP32],
          y: pypto.Tensor[[16, 32], pypto.DT_FP32], z: pypto.Tensor[[16, 32], pypto.DT_FP32]):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        pypto.set_vec_tile_shapes(16, 32)
        pypto.assemble(pypto.matmul(x, w, pypto.DT_FP32), [0, 0], y)
        pypto.assemble(pypto.add(pypto.view(y, [16, 32], [0, 0]), 1.0), [0, 0], z)
        # overwrite w after using it: the first product must not see the new weight
        pypto.assemble(pypto.mul(pypto.view(w, [32, 32], [0, 0]), 0.0), [0, 0], w)
        pypto.assemble(pypto.matmul(x, w, pypto.DT_FP32), [0, 0], x)

    rng = np.random.default_rng(3)
    x = rng.integers(-4, 5, (16, 32)).astype(np.float32)
    w = rng.integers(-4, 5, (32, 32)).astype(np.float32)
    x0, w0 = x.copy(), w.copy()
    y, z = np.zeros((16, 32), np.float32), np.zeros((16, 32), np.float32)
    k(x, w, y, z)
    exact = x0.astype(np.int64) @ w0.astype(np.int64)
    np.testing.assert_array_equal(y, exact)
    np.testing.assert_array_equal(z, exact + 1)
    assert (w == 0).all() and (x == 0).all()


def test_writing_into_a_deferred_result_after_assembling_it_keeps_program_order():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[16, 32], pypto.DT_FP32], w: pypto.Tensor[[32, 32], pypto.DT_FP32],
          y: pypto.Tensor[[16, 32], pypto.DT_FP32], z: pypto.Tensor[[16, 32], pypto.DT_FP32]):
        pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32])
        r = pypto.matmul(x, w, pypto.DT_FP32)
        pypto.assemble(r, [0, 0], y)  # deferred: r is not computed yet
        pypto.assemble(pypto.view(x, [16, 32], [0, 0]), [0, 0], r)  # then r is overwritten
        pypto.assemble(r, [0, 0], z)

    rng = np.random.default_rng(4)
    x = rng.integers(-4, 5, (16, 32)).astype(np.float32)
    w = rng.integers(-4, 5, (32, 32)).astype(np.float32)
    y, z = np.zeros((16, 32), np.float32), np.zeros((16, 32), np.float32)
    k(x, w, y, z)
    np.testing.assert_array_equal(y, x.astype(np.int64) @ w.astype(np.int64))
    np.testing.assert_array_equal(z, x)


# --- reshape ---------------------------------------------------------------------------------


def test_reshape_minus_one_and_inplace(run):
    def body(x):
        a = pypto.reshape(x, [-1, 64])
        b = pypto.reshape(x, [4, -1, 32], inplace=True)
        return a, b

    a, b = run(body, X)
    np.testing.assert_array_equal(a, X.reshape(4, 64))
    np.testing.assert_array_equal(b, X.reshape(4, 2, 32))


def test_inplace_reshape_shares_storage_with_its_source():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
        flat = pypto.reshape(y, [256], inplace=True)
        pypto.assemble(pypto.view(x, [8, 32], [0, 0]), [0, 0], y)
        pypto.set_vec_tile_shapes(256)
        pypto.assemble(pypto.add(flat, 1.0), [0], flat)

    y = np.zeros((8, 32), np.float32)
    k(X, y)
    np.testing.assert_array_equal(y, X + 1)


def test_reshape_without_inplace_is_a_new_tensor():
    """Writes to the source after the reshape, or to the reshape, never show in the other."""

    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[4, 64], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, 32)
        before = pypto.reshape(x, [4, 64])
        pypto.assemble(pypto.zeros(8, 32, dtype=pypto.DT_FP32), [0, 0], x)  # overwrite the source
        pypto.set_vec_tile_shapes(4, 64)
        pypto.assemble(pypto.add(before, 0.0), [0, 0], y)
        pypto.assemble(pypto.zeros(4, 64, dtype=pypto.DT_FP32), [0, 0], before)  # and write the copy

    x, y = X.copy(), np.zeros((4, 64), np.float32)
    k(x, y)
    np.testing.assert_array_equal(y, X.reshape(4, 64))
    assert (x == 0).all()  # the kernel's own write to x, not the write to the copy


@pytest.mark.parametrize("shape", [[3, 64], [-1, -1], [0, 256]])
def test_reshape_errors(run, shape):
    with pytest.raises(ShapeError):
        run(lambda x: pypto.reshape(x, shape), X)


# --- named buffers -----------------------------------------------------------------------------


def test_tensor_outside_a_kernel_is_a_spec():
    spec = pypto.Tensor([4, 8], pypto.DT_BF16, "buf")
    assert isinstance(spec, TensorSpec) and not isinstance(spec, pypto.Tensor)
    assert spec.shape == [4, 8] and spec.dtype is pypto.DT_BF16


@pytest.mark.parametrize("dt,check", [
    ("FP32", lambda a: np.isnan(a).all()),
    ("BF16", lambda a: np.isnan(a.astype(np.float32)).all()),
    ("INT32", lambda a: (a == np.iinfo(np.int32).min).all()),
    ("INT8", lambda a: (a == -128).all()),
    ("BOOL", lambda a: a.all()),
])
def test_named_buffer_inside_a_kernel_is_poisoned(run, dt, check):
    out = run(lambda _: pypto.Tensor([4, 64], getattr(pypto, f"DT_{dt}"), "scratch"), np.zeros((1, 8), np.float32))
    assert check(out)


def test_reading_a_buffer_before_writing_it_shows_in_the_output():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 32], pypto.DT_FP32], y: pypto.Tensor[[8, 32], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 32)
        acc = pypto.Tensor([8, 32], pypto.DT_FP32, "acc")
        pypto.assemble(pypto.view(x, [4, 32], [0, 0]), [0, 0], acc)  # rows 4..7 never written
        pypto.assemble(pypto.add(pypto.view(acc, [8, 32], [0, 0]), 1.0), [0, 0], y)

    y = np.zeros((8, 32), np.float32)
    k(X, y)
    np.testing.assert_array_equal(y[:4], X[:4] + 1)
    assert np.isnan(y[4:]).all()
    assert not pypto.testing.compare(y, X + 1).passed


def test_named_buffer_shape_must_be_positive_ints(run):
    with pytest.raises(ShapeError):
        run(lambda _: pypto.Tensor([4, 0], pypto.DT_FP32, "bad"), np.zeros((1, 8), np.float32))


# --- reshape of a view of a vector result (PyPTO 0.2.0 copies such a view whole into UB) --------


def _relayout_kernel(rows: int, view_cols: int, inplace: bool, through_view: bool = True):
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[rows, 2048], pypto.DT_BF16], y: pypto.Tensor[[rows * view_cols // 128, 128], pypto.DT_BF16]):
        pypto.set_vec_tile_shapes(4, 2048)
        xb = pypto.cast(pypto.mul(pypto.cast(x, pypto.DT_FP32), 2.0), pypto.DT_BF16)
        v = pypto.view(xb, [rows, view_cols], [0, 0]) if through_view else xb
        pypto.assemble(pypto.reshape(v, [rows * view_cols // 128, 128], inplace=inplace), [0, 0], y)

    x = (np.arange(rows * 2048) % 7).astype(ml_dtypes.bfloat16).reshape(rows, 2048)
    y = np.zeros((rows * view_cols // 128, 128), ml_dtypes.bfloat16)
    k(x, y)
    return x, y


# (rows, view columns, inplace, through a view): the cases measured on PyPTO 0.2.0 (BF16, UB 192 KiB)
@pytest.mark.parametrize(
    "rows, cols, inplace, through_view",
    [(32, 2048, True, True), (64, 1024, True, True), (128, 1024, False, True), (128, 2048, True, False), (128, 2048, False, False)],
)
def test_reshape_of_a_vector_result_that_pypto_compiles(rows, cols, inplace, through_view):
    x, y = _relayout_kernel(rows, cols, inplace, through_view)
    want = (x[:, :cols].astype(np.float32) * 2).astype(ml_dtypes.bfloat16).reshape(-1, 128)
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize(
    "rows, cols, inplace, hint",
    [(64, 2048, True, "at most 48 rows"), (64, 2048, False, "at most 48 rows"), (128, 1024, True, "without inplace=True")],
)
def test_reshape_of_a_view_of_a_vector_result_past_ub_is_refused(rows, cols, inplace, hint):
    with pytest.raises(PtoSimError) as err:
        _relayout_kernel(rows, cols, inplace)
    assert err.value.code == "ub-overflow" and "changes its last axis" in str(err.value)
    assert f"{rows * cols * 2} B view" in str(err.value) and hint in str(err.value)
