"""ptosim run time versus the plain NumPy FP32 computation of the same math.

    PYTHONPATH=src python benchmarks/sim_vs_numpy.py [--reps 7] [--sk04] [--profile]

Default: the AT-10 kernel of ``tests/ptosim/at10_kernel.py`` (RMSNorm + BF16 linear with
``b_trans``) at T=128, K=4096, N=1536, unroll 16 (eight iterations) and unroll 128. The baseline
starts from FP32 arrays already in memory: RMSNorm in FP32, cast to BF16 and back, FP32 GEMM with
the FP32 weight. Both sides are timed in the same process, best of ``--reps`` runs; the goal is a
ratio <= 2.0.

``--sk04``: also a two-matmul MLA-prolog-like kernel (RMSNorm, x @ wq_a^T, RMSNorm, @ wq_b) at
H=4096, Q=1024, NH=64, D=512 (wq_b is [1024, 32768]), T=16.
"""


import argparse
import cProfile
import importlib.util
import pstats
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import ml_dtypes
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
try:
    import ptosim as pypto
except ImportError:  # running from a source checkout without an install
    sys.path.insert(0, str(ROOT / "src"))
    import ptosim as pypto

BF16_NP = ml_dtypes.bfloat16
EPS = 1e-6
GOAL = 2.0


def _load_at10():
    path = ROOT / "tests" / "ptosim" / "at10_kernel.py"
    spec = importlib.util.spec_from_file_location("at10_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def best_of(fns: Sequence[Callable[[], object]], reps: int) -> list[float]:
    """Best wall time of each function; runs are interleaved so both see the same machine load."""
    for fn in fns:
        fn()  # warm-up: BLAS threads, page faults, first-call caches
    best = [float("inf")] * len(fns)
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def _rms_fp32(x: np.ndarray, g: np.ndarray | None) -> np.ndarray:
    k = x.shape[-1]
    ms = np.sum(x * x, axis=-1, keepdims=True) * np.float32(1.0 / k) + np.float32(EPS)
    y = x * (np.float32(1.0) / np.sqrt(ms))
    return y * g if g is not None else y


def _bf16_round(a: np.ndarray) -> np.ndarray:
    return a.astype(BF16_NP).astype(np.float32)


# --- AT-10 ---------------------------------------------------------------------------------


def at10_case(t: int, k: int, n: int, unroll: int, reps: int, profile: bool) -> float:
    at10 = _load_at10()
    cube_m = [min(unroll, 128)] * 2
    kernel = at10.build_at10(k, n, unroll, rows=2, cube=(cube_m, [256, 512], [128, 256]))
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (t, k)).astype(BF16_NP)
    g = rng.uniform(-1, 1, (k,)).astype(BF16_NP)
    w = rng.uniform(-0.1, 0.1, (n, k)).astype(BF16_NP)
    y = np.zeros((t, n), BF16_NP)
    x32, g32, w32 = x.astype(np.float32), g.astype(np.float32), w.astype(np.float32)

    def numpy_fp32() -> np.ndarray:
        return _bf16_round(_rms_fp32(x32, g32)) @ w32.T

    def sim() -> None:
        kernel(x, g, w, y)

    t_np, t_sim = best_of([numpy_fp32, sim], reps)
    if profile:
        _profile(sim)
    _sanity(y, numpy_fp32())
    ratio = t_sim / t_np
    print(f"AT-10 T={t} K={k} N={n} unroll={unroll:<4d} ({-(-t // unroll)} iterations): "
          f"ptosim {t_sim * 1e3:7.1f} ms, numpy {t_np * 1e3:7.1f} ms, ratio {ratio:.2f}"
          f"{'' if ratio <= GOAL else '  (above goal %.1f)' % GOAL}")
    return ratio


# --- SK-04-like MLA prolog -----------------------------------------------------------------


