"""Cube ops against exact references.

matmul accumulates in FP32 (INT32 for INT8) and rounds once to ``out_dtype``. Where the inputs
make every FP32 partial sum exact (small integers, powers of two) the result must equal the
integer/float64 GEMM rounded once, bit for bit; for general inputs it must stay within the FP32
accumulation bound. The MX reference decodes E8M0 scales from their bits by hand.
"""


import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim.errors import PlatformError

BF16_NP = ml_dtypes.bfloat16
RNG = np.random.default_rng(7)
CUBE = ([16, 16], [64, 128], [64, 128])


def mm(a_trans=False, b_trans=False, out=pypto.DT_FP32, cube=CUBE):
    def body(a, b):
        pypto.set_cube_tile_shapes(*cube)
        return pypto.matmul(a, b, out, a_trans=a_trans, b_trans=b_trans)

    return body


def small_ints(shape, lo=-8, hi=8, scale=1.0):
    return RNG.integers(lo, hi + 1, shape).astype(np.float64) * scale


def bits16(a):
    return np.ascontiguousarray(a).view(np.uint16)


@pytest.mark.parametrize("in_np,in_dt", [(BF16_NP, "BF16"), (np.float16, "FP16")])
@pytest.mark.parametrize("out_name", ["FP32", "IN"])
def test_exact_accumulation_equals_the_exact_gemm_rounded_once(run, in_np, in_dt, out_name):
    # multiples of 1/8 in [-8, 8]: products are multiples of 1/64 below 64, K=256 sums stay < 2^24/64
    a64, b64 = small_ints((32, 256), scale=0.125), small_ints((256, 64), scale=0.125)
    a, b = a64.astype(in_np), b64.astype(in_np)
    assert (a.astype(np.float64) == a64).all() and (b.astype(np.float64) == b64).all()
    out_dt = pypto.DT_FP32 if out_name == "FP32" else getattr(pypto, f"DT_{in_dt}")
    out = run(mm(out=out_dt), a, b, tile=None)
    exact = a64 @ b64
    want = exact.astype(np.float32) if out_name == "FP32" else exact.astype(in_np)
    assert out.dtype == want.dtype
    if out_name == "FP32":
        np.testing.assert_array_equal(out, want)
    else:
        assert (bits16(out) == bits16(want)).all()


def test_bf16_random_inputs_to_bf16_within_one_ulp_on_a_small_fraction(run):
    a = RNG.uniform(-1, 1, (32, 512)).astype(BF16_NP)
    b = RNG.uniform(-0.1, 0.1, (512, 64)).astype(BF16_NP)
    out = run(mm(out=pypto.DT_BF16), a, b, tile=None).astype(np.float64)
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(BF16_NP).astype(np.float64)
    ulp = np.spacing(np.abs(ref).astype(BF16_NP).astype(np.float32)).astype(np.float64) * 2**16  # bf16 ulp
    diff = np.abs(out - ref)
    assert (diff <= ulp).all()
    assert (diff > 0).mean() < 0.01


def test_fp32_output_within_the_fp32_accumulation_bound(run):
    a = RNG.uniform(-1, 1, (16, 1024)).astype(BF16_NP)
    b = RNG.uniform(-1, 1, (1024, 32)).astype(BF16_NP)
    out = run(mm(), a, b, tile=None).astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 1024 * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    assert (np.abs(out - a64 @ b64) <= bound).all()


def test_fp32_inputs(run):
    a64, b64 = small_ints((16, 128), scale=0.5), small_ints((128, 32), scale=0.25)
    out = run(mm(), a64.astype(np.float32), b64.astype(np.float32), tile=None)
    np.testing.assert_array_equal(out, (a64 @ b64).astype(np.float32))


@pytest.mark.parametrize("a_trans,b_trans", [(False, True), (True, False), (True, True)])
def test_transposed_operands(run, a_trans, b_trans):
    a64, b64 = small_ints((32, 128)), small_ints((128, 64))  # logical [M, K] and [K, N]
    a = (a64.T if a_trans else a64).astype(BF16_NP)
    b = (b64.T if b_trans else b64).astype(BF16_NP)
    out = run(mm(a_trans, b_trans), np.ascontiguousarray(a), np.ascontiguousarray(b), tile=None)
    np.testing.assert_array_equal(out, (a64 @ b64).astype(np.float32))


