"""Every check ptosim makes, triggered once, matched on ``err.code`` (and on the message where
the op, the label, the value, the limit or the constraint is the point).

Capacity numbers are worked out here from the profile facts, not read back from ptosim:
a2a3 UB 196608 B, ascend950 UB 253952 B, L0A/L0B 65536 B, L0C 131072 B (a2a3) / 262144 B (950),
L1 524288 B; footprint = tile bytes at the widest dtype x 2 (unary), 3 (binary), n (reduce,
broadcast: the profile's factor, 3 or 4); reduction tiles <= 65536 B.
"""


import dataclasses

import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim import (
    CapacityError,
    DTypeError,
    OptionError,
    PlatformError,
    PtoSimError,
    PtoSimWarning,
    ShapeError,
    TileShapeError,
)
from ptosim.platform import cube_capacity, load_platform, vec_footprint

BF16_NP = ml_dtypes.bfloat16
F32 = np.float32


def raised(run, fn, *arrays, exc=PtoSimError, **kw):
    with pytest.raises(exc) as info:
        run(fn, *arrays, **kw)
    return info.value


# --- tile shapes ------------------------------------------------------------------------------


def test_vec_tile_not_set(run):
    err = raised(run, lambda x: pypto.add(x, x), np.zeros((8, 64), F32), tile=None, exc=TileShapeError)
    assert err.code == "tile-unset" and err.op == "add" and "C-TILE-06" in str(err)


def test_cube_tile_not_set(run):
    err = raised(run, lambda a, b: pypto.matmul(a, b, pypto.DT_FP32), np.zeros((16, 64), BF16_NP),
                 np.zeros((64, 32), BF16_NP), tile=None, exc=TileShapeError)
    assert err.code == "tile-unset" and err.op == "matmul"


def test_vec_tile_rank_below_the_op_rank(run):
    err = raised(run, lambda x: pypto.add(x, x), np.zeros((8, 64), F32), tile=(64,), exc=TileShapeError)
    assert err.code == "tile-rank" and "C-TILE-01" in str(err)


def test_sum_tile_rank_follows_its_input(run):
    # probe vt_sum_1d: a rank-1 tile for a sum over a [.., 128] tensor fails in PyPTO too
    err = raised(run, lambda x: pypto.sum(x, -1), np.zeros((4, 128), F32), tile=(128,), exc=TileShapeError)
    assert err.code == "tile-rank"


@pytest.mark.parametrize("op,np_dtype,last", [
    ("sum", F32, 36), ("sum", F32, 100), ("sum", F32, 4),  # probes vt_sum_mis2, vt_sum_mis
    ("amax", F32, 36), ("amax", BF16_NP, 8), ("amax", BF16_NP, 24),
])
def test_reduction_last_axis_must_be_32_byte_aligned(run, op, np_dtype, last):
    err = raised(run, lambda x: getattr(pypto, op)(x, -1), np.zeros((4, 128), np_dtype), tile=(4, last),
                 exc=TileShapeError)
    assert err.code == "tile-align" and "C-TILE-02" in str(err)
    assert f"{last * np.dtype(np_dtype).itemsize} B" in str(err)


@pytest.mark.parametrize("np_dtype,last", [(F32, 8), (BF16_NP, 16), (BF16_NP, 48)])
def test_aligned_reduction_tiles_pass(run, np_dtype, last):
    run(lambda x: pypto.amax(x, -1), np.zeros((8, 64), np_dtype), tile=(8, last))


@pytest.mark.parametrize("last", [36, 100])
def test_elementwise_ops_take_unaligned_tiles_like_pypto(run, last):
    # probe vt_add_36 / vt_add_mis: PyPTO 0.2.0 compiles add over [4, 36] and [4, 100] FP32 tiles
    x = np.ones((4, 128), F32)
    np.testing.assert_array_equal(run(lambda a: pypto.add(a, a), x, tile=(4, last)), 2 * x)


