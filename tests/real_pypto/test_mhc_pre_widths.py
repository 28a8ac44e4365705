"""SK-03's mhc_pre regime at DeepSeek-V4 hc_pre's real width, N = 24, and at widths that are not a
multiple of 8 or 16: PyPTO 0.2.0 compiles the kernel, runs its SIM cost model and its CPU verifier
matches the golden. Measured (K = 28672, no gamma): every N of 1, 2, 4, 6, 8, 10, 12, 16, 20, 24,
28, 32, 36, 40, 48, 56, 60, 64 compiles, simulates (110-113 µs, 58 tasks at T = 16) and verifies at
T = 3 and 16, and so do N = 23 and 63 at T = 3; so the regime takes any N up to its bound of 64.
Skipped where pypto is not installed."""

from __future__ import annotations

import pytest

pytest.importorskip("pypto", reason="pypto is not installed: pip install -e '.[pypto]'")

from pattern_gen.catalogue import load_catalogue  # noqa: E402
from pattern_gen.output.instances import write_instance  # noqa: E402
from pattern_gen.output.pypto_run import run_pypto_instance  # noqa: E402
from pattern_gen.plan.kernel_plan import Request  # noqa: E402

CAT = load_catalogue([])


def _folder(n: int, tmp_path):
    request = Request(skeleton="SK-03", atoms=("AT-10",), dims={"K": 28672, "N": n}, params={"out_dtype": "FP32"}, target="pypto")
    return write_instance(CAT, request, tmp_path)[1]


@pytest.fixture(scope="module")
def n24(tmp_path_factory):
    return _folder(24, tmp_path_factory.mktemp("mhc_pre"))


def test_n24_compiles_and_simulates(n24):
    assert 'INPUTS = {"x": ["T", "K"], "weight": ["K", "N"]}' in (n24 / "kernel.py").read_text()  # no gamma: the regime's default
    done = run_pypto_instance(n24, T=16)
    assert done.pypto is not None and done.pypto["e2e_us"] > 0 and done.pypto["tasks"] > 0


@pytest.mark.parametrize("T", [3, 16])
def test_n24_verifies(n24, T):
    done = run_pypto_instance(n24, T=T, verify=True).result
    assert done.passed, "\n".join(o["message"] for o in done.outputs.values() if not o["passed"])


@pytest.mark.parametrize("n", [1, 20])
def test_widths_no_multiple_of_8_verify(n, tmp_path):
    done = run_pypto_instance(_folder(n, tmp_path), T=3, verify=True).result
    assert done.passed, "\n".join(o["message"] for o in done.outputs.values() if not o["passed"])


@pytest.mark.parametrize("K", [16384, 20480])
def test_the_widths_whose_advised_norm_tile_pypto_cannot_simulate_run(K, tmp_path):
    """At K = 16384 and 20480 PyPTO 0.2.0's SIMULATION fails on the advised [8, 2048] norm tile;
    the plan takes [8, 1024] there (the regime's ``instead:``) and the kernel simulates."""
    request = Request(skeleton="SK-03", atoms=("AT-10",), dims={"K": K, "N": 32}, params={"out_dtype": "FP32"}, target="pypto")
    folder = write_instance(CAT, request, tmp_path)[1]
    assert "pypto.set_vec_tile_shapes(8, 1024)" in (folder / "kernel.py").read_text()
    done = run_pypto_instance(folder, T=4)
    assert done.pypto is not None and done.pypto["e2e_us"] > 0
