"""The L1-reuse rules read from PyPTO 0.2.0's SIM on the K-split linear (AT-22 in SK-03, K=7168 N=1536,
``cube_l1_reuse_setting={-1: 2, 1: 1}``) and the unsplit linear it differs from: AIC task counts as
PyPTO's SIM ran them (l1_copy_reuse.cpp's pass logs: one hash class for both halves; adjacent n tiles
of a half paired where the A view is assembled once per view)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pattern_gen.output.instances import _kernel_attr, call_instance, load_instance_module
from ptosim import cost

GENERATED = Path(__file__).resolve().parents[2] / "generated"
K_SPLIT = GENERATED / "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3-k_split1-K7168"
K_SPLIT_K256 = GENERATED / "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3-k_split1-K256-N128"
UNSPLIT = GENERATED / "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3"


def _estimate(folder: Path, T: int) -> cost.Estimate:
    kernel, golden = load_instance_module(folder, "kernel"), load_instance_module(folder, "golden")
    call_instance(kernel, "run", call_instance(golden, "make_inputs", T, seed=0))
    return cost.estimate(getattr(kernel, _kernel_attr(kernel)).last_record)


def _aic(est: cost.Estimate) -> int:
    return est.summary()["tasks_by_kind"]["AIC"]


def test_k_split_halves_are_one_l1_class():
    """Both halves take key 0's count (2; the setting's key 1 names no class): 12 AIC tasks at T=16, as in
    PyPTO; numbered one matmul at a time, the second half took key 1 (1) and ran its 12 tiles unmerged."""
    est = _estimate(K_SPLIT, 16)
    assert _aic(est) == 12
    assert "l1-hash-classes" in est.rules_fired


@pytest.mark.parametrize("folder,T,aic", [(K_SPLIT, 1, 24), (K_SPLIT, 128, 48), (K_SPLIT_K256, 16, 2),
                                          (K_SPLIT_K256, 128, 4), (UNSPLIT, 16, 12), (UNSPLIT, 128, 24)],
                         ids=["ksplit-T1", "ksplit-T128", "k256-T16", "k256-T128", "unsplit-T16", "unsplit-T128"])
def test_a_through_a_view_of_a_multi_block_result_pairs_n_tiles(folder, T, aic):
    """PyPTO's SIM: the K-split pairs adjacent n tiles of a half at T=128 (48 of 96), not at T=1 (one
    row block: 24); at K=256 N=128 a half has one n tile, so its m tiles pair through the weight block
    (8 -> 4 at T=128); the unsplit linear reads A straight from the norm and pairs m tiles only (12 at
    T=16, 24 of 48 at T=128)."""
    est = _estimate(folder, T)
    assert _aic(est) == aic
    assert ("l1-reuse-shared-view-a" in est.rules_fired) == (folder == K_SPLIT and T > 1)


@pytest.mark.parametrize("T,norm,epilogue", [(16, 2, 2), (128, 16, 16)], ids=["T16", "T128"])
def test_k_split_k256_norm_takes_hash_order_0(T, norm, epilogue):
    """PyPTO's SIM on the K-split at K=256 N=128 with ``vec_nbuffer_setting={0: 2}``: NBufferMerge logs hash
    order 0 for the norm both halves read through a view, then the matmuls, the epilogue last, so the
    norm's row blocks pair (4 -> 2, 32 -> 16) and the epilogue's do not (7 and 37 tasks in all; numbered
    from the root's end, the epilogue paired and the norm did not: 8 and 45)."""
    est = _estimate(K_SPLIT_K256, T)
    labels = est.summary()["per_label_tasks"]
    assert (labels["proj.rmsnorm/AIV"], labels["proj.linear.epilogue/AIV"]) == (norm, epilogue)
    assert "vec-hash-order-viewed-a-first" in est.rules_fired