# --- UB ---------------------------------------------------------------------------------------


def test_ub_rule_numbers():
    a2a3, a950 = load_platform("a2a3"), load_platform("ascend950")
    assert a2a3.ub == 196608 and a950.ub == 253952
    assert vec_footprint("binary", (8, 4096), 4, a2a3) == 8 * 4096 * 4 * 3 == 393216
    assert vec_footprint("unary", (8, 4096), 4, a2a3) == 262144
    n_reduce = a2a3.footprint_factor["reduce"]
    assert n_reduce in (3, 4)  # the product spec says 4; PyPTO 0.2.0 compiles [4, 4096] FP32 sums, i.e. 3
    assert vec_footprint("reduce", (2, 4096), 4, a2a3) == 2 * 4096 * 4 * n_reduce


def test_8x4096_fp32_binary_op_overflows_ub_on_a2a3(run):
    def body(x):
        pypto.set_semantic_label("rmsnorm")
        return pypto.mul(x, x)

    err = raised(run, body, np.zeros((8, 4096), F32), tile=(8, 4096), exc=CapacityError)
    assert err.code == "ub-overflow" and err.op == "mul" and err.label == "rmsnorm"
    text = str(err)
    assert "393216" in text and "196608" in text and "a2a3" in text and "C-TILE-03" in text
    assert "test_checks.py" in text  # the kernel line that issued the op


def test_8x4096_fp32_binary_op_overflows_ascend950_too(run):
    # 393216 B > 253952 B: the 950's larger UB does not save this tile
    err = raised(run, lambda x: pypto.mul(x, x), np.zeros((8, 4096), F32), tile=(8, 4096), exc=CapacityError,
                 platform="ascend950")
    assert err.code == "ub-overflow" and "253952" in str(err)


def test_5x4096_fp32_binary_op_fits_only_on_ascend950(run):
    # 5 * 4096 * 4 * 3 = 245760 B: > 196608 (a2a3), <= 253952 (950)
    x = np.ones((5, 4096), F32)
    err = raised(run, lambda a: pypto.add(a, a), x, tile=(5, 4096), exc=CapacityError)
    assert err.code == "ub-overflow"
    np.testing.assert_array_equal(run(lambda a: pypto.add(a, a), x, tile=(5, 4096), platform="ascend950"), x * 2)


def test_footprint_uses_the_widest_operand_dtype(run):
    # BF16 -> FP32 cast of a [4, 8192] tile: 4 * 8192 * 4 * 2 = 262144 B > 196608 (at BF16 it would fit)
    err = raised(run, lambda x: pypto.cast(x, pypto.DT_FP32), np.zeros((4, 8192), BF16_NP), tile=(4, 8192),
                 exc=CapacityError)
    assert err.code == "ub-overflow" and "262144" in str(err)


def test_the_effective_tile_is_clipped_to_the_tensor(run):
    # an (8, 4096) tile over a [1, 4096] tensor occupies one row only
    run(lambda x: pypto.mul(x, x), np.zeros((1, 4096), F32), tile=(8, 4096))


def test_reduction_tile_limit(run):
    # On a2a3 the UB rule (x3 or x4) fires before the 64 KiB reduction limit (65536 * 3 >= 196608),
    # so a profile with a larger UB shows the second rule on its own.
    big = dataclasses.replace(load_platform("a2a3"), name="big-ub",
                              buffers={**load_platform("a2a3").buffers, "UB": 1 << 20})
    err = raised(run, lambda x: pypto.sum(x, -1), np.zeros((8, 4096), F32), tile=(8, 4096), exc=CapacityError,
                 platform=big)
    assert err.code == "reduce-tile" and "131072" in str(err) and "65536" in str(err)
    err = raised(run, lambda x: pypto.sum(x, -1), np.zeros((8, 4096), F32), tile=(8, 4096), exc=CapacityError)
    assert err.code == "ub-overflow"
    run(lambda x: pypto.sum(x, -1), np.zeros((4, 4096), F32), tile=(4, 4096), platform=big)