def build_sk04(h: int, q: int, nh: int, d: int, unroll: int):
    BF16, FP32 = pypto.DT_BF16, pypto.DT_FP32
    T = pypto.DYNAMIC

    def rms(xt, gf, k, rows):
        pypto.set_vec_tile_shapes(rows, k)
        xf = pypto.cast(xt, FP32)
        ss = pypto.sum(pypto.mul(xf, xf), -1, keepdim=True)
        rstd = pypto.rsqrt(pypto.add(pypto.mul(ss, 1.0 / k), EPS))
        return pypto.cast(pypto.mul(pypto.mul(xf, rstd), gf), BF16)

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128},
                        pass_options={"cube_l1_reuse_setting": {-1: 2}})
    def mla_prolog_q(
        x: pypto.Tensor[[T, h], BF16],
        g_x: pypto.Tensor[[h], BF16],
        wq_a: pypto.Tensor[[q, h], BF16],
        g_q: pypto.Tensor[[q], BF16],
        wq_b: pypto.Tensor[[q, nh * d], BF16],
        q_out: pypto.Tensor[[T, nh, d], BF16],
    ):
        pypto.experimental.set_operation_options(combine_axis=True)
        pypto.set_vec_tile_shapes(1, h)
        gxf = pypto.cast(pypto.reshape(g_x, [1, h], inplace=True), FP32)
        pypto.set_vec_tile_shapes(1, q)
        gqf = pypto.cast(pypto.reshape(g_q, [1, q], inplace=True), FP32)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="MLA_LOOP", idx_name="off", unroll_list=[unroll]):
            xt = pypto.view(x, [tile, h], [off, 0])
            pypto.set_semantic_label("x_norm")
            xn = rms(xt, gxf, h, 2)
            pypto.set_semantic_label("q_a_proj")
            pypto.set_cube_tile_shapes([16, 16], [256, 512], [128, 256])
            qa = pypto.matmul(xn, wq_a, BF16, b_trans=True)
            pypto.set_semantic_label("q_norm")
            qn = rms(qa, gqf, q, 4)
            pypto.set_semantic_label("q_b_proj")
            pypto.set_cube_tile_shapes([16, 16], [256, 512], [128, 256])
            qb = pypto.matmul(qn, wq_b, BF16)
            pypto.assemble(pypto.reshape(qb, [tile, nh, d]), [off, 0, 0], q_out)

    return mla_prolog_q


def sk04_case(reps: int, profile: bool, t: int = 16, h: int = 4096, q: int = 1024, nh: int = 64, d: int = 512) -> float:
    kernel = build_sk04(h, q, nh, d, unroll=16)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (t, h)).astype(BF16_NP)
    g_x = rng.uniform(-1, 1, (h,)).astype(BF16_NP)
    wq_a = rng.uniform(-0.1, 0.1, (q, h)).astype(BF16_NP)
    g_q = rng.uniform(-1, 1, (q,)).astype(BF16_NP)
    wq_b = rng.uniform(-0.1, 0.1, (q, nh * d)).astype(BF16_NP)
    out = np.zeros((t, nh, d), BF16_NP)
    x32, gx32, wa32, gq32, wb32 = (a.astype(np.float32) for a in (x, g_x, wq_a, g_q, wq_b))

    def numpy_fp32() -> np.ndarray:
        qa = _bf16_round(_bf16_round(_rms_fp32(x32, gx32)) @ wa32.T)
        return (_bf16_round(_rms_fp32(qa, gq32)) @ wb32).reshape(t, nh, d)

    def sim() -> None:
        kernel(x, g_x, wq_a, g_q, wq_b, out)

    t_np, t_sim = best_of([numpy_fp32, sim], reps)
    if profile:
        _profile(sim)
    _sanity(out, numpy_fp32())
    ratio = t_sim / t_np
    print(f"SK-04-like MLA prolog T={t} H={h} Q={q} NH={nh} D={d}: "
          f"ptosim {t_sim * 1e3:7.1f} ms, numpy {t_np * 1e3:7.1f} ms, ratio {ratio:.2f}"
          f"{'' if ratio <= GOAL else '  (above goal %.1f)' % GOAL}")
    return ratio


def _sanity(out: np.ndarray, baseline: np.ndarray) -> None:
    """The timed kernel must compute the same math as the baseline (upstream BF16 rule)."""
    result = pypto.testing.compare(out, baseline.astype(BF16_NP), 1e-4, 2.0**-7, 0.005, name="ptosim vs numpy")
    if not result.passed:
        raise SystemExit(f"benchmark kernel is wrong: {result}")


def _profile(fn: Callable[[], None]) -> None:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="repetitions per measurement (best is kept)")
    parser.add_argument("--sk04", action="store_true", help="also run the SK-04-like two-matmul kernel")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one ptosim run per case")
    args = parser.parse_args(argv)
    ratios = [at10_case(128, 4096, 1536, u, args.reps, args.profile) for u in (16, 128)]
    if args.sk04:
        ratios.append(sk04_case(args.reps, args.profile))
    return 0 if max(ratios) <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