def test_3d_batch(run):
    a64, b64 = small_ints((3, 16, 64)), small_ints((3, 64, 32))
    out = run(mm(), a64.astype(BF16_NP), b64.astype(BF16_NP), tile=None)
    assert out.shape == (3, 16, 32)
    np.testing.assert_array_equal(out, np.einsum("bmk,bkn->bmn", a64, b64).astype(np.float32))


def test_int8_extremes_large_k_exact(run):
    k = 4096
    a = RNG.integers(-128, 128, (8, k)).astype(np.int8)
    b = RNG.integers(-128, 128, (k, 32)).astype(np.int8)
    a[0], b[:, 0] = -128, -128  # 4096 * 16384 = 2^26
    a[1], b[:, 1] = 127, -128
    a[2, ::2], a[2, 1::2] = 127, -128
    out = run(mm(out=pypto.DT_INT32, cube=([16, 16], [64, 128], [64, 128])), a, b, tile=None)
    assert out.dtype == np.int32
    ref = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(out.astype(np.int64), ref)
    assert out[0, 0] == 4096 * 16384 and out[1, 1] == -4096 * 127 * 128
    # one element by plain Python integer arithmetic, independent of NumPy
    assert int(out[2, 5]) == sum(int(x) * int(y) for x, y in zip(a[2].tolist(), b[:, 5].tolist()))


def test_int8_b_trans(run):
    a = RNG.integers(-128, 128, (16, 256)).astype(np.int8)
    w = RNG.integers(-128, 128, (64, 256)).astype(np.int8)  # [N, K]
    out = run(mm(b_trans=True, out=pypto.DT_INT32), a, w, tile=None)
    np.testing.assert_array_equal(out.astype(np.int64), a.astype(np.int64) @ w.astype(np.int64).T)


def test_matmul_inside_a_loop_equals_one_matmul_per_iteration(run):
    # results of several iterations share one GEMM (lazy.py); each row must still be its own product
    x64, w64 = small_ints((20, 128)), small_ints((48, 128))

    def body(x, w):
        out = pypto.Tensor([20, 48], pypto.DT_FP32, "y")
        pypto.set_cube_tile_shapes(*CUBE)
        for off, tile in pypto.loop_unroll(0, 20, 1, unroll_list=[8]):
            pypto.assemble(pypto.matmul(pypto.view(x, [tile, 128], [off, 0]), w, pypto.DT_FP32, b_trans=True),
                           [off, 0], out)
        return out

    out = run(body, x64.astype(BF16_NP), w64.astype(BF16_NP), tile=None)
    np.testing.assert_array_equal(out, (x64 @ w64.T).astype(np.float32))


@pytest.mark.parametrize("b_trans", [False, True])
def test_large_weight_streamed_then_widened_gives_the_exact_product(b_trans):
    # >= 1M elements: the first use streams the weight block by block (gemm.py), the second use
    # widens it whole; both must be the exact product
    k, n = 1024, 1536
    x64 = small_ints((16, k))
    w64 = small_ints((n, k) if b_trans else (k, n))
    ref = x64 @ (w64.T if b_trans else w64)

    @pypto.frontend.jit
    def k2(x: pypto.Tensor[[16, k], pypto.DT_BF16], w: pypto.Tensor[list(w64.shape), pypto.DT_BF16],
           y1: pypto.Tensor[[16, n], pypto.DT_FP32], y2: pypto.Tensor[[16, n], pypto.DT_FP32]):
        pypto.set_cube_tile_shapes([16, 16], [256, 512], [128, 256])
        pypto.set_vec_tile_shapes(16, 512)
        first = pypto.matmul(x, w, pypto.DT_FP32, b_trans=b_trans)
        pypto.assemble(pypto.add(first, 0.0), [0, 0], y1)  # read now: settles the first batch
        pypto.assemble(pypto.matmul(x, w, pypto.DT_FP32, b_trans=b_trans), [0, 0], y2)

    y1, y2 = np.zeros((16, n), np.float32), np.zeros((16, n), np.float32)
    k2(x64.astype(BF16_NP), w64.astype(BF16_NP), y1, y2)
    np.testing.assert_array_equal(y1, ref.astype(np.float32))
    np.testing.assert_array_equal(y2, ref.astype(np.float32))