def _probe_vt_kernel(tile, cols, op):
    """The probe's vector kernel (a vector kernel probed on PyPTO 0.2.0), 16-row blocks of FP32."""
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[pypto.DYNAMIC, cols], pypto.DT_FP32], y: pypto.Tensor[[pypto.DYNAMIC, cols], pypto.DT_FP32]):
        for i in pypto.loop(0, x.shape[0] // 16, 1, name="L", idx_name="i"):
            a = pypto.view(x, [16, cols], [i * 16, 0])
            pypto.set_vec_tile_shapes(*tile)
            if op == "sum":
                b = pypto.mul(a, pypto.sum(a, dim=-1, keepdim=True))
            elif op == "amax":
                b = pypto.sub(a, pypto.amax(a, dim=-1, keepdim=True))
            else:
                b = pypto.add(a, a)
            pypto.assemble(b, [i * 16, 0], y)

    return k


@pytest.mark.parametrize("case,tile,cols,op,ok", [
    ("vt_sum_ok", (4, 128), 128, "sum", True),
    ("vt_sum_split", (4, 64), 128, "sum", True),
    ("vt_sum_4x4096", (4, 4096), 4096, "sum", True),
    ("vt_amax_4x4096", (4, 4096), 4096, "amax", True),
    ("vt_add_mis", (4, 100), 128, "add", True),
    ("vt_add_36", (4, 36), 36, "add", True),
    ("vt_sum_mis", (4, 100), 128, "sum", False),
    ("vt_sum_mis2", (4, 36), 36, "sum", False),
    ("vt_sum_1d", (128,), 128, "sum", False),
    ("vt_sum_8x4096", (8, 4096), 4096, "sum", False),
    ("vt_sum_big", (16, 4096), 4096, "sum", False),
    ("vt_add_big", (16, 4096), 4096, "add", False),
])
def test_vec_tiles_pass_or_fail_as_in_the_pypto_probe(case, tile, cols, op, ok):
    if case == "vt_sum_4x4096" and load_platform("a2a3").footprint_factor["reduce"] > 3:
        pytest.skip("the profile's reduce factor is the product spec's 4, stricter than PyPTO 0.2.0")
    kernel = _probe_vt_kernel(tile, cols, op)
    x, y = np.ones((64, cols), F32), np.zeros((64, cols), F32)
    if ok:
        kernel(x, y)
    else:
        with pytest.raises(PtoSimError):
            kernel(x, y)


# --- cube tiles -------------------------------------------------------------------------------


@pytest.mark.parametrize("m,k,n", [
    ([32, 16], [64, 64], [64, 64]),  # L0 > L1
    ([16, 16], [64, 96], [64, 64]),  # 96 % 64
    ([16, 16], [256, 384], [128, 256]),  # probe mm_k_nondiv
    ([16, 16], [64, 64], [128, 192]),  # probe mm_n_nondiv
    ([16], [64, 64], [64, 64]),  # not [L0, L1]
    ([0, 16], [64, 64], [64, 64]),  # probe mm_zero
])
def test_cube_l0_l1_rules(run, m, k, n):
    err = raised(run, lambda _: pypto.set_cube_tile_shapes(m, k, n), np.zeros((1, 8), F32), tile=None,
                 exc=TileShapeError)
    assert err.code in ("cube-tile", "tile-value")
    if len(m) == 2 and m[0] > 0:
        assert err.code == "cube-tile" and "C-TILE-05" in str(err)


def _mm(m, k, n, out=pypto.DT_FP32, b_trans=False):
    def body(a, b):
        pypto.set_cube_tile_shapes(m, k, n)
        return pypto.matmul(a, b, out, b_trans=b_trans)

    return body


@pytest.mark.parametrize("k,n", [([24, 48], [64, 64]), ([64, 64], [40, 80])])
def test_cube_k_and_n_aligned_for_bf16(run, k, n):
    err = raised(run, _mm([16, 16], k, n), np.zeros((16, 64), BF16_NP), np.zeros((64, 64), BF16_NP), tile=None,
                 exc=TileShapeError)
    assert err.code == "cube-tile" and "16 elements" in str(err)


@pytest.mark.parametrize("k,n", [([16, 32], [32, 32]), ([32, 32], [16, 32])])
def test_cube_k_and_n_aligned_for_int8(run, k, n):
    err = raised(run, _mm([16, 16], k, n, pypto.DT_INT32), np.zeros((16, 64), np.int8), np.zeros((64, 64), np.int8),
                 tile=None, exc=TileShapeError)
    assert err.code == "cube-tile" and "32 elements" in str(err)


@pytest.mark.parametrize("m", [[1, 1], [8, 8], [24, 24], [1, 16]])
def test_cube_m_is_free(run, m):
    a = np.ones((1, 64), BF16_NP)
    out = run(_mm(m, [64, 64], [32, 32]), a, np.ones((64, 32), BF16_NP), tile=None)
    assert (out == 64).all()


@pytest.mark.parametrize("m,k,n,buffer,used", [
    ([128, 128], [512, 512], [64, 64], "L0A", 128 * 512 * 2),
    ([128, 128], [512, 512], [128, 256], "L0A", 128 * 512 * 2),  # probe mm_l0a_over
    ([16, 16], [256, 256], [256, 256], "L0B", 256 * 256 * 2),
    ([64, 64], [256, 512], [256, 256], "L0B", 256 * 256 * 2),  # probe mm_big_ok (fails in PyPTO)
    ([256, 256], [64, 64], [256, 256], "L0C", 256 * 256 * 4),  # probe mm_l0c_over
    ([16, 16], [256, 4096], [128, 256], "L1", 16 * 4096 * 2 + 256 * 4096 * 2),  # probe mm_l1_over
    # m = 1 is padded to 16: 540672 B does not fit, although 1 * 8448 * 2 + 16 * 8448 * 2 would
    ([1, 1], [256, 8448], [16, 16], "L1", 16 * 8448 * 2 + 16 * 8448 * 2),
])
def test_cube_capacity(run, m, k, n, buffer, used):
    kk = max(k)
    err = raised(run, _mm(m, k, n, b_trans=True), np.zeros((16, kk), BF16_NP), np.zeros((256, kk), BF16_NP),
                 tile=None, exc=CapacityError)
    assert err.code == f"{buffer.lower()}-overflow"
    assert f"{used} B of {buffer}" in str(err)


def test_l0c_rule_follows_the_platform(run):
    # 256 x 256 x 4 = 262144 B: over a2a3's L0C, exactly ascend950's
    body = _mm([256, 256], [64, 64], [256, 256])
    args = (np.zeros((16, 64), BF16_NP), np.zeros((64, 256), BF16_NP))
    assert raised(run, body, *args, tile=None, exc=CapacityError).code == "l0c-overflow"
    run(body, *args, tile=None, platform="ascend950")


def test_cube_capacity_int8_pads_to_32():
    use = cube_capacity([1, 1], [32, 32], [16, 16], pypto.DT_INT8, pypto.DT_INT8, pypto.DT_INT32,
                        load_platform("a2a3"))
    assert (use.l0a, use.l0b, use.l0c) == (32 * 32, 32 * 32, 16 * 16 * 4)


def test_probe_tiles_that_pypto_accepts_pass(run):
    # mm_ok, mm_m8, mm_m24, mm_k3 ran in PyPTO 0.2.0
    a, w = np.zeros((16, 512), BF16_NP), np.zeros((256, 512), BF16_NP)
    for m, k, n in [([16, 16], [256, 512], [128, 256]), ([8, 8], [256, 512], [128, 256]),
                    ([24, 24], [256, 512], [128, 256]), ([16, 16], [256, 512, 256], [128, 256])]:
        run(_mm(m, k, n, pypto.DT_BF16, b_trans=True), a, w, tile=None)


# --- dtypes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("a_np,b_np,out", [
    (BF16_NP, np.float16, "FP32"), (F32, F32, "BF16"), (np.int8, np.int8, "FP32"), (BF16_NP, BF16_NP, "INT32"),
    (np.float16, np.float16, "BF16"),
])
def test_matmul_dtype_pairs(run, a_np, b_np, out):
    err = raised(run, _mm([16, 16], [64, 64], [32, 32], getattr(pypto, f"DT_{out}")), np.zeros((16, 64), a_np),
                 np.zeros((64, 32), b_np), tile=None, exc=DTypeError)
    assert err.code == "matmul-dtype" and "C-API-02" in str(err)


