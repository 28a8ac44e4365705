"""scatter_update and Tensor.move: PyPTO 0.2.0's row scatter into a 2-D cache, in place.

The cases are the ones measured on PyPTO 0.2.0's CPU verifier (see ptosim/scatter.py): rows land
at their slots, the other rows keep their content, an index outside the cache stops the rest of
the call, the vec tile must span the row, and the 2-D form is the one modelled.
"""

import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim.errors import PtoSimError

ROWS, C = 32, 32


def _kernel(tile=(8, C), index_rank=2):
    @pypto.frontend.jit
    def k(
        src: pypto.Tensor[[pypto.DYNAMIC, C], pypto.DT_BF16],
        slots: pypto.Tensor[[pypto.DYNAMIC], pypto.DT_INT32],
        cache: pypto.Tensor[[ROWS, C], pypto.DT_BF16],
    ):
        T = src.shape[0]
        for t_off, n in pypto.loop_unroll(0, T, 1, name="L", idx_name="t_off", unroll_list=[4]):
            pypto.set_vec_tile_shapes(*tile)
            s = pypto.view(src, [n, C], [t_off, 0])
            i1 = pypto.view(slots, [n], [t_off])
            idx = pypto.reshape(i1, [n, 1]) if index_rank == 2 else i1
            cache.move(pypto.scatter_update(cache, -2, idx, s))

    return k


def _data(T, seed=0):
    rng = np.random.default_rng(seed)
    src = rng.uniform(-1, 1, (T, C)).astype(ml_dtypes.bfloat16)
    cache = rng.uniform(-1, 1, (ROWS, C)).astype(ml_dtypes.bfloat16)
    slots = rng.permutation(ROWS)[:T].astype(np.int32)
    return src, slots, cache


def _expected(src, slots, cache, unroll=4):
    """Row by row, per call of `unroll` rows; a call stops at its first slot outside the cache."""
    out = cache.copy()
    for start in range(0, len(slots), unroll):
        for i in range(start, min(start + unroll, len(slots))):
            if not 0 <= slots[i] < ROWS:
                break
            out[slots[i]] = src[i]
    return out


@pytest.mark.parametrize("T", [1, 3, 4, 7, 9])
def test_rows_land_at_their_slots_and_the_rest_keep_their_content(T):
    src, slots, cache = _data(T)
    before = cache.copy()
    _kernel()(src, slots, cache)
    want = before.copy()
    want[slots] = src
    np.testing.assert_array_equal(cache.view(np.int16), want.view(np.int16))


def test_a_trailing_skip_slot_writes_nothing_for_its_token():
    src, slots, cache = _data(7)
    slots[-2:] = -1  # padding tokens at the end of the batch (vLLM's -1)
    before = cache.copy()
    _kernel()(src, slots, cache)
    np.testing.assert_array_equal(cache.view(np.int16), _expected(src, slots, before).view(np.int16))
    assert (cache[slots[:5]] == src[:5]).all()


def test_an_out_of_cache_slot_stops_the_rest_of_its_call_as_pypto_does():
    src, slots, cache = _data(8)
    slots[1] = -1  # inside the first call of 4: rows 2 and 3 are lost as well
    slots[6] = ROWS  # past the cache, inside the second call: row 7 is lost
    before = cache.copy()
    _kernel()(src, slots, cache)
    want = before.copy()
    want[slots[0]] = src[0]
    want[slots[4:6]] = src[4:6]
    np.testing.assert_array_equal(cache.view(np.int16), want.view(np.int16))
    assert (cache[slots[2]] == before[slots[2]]).all()


def test_a_tile_that_splits_the_row_is_refused():
    src, slots, cache = _data(4)
    with pytest.raises(PtoSimError) as err:
        _kernel(tile=(8, 8))(src, slots, cache)
    assert err.value.code == "tile-unfit" and "span the row" in str(err.value)


def test_a_1d_index_is_refused_with_the_fix():
    src, slots, cache = _data(4)
    with pytest.raises(PtoSimError) as err:
        _kernel(index_rank=1)(src, slots, cache)
    assert "[n, 1]" in str(err.value) and "reshape the 1-D slot view" in str(err.value)


def test_a_4d_cache_is_refused_with_the_measured_reason():
    @pypto.frontend.jit
    def k(src: pypto.Tensor[[4, 2, 16], pypto.DT_BF16], slots: pypto.Tensor[[4, 1], pypto.DT_INT32],
          cache: pypto.Tensor[[4, 8, 2, 16], pypto.DT_BF16]):
        pypto.set_vec_tile_shapes(4, 2, 16)
        cache.move(pypto.scatter_update(cache, -2, slots, src))

    with pytest.raises(PtoSimError) as err:
        k(np.zeros((4, 2, 16), ml_dtypes.bfloat16), np.zeros((4, 1), np.int32), np.zeros((4, 8, 2, 16), ml_dtypes.bfloat16))
    assert "2-D" in str(err.value)


def test_the_scatter_is_recorded_for_the_cost_model_as_rows_written():
    src, slots, cache = _data(4)
    k = _kernel()
    k(src, slots, cache)
    ops = [o for o in k.last_record.ops if o.op == "scatter_update"]
    assert len(ops) == 1 and ops[0].output.shape == (4, C) and ops[0].unit == "V"
    assert ops[0].attrs["written"] == 4
