"""What a kernel call leaves for the cost model: options per scope, ops, warnings."""


import warnings

import numpy as np
import pytest

import ptosim as pypto
from ptosim import PtoSimWarning


def scopes_by_kind(record):
    return {(s["kind"], s["name"]): s for s in record.scopes.values()}


def test_pass_option_set_inside_a_loop_belongs_to_that_loop():
    @pypto.frontend.jit(pass_options={"vec_nbuffer_setting": {0: 2}}, runtime_options={"device_sched_mode": 1})
    def k(x: pypto.Tensor[[8, 64], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(4, 64)
        for i in pypto.loop(2, name="OUTER"):
            pypto.set_pass_options(cube_l1_reuse_setting={-1: 4})
            pypto.set_options(runtime_options={"stitch_function_max_num": 32})
            pypto.add(pypto.view(x, [4, 64], [i * 4, 0]), 1.0)
        pypto.add(x, 2.0)

    k(np.zeros((8, 64), np.float32))
    rec = k.last_record
    scopes = scopes_by_kind(rec)
    jit, loop = scopes[("jit", "k")], scopes[("loop", "OUTER")]
    assert loop["parent"] in rec.scopes and rec.scopes[loop["parent"]] is jit
    assert loop["pass"].cube_l1_reuse_setting.granularity(0) == 4
    assert jit["pass"].cube_l1_reuse_setting.granularity(0) is None  # default: auto
    assert loop["runtime"].stitch_function_max_num == 32 and jit["runtime"].stitch_function_max_num == 128
    # inherited from the jit scope
    assert loop["pass"].vec_nbuffer_setting.granularity(0) == 2 and loop["runtime"].device_sched_mode == 1
    loop_id = [sid for sid, s in rec.scopes.items() if s is loop][0]
    adds = [op for op in rec.ops if op.op == "add"]
    assert [op.loops[-1].scope if op.loops else None for op in adds] == [loop_id, loop_id, None]


def test_options_context_manager_opens_a_scope():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 64], pypto.DT_FP32]):
        with pypto.options("stage", pass_options={"cube_nbuffer_setting": {-1: 2}}, vec_tile_shapes=[8, 64]):
            pypto.add(x, 1.0)
        pypto.set_vec_tile_shapes(8, 64)
        pypto.add(x, 1.0)

    k(np.zeros((8, 64), np.float32))
    scopes = scopes_by_kind(k.last_record)
    assert scopes[("options", "stage")]["pass"].cube_nbuffer_setting.granularity(0) == 2
    assert scopes[("jit", "k")]["pass"].cube_nbuffer_setting.granularity(0) == 1


def test_tile_shapes_set_inside_a_scope_end_with_it():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[8, 64], pypto.DT_FP32]):
        for _ in pypto.loop(1):
            pypto.set_vec_tile_shapes(8, 64)
        pypto.add(x, 1.0)

    with pytest.raises(pypto.TileShapeError) as info:
        k(np.zeros((8, 64), np.float32))
    assert info.value.code == "tile-unset"


@pytest.mark.parametrize("key,value", [("sg_set_ooo_scope", 3), ("ooo_sched_mode", "HLF"),
                                       ("auto_mix_partition", 1), ("sg_set_tunevf_mode", 2)])
def test_cv_mix_only_options_warn_on_a2a3_only(key, value):
    @pypto.frontend.jit(pass_options={key: value})
    def k(x: pypto.Tensor[[8, 64], pypto.DT_FP32]):
        pass

    with pytest.warns(PtoSimWarning, match=f"'{key}'.*no effect on a2a3"):
        k(np.zeros((8, 64), np.float32))
    assert any(key in w for w in k.last_record.warnings)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PtoSimWarning)
        with pypto.use_platform("ascend950"):
            k(np.zeros((8, 64), np.float32))
    assert k.last_record.warnings == [] and k.last_record.platform == "ascend950"


def test_ops_are_recorded_with_label_tile_and_loop():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32], y: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_FP32]):
        pypto.set_vec_tile_shapes(2, 64)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="L", unroll_list=[4]):
            pypto.set_semantic_label("scale")
            v = pypto.mul(pypto.view(x, [tile, 64], [off, 0]), 3.0)
            pypto.assemble(v, [off, 0], y)

    x = np.ones((5, 64), np.float32)
    y = np.zeros_like(x)
    k(x, y)
    np.testing.assert_array_equal(y, 3 * x)
    muls = [op for op in k.last_record.ops if op.op == "mul"]
    assert [(op.label, op.tile, op.loops[0].factor, op.loops[0].index) for op in muls] == [
        ("scale", (2, 64), 4, 0), ("scale", (1, 64), 1, 4)]
    assert muls[0].flops == 4 * 64 and muls[0].unit == "V"
    assert muls[0].where and muls[0].output.shape == (4, 64) and muls[0].output.dtype == "FP32"


def test_matmul_record_names_its_cube_tile():
    @pypto.frontend.jit
    def k(a: pypto.Tensor[[16, 64], pypto.DT_BF16], w: pypto.Tensor[[32, 64], pypto.DT_BF16],
          y: pypto.Tensor[[16, 32], pypto.DT_FP32]):
        w.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
        pypto.assemble(pypto.matmul(a, w, pypto.DT_FP32, b_trans=True), [0, 0], y)

    import ml_dtypes

    k(np.ones((16, 64), ml_dtypes.bfloat16), np.ones((32, 64), ml_dtypes.bfloat16), np.zeros((16, 32), np.float32))
    (mm,) = [op for op in k.last_record.ops if op.op == "matmul"]
    assert mm.unit == "C" and mm.cube_tile == {"m": (16, 16), "k": (64, 64, 64), "n": (32, 32)}
    assert (mm.attrs["m"], mm.attrs["k"], mm.attrs["n"]) == (16, 64, 32) and mm.flops == 2 * 16 * 64 * 32
    assert mm.inputs[1].cacheable is False and mm.inputs[0].cacheable is True