@pytest.mark.parametrize("dst,route", [("FP16", "BF16 -> FP32 -> FP16"), ("INT8", "BF16 -> FP32 -> FP16 -> INT8")])
def test_cast_not_on_a2a3_suggests_a_route(run, dst, route):
    err = raised(run, lambda x: pypto.cast(x, getattr(pypto, f"DT_{dst}")), np.zeros((4, 64), BF16_NP), tile=(4, 64),
                 exc=DTypeError)
    assert err.code == "cast-unsupported" and route in str(err)


def test_bf16_to_fp16_is_direct_on_ascend950(run):
    x = np.array([[1.5, -2.25, 6.5e4, 1e-3] * 16], BF16_NP)
    out = run(lambda a: pypto.cast(a, pypto.DT_FP16), x, tile=(1, 64), platform="ascend950")
    np.testing.assert_array_equal(out, x.astype(np.float64).astype(np.float16))


def test_fp8_is_unsupported_on_a2a3(run):
    err = raised(run, lambda x: pypto.cast(x, pypto.DT_FP8E4M3), np.zeros((4, 64), F32), tile=(4, 64),
                 exc=DTypeError)
    assert err.code == "dtype-unsupported" and "FP8E4M3" in str(err) and "a2a3" in str(err)
    err = raised(run, lambda x: x, np.zeros((4, 64), ml_dtypes.float8_e4m3fn), exc=DTypeError)
    assert err.code == "dtype-unsupported" and err.op == "jit"


