"""The ops an online flash attention needs: ``maximum``, element reads of INT32 tensors (block
tables, lengths), ``buf[:] = x``, ``is_loop_begin`` / ``is_loop_end`` / ``cond``, and an in-place
reshape of a dynamic argument; then a whole paged attention against float64 math."""

import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim.errors import PtoSimError

from . import paged_attention_kernel as pa


def test_maximum_is_exact_and_broadcasts():
    @pypto.frontend.jit
    def k(a: pypto.Tensor[[8, 16], pypto.DT_FP32], b: pypto.Tensor[[8, 1], pypto.DT_FP32], o: pypto.Tensor[[8, 16], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(8, 16)
        pypto.assemble(pypto.maximum(a, b), [0, 0], o)

    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((8, 1)).astype(np.float32)
    o = np.zeros((8, 16), np.float32)
    k(a, b, o)
    np.testing.assert_array_equal(o, np.maximum(a, b))


def _reader(dtype):
    @pypto.frontend.jit
    def k(table: pypto.Tensor[[2, 3], dtype], out: pypto.Tensor[[8, 4], pypto.DT_FP32], src: pypto.Tensor[[8, 4], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(1, 4)
        for i in pypto.loop(2, name="L", idx_name="i"):
            row = table[i, 2]  # a symbolic offset read from the table
            pypto.assemble(pypto.view(src, [1, 4], [row, 0]), [row, 0], out)

    return k


def test_element_read_gives_the_value_as_an_offset():
    table = np.array([[0, 0, 5], [0, 0, 2]], np.int32)
    src = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = np.zeros((8, 4), np.float32)
    _reader(pypto.DT_INT32)(table, out, src)
    expect = np.zeros((8, 4), np.float32)
    expect[[5, 2]] = src[[5, 2]]
    np.testing.assert_array_equal(out, expect)


def test_element_read_refuses_a_non_int32_table():
    with pytest.raises(PtoSimError, match="INT32 tensors only"):
        _reader(pypto.DT_INT16)(np.zeros((2, 3), np.int16), np.zeros((8, 4), np.float32), np.zeros((8, 4), np.float32))


def test_loop_conditions_mark_the_first_and_last_iteration():
    seen = []

    @pypto.frontend.jit
    def k(x: pypto.Tensor[[pypto.DYNAMIC], pypto.DT_INT32]):
        for j in pypto.loop(x.shape[0], name="J", idx_name="j"):
            seen.append((bool(pypto.is_loop_begin(j)), pypto.cond(pypto.is_loop_end(j))))

    k(np.zeros(3, np.int32))
    assert seen == [(True, False), (False, False), (False, True)]
    seen.clear()
    k(np.zeros(1, np.int32))
    assert seen == [(True, True)]


def test_loop_condition_needs_the_loop_index():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[4], pypto.DT_INT32]):
        for j in pypto.loop(4, name="J", idx_name="j"):
            pypto.is_loop_begin(j + 1)

    with pytest.raises(PtoSimError, match="not the index of an enclosing loop"):
        k(np.zeros(4, np.int32))


def test_setitem_writes_the_whole_buffer_and_refuses_a_part():
    @pypto.frontend.jit
    def k(a: pypto.Tensor[[4, 8], pypto.DT_FP32], o: pypto.Tensor[[4, 8], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 8)
        acc = pypto.tensor([4, 8], pypto.DT_FP32, "acc")
        acc[:] = a
        acc[:] = acc * 2.0 + a
        pypto.assemble(acc, [0, 0], o)

    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    o = np.zeros_like(a)
    k(a, o)
    np.testing.assert_array_equal(o, 3 * a)


@pytest.mark.parametrize("lens", [(70, 40), (32, 32), (64, 64), (128, 1), (1, 97)])
def test_paged_attention_matches_float64(lens):
    args = pa.inputs(lens)
    pa.paged_attention(*args)
    out = args[-1].astype(np.float64)
    ref = pa.golden(*args[:5])
    assert not np.isnan(out).any()
    # BF16 output of values below 1 in magnitude: one BF16 ulp (2^-8 relative) plus the BF16 p.
    np.testing.assert_allclose(out, ref, atol=4e-3, rtol=8e-3)


def test_paged_attention_reads_only_the_table_blocks():
    """A NaN planted in a block no sequence's table names never reaches the output."""
    args = pa.inputs((70, 40))
    free = sorted(set(range(pa.NB)) - set(args[3][0, :3]) - set(args[3][1, :2]))[0]
    args[1][free * pa.BS:(free + 1) * pa.BS] = ml_dtypes.bfloat16(np.nan)
    pa.paged_attention(*args)
    assert not np.isnan(args[-1].astype(np.float32)).any()