@pytest.mark.parametrize("k,n,trans", [(1024, 32768, False), (4096, 1536, True), (1024, 1000, False),
                                        (64, 100_000, True), (96, 4100, False)])
@pytest.mark.parametrize("np_dtype,dt", [(BF16_NP, pypto.DT_BF16), (np.float16, pypto.DT_FP16)])
def test_streamed_matmul_blocks_cover_every_column(k, n, trans, np_dtype, dt):
    from ptosim.gemm import streamed_matmul

    w64 = small_ints((n, k) if trans else (k, n))
    a64 = small_ints((16, k))
    out = streamed_matmul(a64.astype(np.float32), w64.astype(np_dtype), dt, trans)
    np.testing.assert_array_equal(out, (a64 @ (w64.T if trans else w64)).astype(np.float32))


# --- MX scaled_mm ---------------------------------------------------------------------------


def e8m0_value(code: np.ndarray) -> np.ndarray:
    """E8M0 decoded from its bits: 2^(code - 127) (code 255 is NaN; not used here)."""
    return np.exp2(code.astype(np.float64) - 127.0)


def mx_reference(a, b, sa_codes, sb_codes):
    """(A * sa) @ (B * sb) in float64; every 32-run along K shares one scale.

    scale_a is [M, ceil(K/64), 2] and scale_b [ceil(K/64), N, 2]: block j of K lives at
    [.., j // 2, .., j % 2]."""
    m, k = a.shape
    n = b.shape[1]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    out = np.zeros((m, n))
    for j in range(-(-k // 32)):
        ks = slice(32 * j, min(32 * (j + 1), k))
        sa = e8m0_value(sa_codes[:, j // 2, j % 2])[:, None]  # [M, 1]
        sb = e8m0_value(sb_codes[j // 2, :, j % 2])[None, :]  # [1, N]
        out += (a64[:, ks] @ b64[ks, :]) * sa * sb
    return out


@pytest.mark.parametrize("k", [128, 192])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("out_name", ["FP32", "BF16"])
def test_scaled_mm_on_ascend950_matches_the_mx_reference(run, k, fmt, out_name):
    m, n = 16, 64
    f8 = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
    # integers up to 16 are exact in both FP8 formats; scales 2^0..2^3 keep every FP32 sum exact
    a = RNG.integers(-16, 17, (m, k)).astype(f8)
    b = RNG.integers(-16, 17, (k, n)).astype(f8)
    sa_codes = RNG.integers(127, 131, (m, -(-k // 64), 2)).astype(np.uint8)
    sb_codes = RNG.integers(127, 131, (-(-k // 64), n, 2)).astype(np.uint8)
    sa, sb = sa_codes.view(ml_dtypes.float8_e8m0fnu), sb_codes.view(ml_dtypes.float8_e8m0fnu)
    out_dt = getattr(pypto, f"DT_{out_name}")

    def body(x, w, s_a, s_b):
        pypto.set_cube_tile_shapes([16, 16], [64, 128], [64, 64])
        return pypto.scaled_mm(x, w, out_dt, s_a, s_b)

    out = run(body, a, b, sa, sb, tile=None, platform="ascend950")
    ref = mx_reference(a, b, sa_codes, sb_codes)
    if out_name == "FP32":
        np.testing.assert_array_equal(out, ref.astype(np.float32))
    else:
        assert (bits16(out) == bits16(ref.astype(BF16_NP))).all()


def test_scaled_mm_transposed_scale_b_layout(run):
    m, n, k = 16, 32, 128
    a = RNG.integers(-8, 9, (m, k)).astype(ml_dtypes.float8_e4m3fn)
    w = RNG.integers(-8, 9, (n, k)).astype(ml_dtypes.float8_e4m3fn)  # [N, K] with b_trans
    sa_codes = RNG.integers(125, 130, (m, 2, 2)).astype(np.uint8)
    sb_codes = RNG.integers(125, 130, (2, n, 2)).astype(np.uint8)
    sb_t = np.ascontiguousarray(sb_codes.transpose(1, 0, 2))  # [N, ceil(K/64), 2]

    def body(x, wt, s_a, s_bt):
        pypto.set_cube_tile_shapes([16, 16], [64, 128], [32, 32])
        return pypto.scaled_mm(x, wt, pypto.DT_FP32, s_a, s_bt, b_trans=True, scale_b_trans=True)

    e8 = ml_dtypes.float8_e8m0fnu
    out = run(body, a, w, sa_codes.view(e8), sb_t.view(e8), tile=None, platform="ascend950")
    ref = mx_reference(a, np.ascontiguousarray(w.T), sa_codes, sb_codes)
    np.testing.assert_array_equal(out, ref.astype(np.float32))


def test_scaled_mm_is_refused_on_a2a3(run):
    a = np.zeros((16, 64), BF16_NP)
    b = np.zeros((64, 32), BF16_NP)

    def body(x, w):
        pypto.set_cube_tile_shapes([16, 16], [64, 64], [32, 32])
        return pypto.scaled_mm(x, w, pypto.DT_FP32, x, w)

    with pytest.raises(PlatformError) as exc:
        run(body, a, b, tile=None)
    assert exc.value.code == "platform"
    assert "scaled_mm" in str(exc.value) and "a2a3" in str(exc.value)


# --- bias through extend_params (PyPTO 0.2.0 CheckBiasParam) ------------------------------------


def _biased(out=pypto.DT_BF16):
    def body(a, b, bias):
        pypto.set_cube_tile_shapes(*CUBE)
        return pypto.matmul(a, b, out, b_trans=True, extend_params={"bias_tensor": bias})

    return body


def test_bias_joins_the_accumulator_before_the_one_rounding(run):
    """C = A @ B + bias in FP32, rounded once: exact operands make the sum exact, so the BF16
    result is the float64 sum rounded once (a separate BF16 add would round twice)."""
    a64, b64 = small_ints((32, 256), scale=0.125), small_ints((64, 256), scale=0.125)
    bias64 = small_ints((1, 64), scale=1 / 1024)
    a, b, bias = a64.astype(BF16_NP), b64.astype(BF16_NP), bias64.astype(np.float32)
    out = run(_biased(), a, b, bias, tile=None)
    want = (a64 @ b64.T + bias64).astype(np.float32).astype(BF16_NP)
    assert (bits16(out) == bits16(want)).all()


def test_bias_in_a_loop_is_batched_per_bias(run):
    """Two biases on one weight inside a loop: each matmul adds its own bias (the deferred GEMM
    batches are keyed by the bias too)."""
    a64, b64 = small_ints((16, 64)), small_ints((32, 64))
    b1, b2 = small_ints((1, 32)), small_ints((1, 32)) + 100
    a, b = a64.astype(BF16_NP), b64.astype(BF16_NP)

    def body(a, b, bias1, bias2):
        pypto.set_cube_tile_shapes(*CUBE)
        y1 = pypto.matmul(a, b, pypto.DT_FP32, b_trans=True, extend_params={"bias_tensor": bias1})
        y2 = pypto.matmul(a, b, pypto.DT_FP32, b_trans=True, extend_params={"bias_tensor": bias2})
        return y1, y2

    y1, y2 = run(body, a, b, b1.astype(np.float32), b2.astype(np.float32), tile=None)
    np.testing.assert_array_equal(y1, (a64 @ b64.T + b1).astype(np.float32))
    np.testing.assert_array_equal(y2, (a64 @ b64.T + b2).astype(np.float32))


@pytest.mark.parametrize("bias,match", [
    (np.zeros((1, 64), BF16_NP), "FP32 bias_tensor on a2a3; got BF16"),  # FC3001, measured on 0.2.0 SIM
    (np.zeros((64,), np.float32), r"must be \[1, 64\]"),                 # FC3000: 2 dims expected
    (np.zeros((1, 32), np.float32), r"must be \[1, 64\]"),
])
def test_bias_refusals_as_pypto(run, bias, match):
    a, b = np.zeros((16, 256), BF16_NP), np.zeros((64, 256), BF16_NP)
    with pytest.raises(Exception, match=match):
        run(_biased(), a, b, bias, tile=None)


def test_a_bf16_bias_is_legal_on_ascend950(run):
    a64, b64 = small_ints((16, 256), scale=0.125), small_ints((64, 256), scale=0.125)
    bias64 = small_ints((1, 64), scale=0.5)
    out = run(_biased(pypto.DT_FP32), a64.astype(BF16_NP), b64.astype(BF16_NP), bias64.astype(BF16_NP), tile=None,
              platform="ascend950")
    np.testing.assert_array_equal(out, (a64 @ b64.T + bias64).astype(np.float32))