def test_sum_on_bf16_is_refused(run):
    err = raised(run, lambda x: pypto.sum(x, -1), np.zeros((4, 64), BF16_NP), tile=(4, 64), exc=DTypeError)
    assert err.code == "dtype-unsupported" and "C-API-01" in str(err) and "FP32" in str(err)


def test_exp_on_int32_is_refused(run):
    err = raised(run, pypto.exp, np.zeros((4, 64), np.int32), tile=(4, 64), exc=DTypeError)
    assert err.code == "dtype-unsupported" and "C-API-04" in str(err)


def test_mixed_operand_dtypes(run):
    err = raised(run, lambda a, b: pypto.add(a, b), np.zeros((4, 64), F32), np.zeros((4, 64), BF16_NP),
                 tile=(4, 64), exc=DTypeError)
    assert err.code == "dtype-unsupported"


def test_int_tensor_divided_by_a_float(run):
    err = raised(run, lambda a: pypto.div(a, 2.5), np.zeros((4, 64), np.int32), tile=(4, 64), exc=DTypeError)
    assert err.op == "div"


def test_shapes_that_do_not_broadcast(run):
    err = raised(run, lambda a, b: pypto.add(a, b), np.zeros((4, 64), F32), np.zeros((3, 64), F32), tile=(4, 64),
                 exc=ShapeError)
    assert err.code == "shape-mismatch"
    err = raised(run, lambda a, b: pypto.add(a, b), np.zeros((4, 64), F32), np.zeros((64,), F32), tile=(4, 64),
                 exc=ShapeError)
    assert err.code == "rank-mismatch"


