"""The hand-written AT-10 kernel (at10_kernel.py) against an independent NumPy golden.

The golden is float64 math with ml_dtypes rounding at the kernel's cast points (BF16 activations
before the matmul, BF16 output); it never calls ptosim. Besides the upstream compare rule, every
row must be within tolerance on its own, so a wrong tail iteration cannot hide under the ratio.
Inputs as upstream: x ~ U(-1, 1), weights ~ U(-0.1, 0.1), gamma ~ U(-1, 1), fixed seed.
"""


import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from ptosim.testing import compare, compare_rows

BF16 = ml_dtypes.bfloat16
ATOL, RTOL, RATIO = 1e-4, 2.0**-7, 0.005
EPS = 1e-6


def _load_kernel_module():
    spec = importlib.util.spec_from_file_location("at10_kernel", Path(__file__).with_name("at10_kernel.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


AT10 = _load_kernel_module()


def golden(x: np.ndarray, gamma: np.ndarray | None, weight: np.ndarray) -> np.ndarray:
    """RMSNorm in float64, gamma, one rounding to BF16, exact GEMM, one rounding to BF16."""
    xf = x.astype(np.float64)
    rstd = 1.0 / np.sqrt(np.mean(xf * xf, axis=-1, keepdims=True) + EPS)
    y = xf * rstd
    if gamma is not None:
        y = y * gamma.astype(np.float64)[None, :]
    act = y.astype(BF16).astype(np.float64)
    return (act @ weight.astype(np.float64).T).astype(BF16)


def bad_rows(out: np.ndarray, ref: np.ndarray) -> list[int]:
    """Rows whose worst error exceeds atol + rtol * (the row's largest reference magnitude);
    written here, apart from ptosim.testing.compare_rows, which is checked against it."""
    o, r = out.astype(np.float64), ref.astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(o - r).max(axis=1)
        ok = err <= ATOL + RTOL * np.abs(r).max(axis=1)
    return [int(i) for i in np.flatnonzero(~ok)]


def inputs(t: int, k: int, n: int, seed: int = 2024):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (t, k)).astype(BF16)
    gamma = rng.uniform(-1, 1, (k,)).astype(BF16)
    weight = rng.uniform(-0.1, 0.1, (n, k)).astype(BF16)
    return x, gamma, weight


CASES = [
    # T,  u,  K,    N,    variant, gamma  (T a multiple of u, T = u + 1, T = 3, T = 1, other tails)
    (32, 16, 1024, 256, "A", True),
    (17, 16, 2048, 512, "B", True),
    (3, 4, 4096, 256, "A", False),
    (1, 8, 1024, 1536, "B", False),
    (9, 8, 4096, 768, "A", True),
    (3, 2, 1024, 256, "B", True),
    (17, 16, 1024, 256, "A", False),
    (1, 1, 2048, 256, "A", True),
]


@pytest.mark.parametrize("t,u,k,n,variant,with_gamma", CASES)
def test_at10_matches_the_golden(t, u, k, n, variant, with_gamma):
    x, gamma, weight = inputs(t, k, n)
    kernel = AT10.build_at10(k, n, u, variant=variant, gamma=with_gamma, rows=4 if k <= 1024 else 2)
    y = np.full((t, n), np.nan, BF16)
    if with_gamma:
        kernel(x, gamma, weight, y)
    else:
        kernel(x, weight, y)
    ref = golden(x, gamma if with_gamma else None, weight)
    result = compare(y, ref, ATOL, RTOL, RATIO, name=f"y[T={t},u={u}]")
    assert result.passed, str(result)
    assert bad_rows(y, ref) == [], f"rows out of tolerance: {bad_rows(y, ref)}"
    assert compare_rows(y, ref, ATOL, RTOL, RATIO) == []
    # the tail path really ran: the last iteration's factor is 1 unless u divides T
    factors = sorted({op.loops[0].factor for op in kernel.last_record.ops if op.op == "matmul"})
    assert factors == sorted({u if t >= u else 1, *([1] if t % u else [])})


def test_the_row_check_catches_a_broken_tail():
    t, k, n = 33, 1024, 256
    x, gamma, weight = inputs(t, k, n)
    kernel = AT10.build_at10(k, n, 16, rows=4)
    y = np.zeros((t, n), BF16)
    kernel(x, gamma, weight, y)
    ref = golden(x, gamma, weight)
    assert bad_rows(y, ref) == []
    broken = y.copy()
    broken[-1, :40] = ref[-1, :40].astype(np.float64) * 1.05  # 40 tail elements off by 5 %
    assert compare(broken, ref, ATOL, RTOL, RATIO).passed  # 40 of 8448 elements: under the ratio...
    assert bad_rows(broken, ref) == [t - 1]  # ...but not per row
    assert compare_rows(broken, ref, ATOL, RTOL, RATIO) == [t - 1]


def test_golden_without_gamma_differs_from_with_gamma():
    # guards the golden itself: gamma must matter, or a kernel skipping it would pass
    x, gamma, weight = inputs(4, 1024, 256)
    assert not compare(golden(x, None, weight), golden(x, gamma, weight), ATOL, RTOL, RATIO).passed


def test_kernel_options_are_recorded():
    x, gamma, weight = inputs(5, 1024, 256)
    kernel = AT10.build_at10(1024, 256, 4, rows=4)
    kernel(x, gamma, weight, np.zeros((5, 256), BF16))
    jit = [s for s in kernel.last_record.scopes.values() if s["kind"] == "jit"][0]
    assert jit["runtime"].stitch_function_max_num == 128
    assert jit["pass"].cube_l1_reuse_setting.granularity(1) == 1
    assert jit["pass"].cube_l1_reuse_setting.granularity(0) == 2
    assert jit["pass"].vec_nbuffer_setting.granularity(0) == 2
    labels = {op.label for op in kernel.last_record.ops if op.loops}
    assert labels == {"", "rmsnorm", "linear"}