def test_matmul_inner_dims(run):
    err = raised(run, _mm([16, 16], [64, 64], [32, 32]), np.zeros((16, 64), BF16_NP), np.zeros((32, 64), BF16_NP),
                 tile=None, exc=ShapeError)
    assert err.code == "shape-mismatch"


# --- outside a kernel, jit arguments and options --------------------------------------------


@pytest.mark.parametrize("call", [
    lambda: pypto.set_vec_tile_shapes(8, 64),
    lambda: pypto.full([8, 64], 1.0, pypto.DT_FP32),
    lambda: pypto.set_semantic_label("x"),
    lambda: list(pypto.loop(3)),
    lambda: pypto.set_pass_options(vec_nbuffer_setting={-1: 2}),
])
def test_ops_outside_a_kernel(call):
    with pytest.raises(PtoSimError) as info:
        call()
    assert info.value.code == "argument" and "outside a running kernel" in str(info.value)


@pytest.fixture
def static_kernel():
    @pypto.frontend.jit
    def k(x: pypto.Tensor[[pypto.DYNAMIC, 64], pypto.DT_BF16], y: pypto.Tensor[[4, pypto.STATIC], pypto.DT_FP32]):
        pass

    return k


def test_jit_argument_dtype_mismatch(static_kernel):
    with pytest.raises(ShapeError) as info:
        static_kernel(np.zeros((3, 64), F32), np.zeros((4, 8), F32))
    assert info.value.code == "argument" and "'x'" in str(info.value)


@pytest.mark.parametrize("x_shape,y_shape,code", [
    ((3, 32), (4, 8), "shape-mismatch"), ((3, 64, 1), (4, 8), "rank-mismatch"), ((3, 64), (5, 8), "shape-mismatch"),
])
def test_jit_argument_shape_mismatch(static_kernel, x_shape, y_shape, code):
    with pytest.raises(ShapeError) as info:
        static_kernel(np.zeros(x_shape, BF16_NP), np.zeros(y_shape, F32))
    assert info.value.code == code


def test_static_axis_is_fixed_by_the_first_call(static_kernel):
    static_kernel(np.zeros((3, 64), BF16_NP), np.zeros((4, 8), F32))
    static_kernel(np.zeros((9, 64), BF16_NP), np.zeros((4, 8), F32))  # DYNAMIC may change
    with pytest.raises(ShapeError) as info:
        static_kernel(np.zeros((3, 64), BF16_NP), np.zeros((4, 16), F32))
    assert info.value.code == "shape-mismatch"


def test_jit_non_array_argument(static_kernel):
    with pytest.raises(ShapeError):
        static_kernel([[0.0] * 64], np.zeros((4, 8), F32))


@pytest.mark.parametrize("kwargs,needle", [
    ({"runtime_options": {"stitch_function_maxnum": 128}}, "stitch_function_max_num"),
    ({"pass_options": {"vec_nbuffer": {-1: 2}}}, "vec_nbuffer_setting"),
    ({"pass_options": {"pg_lower_bound": 64}}, "only through set_options"),
    ({"host_options": {"compile_stages": 1}}, "compile_stage"),
    ({"debug_options": {"runtime_debug": 1}}, "runtime_debug_mode"),
    ({"verify_options": {"foo": 1}}, "enable_pass_verify"),
    ({"codegen_options": {"foo": 1}}, "support_dynamic_aligned"),
])
def test_unknown_jit_option_keys_list_the_valid_ones(kwargs, needle):
    with pytest.raises(OptionError) as info:
        pypto.frontend.jit(**kwargs)(lambda x: None)
    assert info.value.code == "unknown-option" and needle in str(info.value)


@pytest.mark.parametrize("runtime,code", [({"device_sched_mode": 7}, "option-value"),
                                          ({"stitch_function_max_num": 0}, "option-value"),
                                          ({"stitch_function_max_num": "128"}, "option-type"),
                                          ({"run_mode": 2}, "option-value")])
def test_jit_runtime_option_values(runtime, code):
    # the probe (opts_probe.out) shows PyPTO refusing each of these
    with pytest.raises(OptionError) as info:
        pypto.frontend.jit(runtime_options=runtime)(lambda x: None)
    assert info.value.code == code


def test_enable_multi_data_load_is_accepted_with_a_warning(run):
    with pytest.warns(PtoSimWarning, match="enable_multi_data_load"):
        run(lambda _: pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64], enable_multi_data_load=True),
            np.zeros((1, 8), F32), tile=None)


def test_other_unknown_set_cube_tile_shapes_keywords(run):
    err = raised(run, lambda _: pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64], split_k=True),
                 np.zeros((1, 8), F32), tile=None, exc=TileShapeError)
    assert "split_k" in str(err)


def test_pg_upper_bound_through_set_options_warns(run):
    with pytest.warns(PtoSimWarning, match="pg_upper_bound"):
        run(lambda _: pypto.set_options(pass_options={"pg_upper_bound": 8192}), np.zeros((1, 8), F32), tile=None)


def test_set_pass_options_inside_a_kernel_validates(run):
    err = raised(run, lambda _: pypto.set_pass_options(vec_nbuffer_setting={-1: 0}), np.zeros((1, 8), F32),
                 tile=None, exc=OptionError)
    assert err.code == "option-value"


def test_unknown_platform():
    with pytest.raises(PlatformError) as info:
        with pypto.use_platform("a5"):
            pass
    assert info.value.code == "platform" and "a2a3" in str(info.value)


def test_labels(run):
    def body(_):
        pypto.set_semantic_label("rmsnorm")
        pypto.set_semantic_label("")

    run(body, np.zeros((1, 8), F32), tile=None)
    with pytest.warns(PtoSimWarning, match="funcM_O"):  # accepted by PyPTO 0.2.0 (probe_opts.out)
        run(lambda _: pypto.set_semantic_label("func8_0"), np.zeros((1, 8), F32), tile=None)
    err = raised(run, lambda _: pypto.set_semantic_label(3), np.zeros((1, 8), F32), tile=None, exc=OptionError)
    assert err.code == "option-type"


# --- the remaining argument checks, one line each -------------------------------------------------

E8M0 = ml_dtypes.float8_e8m0fnu
FP8 = ml_dtypes.float8_e4m3fn


def _scaled(k_tile=64, sa_shape=(16, 2, 2), sa_dtype=E8M0):
    def body(a, b, sa, sb):
        pypto.set_cube_tile_shapes([16, 16], [k_tile, 128], [32, 32])
        return pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb)

    return body, (np.zeros((16, 128), FP8), np.zeros((128, 32), FP8), np.zeros(sa_shape, sa_dtype),
                  np.zeros((2, 32, 2), E8M0))


def _loop_body(**kw):
    return lambda _: list(pypto.loop(0, 4, **kw))


ARG_CASES = {
    "vec tile above max rank": (lambda _: pypto.set_vec_tile_shapes(1, 1, 1, 1, 16), "tile-rank"),
    "vec tile of zero": (lambda _: pypto.set_vec_tile_shapes(0, 16), "tile-value"),
    "vec tile with no dims": (lambda _: pypto.set_vec_tile_shapes(), "tile-value"),
    "symbolic vec tile": (lambda _: [pypto.set_vec_tile_shapes(i, 16) for i in pypto.loop(1, 2, 1)], "tile-value"),
    "symbolic cube tile": (lambda _: [pypto.set_cube_tile_shapes([i, i], [32, 32], [32, 32])
                                      for i in pypto.loop(16, 17, 1)], "tile-value"),
    "split_k not a bool": (lambda _: pypto.set_cube_tile_shapes([16, 16], [32, 32], [32, 32], 1), "tile-value"),
    "loop step 0": (_loop_body(step=0), "argument"),
    "loop step symbolic": (lambda _: [list(pypto.loop(0, 4, i)) for i in pypto.loop(1, 2, 1)], "argument"),
    "combine_axis not a bool": (lambda _: pypto.experimental.set_operation_options(combine_axis=1), "option-type"),
    "cast mode not a CastMode": (lambda x: pypto.cast(x, pypto.DT_BF16, mode=1), "argument"),
    "scalar operand symbolic": (lambda x: [pypto.add(x, i) for i in pypto.loop(1)], "argument"),
    "scalar first": (lambda x: pypto.add(2.0, x), "argument"),
    "reduce dim out of range": (lambda x: pypto.sum(x, 2), "argument"),
    "reduce dim not an int": (lambda x: pypto.sum(x, 1.0), "argument"),
    "full of a symbolic shape": (lambda _: [pypto.full([i, 16], 0.0, pypto.DT_FP32) for i in pypto.loop(1, 2, 1)],
                                 "symbolic"),
    # 3 BF16 = 6 bytes is no whole number of FP32
    "view reinterpret does not divide": (
        lambda x: pypto.view(pypto.cast(x, pypto.DT_BF16), [2, 3], [0, 0], dtype=pypto.DT_FP32), "shape-mismatch"),
    "reshape of a partial view needs valid_shape": (
        lambda x: pypto.reshape(pypto.view(x, [4, 16], [0, 0], valid_shape=[4, 8]), [64]), "valid-shape"),
    "assemble source not a tensor": (lambda x: pypto.assemble(1.0, [0, 0], x), "argument"),
}


@pytest.mark.parametrize("case", list(ARG_CASES))
def test_argument_checks(run, case):
    fn, code = ARG_CASES[case]
    with pytest.raises(PtoSimError) as info:
        run(fn, np.zeros((4, 16), F32), tile=(4, 16))
    assert info.value.code == code, str(info.value)


MM_CASES = {
    "rank mismatch": (lambda a, b: pypto.matmul(a, pypto.reshape(b, [1, 64, 32]), pypto.DT_FP32), "rank-mismatch"),
    "c_matrix_nz": (lambda a, b: pypto.matmul(a, b, pypto.DT_FP32, c_matrix_nz=True), "argument"),
    "unknown extend_params": (lambda a, b: pypto.matmul(a, b, pypto.DT_FP32, extend_params={"scal": 1.0}),
                              "argument"),
    "split_k with a BF16 output": (
        lambda a, b: (pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32], enable_split_k=True),
                      pypto.matmul(a, b, pypto.DT_BF16))[1], "argument"),
}


@pytest.mark.parametrize("case", list(MM_CASES))
def test_matmul_argument_checks(run, case):
    fn, code = MM_CASES[case]

    def body(a, b):
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
        return fn(a, b)

    with pytest.raises(PtoSimError) as info:
        run(body, np.zeros((16, 64), BF16_NP), np.zeros((64, 32), BF16_NP), tile=None)
    assert info.value.code == code, str(info.value)


@pytest.mark.parametrize("k_tile,sa_shape,sa_dtype,code", [
    (32, (16, 2, 2), E8M0, "cube-tile"),  # kL0 % 64
    (64, (16, 4, 2), E8M0, "shape-mismatch"),  # scale_a is [M, ceil(K/64), 2]
    (64, (16, 2, 2), FP8, "dtype-unsupported"),  # scales are E8M0
])
def test_scaled_mm_checks(run, k_tile, sa_shape, sa_dtype, code):
    body, arrays = _scaled(k_tile, sa_shape, sa_dtype)
    with pytest.raises(PtoSimError) as info:
        run(body, *arrays, tile=None, platform="ascend950")
    assert info.value.code == code, str(info.value)
