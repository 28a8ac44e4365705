"""The MoE routing references (pattern_gen/emit/golden/routing.py) against transformers' own
routers, given the same inputs and nothing else: DeepSeek-V3's group-limited sigmoid router with
the score-correction bias and Qwen3-MoE's softmax router, then Qwen3-MoE's whole sparse block.

Routing decisions are compared apart from values: each token's set of experts (the models' topk
order is unspecified) on the tokens whose choice is not within rounding of a tie — and the test
fails if more than a few tokens are set aside, so it cannot pass by excluding them all.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

_PATH = Path(__file__).resolve().parents[2] / "src" / "pattern_gen" / "emit" / "golden" / "routing.py"
_SPEC = importlib.util.spec_from_file_location("golden_routing", _PATH)
routing = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(routing)

T, H, E = 509, 64, 64
#: a choice within this of a tie may go either way between two FP32 computations of the scores
MARGIN = 1e-5


def _sets(experts: np.ndarray) -> list[frozenset[int]]:
    return [frozenset(row.tolist()) for row in experts]


def _by_expert(experts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    order = np.argsort(experts, axis=-1)
    return np.take_along_axis(weights, order, axis=-1)


def _compare(ours, theirs, clear: np.ndarray) -> None:
    (w, e), (tw, te) = ours, theirs
    assert clear.mean() > 0.97, f"{(~clear).sum()} of {len(clear)} tokens within {MARGIN} of a tie"
    mismatched = [t for t in np.nonzero(clear)[0] if _sets(e[t:t + 1]) != _sets(te[t:t + 1])]
    assert not mismatched, f"different experts on clear tokens {mismatched[:5]}"
    same = np.nonzero(clear)[0]
    got, want = _by_expert(e[same], w[same]), _by_expert(te[same], tw[same])
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("norm", [True, False])
def test_grouped_router_matches_deepseek_v3(norm: bool) -> None:
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3TopkRouter

    cfg = DeepseekV3Config(hidden_size=H, n_routed_experts=E, n_group=8, topk_group=4, num_experts_per_tok=6,
                           norm_topk_prob=norm, routed_scaling_factor=2.5)
    router = DeepseekV3TopkRouter(cfg).eval()
    gen = torch.Generator().manual_seed(15)
    with torch.no_grad():
        router.weight.copy_(torch.randn(E, H, generator=gen) * 0.2)
        router.e_score_correction_bias.copy_(torch.randn(E, generator=gen) * 0.05)
        x = torch.randn(T, H, generator=gen)
        _, tw, ti = router(x)
    xs, wg, bias = x.numpy(), router.weight.detach().numpy(), router.e_score_correction_bias.numpy()
    logits = (xs @ wg.T).astype(np.float32)  # our own FP32 product
    ours = routing.route_grouped(logits, bias, n_group=8, topk_group=4, top_k=6, norm_topk_prob=norm,
                                 routed_scaling_factor=2.5)
    scores = 1 / (1 + np.exp(-logits.astype(np.float64))) + bias
    group_rank = np.sort(scores.reshape(T, 8, 8), axis=-1)[..., -2:].sum(-1)
    eligible = np.stack([np.isin(np.arange(E) // 8, np.argsort(-group_rank[t])[:4]) for t in range(T)])
    clear = (routing.tie_margin(group_rank, 4) > MARGIN) & (routing.tie_margin(np.where(eligible, scores, -np.inf), 6) > MARGIN)
    _compare(ours, (tw.numpy(), ti.numpy()), clear)
    # best first by the biased score, and only eligible groups
    _, e = ours
    chosen = np.take_along_axis(scores, e.astype(np.int64), -1)
    assert np.all(np.diff(chosen, axis=-1) <= 0)
    assert len({frozenset((row // 8).tolist()) for row in e}) > 1 and all(len(set((row // 8).tolist())) <= 4 for row in e)


@pytest.mark.parametrize("norm", [True, False])
def test_softmax_router_matches_qwen3_moe(norm: bool) -> None:
    from transformers import Qwen3MoeConfig
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeTopKRouter

    cfg = Qwen3MoeConfig(hidden_size=H, num_experts=E, num_experts_per_tok=8, norm_topk_prob=norm)
    router = Qwen3MoeTopKRouter(cfg).eval()
    gen = torch.Generator().manual_seed(16)
    with torch.no_grad():
        router.weight.copy_(torch.randn(E, H, generator=gen) * 0.2)
        x = torch.randn(T, H, generator=gen)
        _, tw, ti = router(x)
    logits = (x.numpy() @ router.weight.detach().numpy().T).astype(np.float32)
    ours = routing.route_softmax(logits, top_k=8, norm_topk_prob=norm)
    probs = np.exp(logits - logits.max(-1, keepdims=True).astype(np.float64))
    clear = routing.tie_margin(probs / probs.sum(-1, keepdims=True), 8) > MARGIN
    _compare(ours, (tw.numpy(), ti.numpy()), clear)


def test_ties_take_the_lower_index() -> None:
    """Equal scores: the lower group, then the lower expert; listed best first."""
    logits = np.zeros((2, 16), np.float32)
    logits[1, [3, 9, 12]] = 1.0
    w, e = routing.route_grouped(logits, np.zeros(16), n_group=4, topk_group=2, top_k=3, norm_topk_prob=False,
                                 routed_scaling_factor=1.0)
    assert e.tolist() == [[0, 1, 2], [3, 9, 0]]  # row 1: groups 0 (3) and 2 (9), then group 0's expert 0
    w, e = routing.route_softmax(logits, top_k=2, norm_topk_prob=True)
    assert e.tolist() == [[0, 1], [3, 9]] and np.allclose(w.sum(-1), 1)


def test_experts_sum_matches_qwen3_moe_block() -> None:
    """Qwen3-MoE's sparse block in float64: its router's choice fed to our weighted expert sum, with
    SwiGLU experts read from the module's weights, equals the block's output."""
    from transformers import Qwen3MoeConfig
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

    cfg = Qwen3MoeConfig(hidden_size=H, num_experts=16, num_experts_per_tok=4, norm_topk_prob=True,
                         moe_intermediate_size=32)
    block = Qwen3MoeSparseMoeBlock(cfg).double().eval()
    gen = torch.Generator().manual_seed(17)
    with torch.no_grad():
        for p in block.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 0.2)
        x = torch.randn(1, 37, H, generator=gen, dtype=torch.float64)
        want = block(x)[0].numpy()
        _, tw, ti = block.gate(x[0])
    gate_up = block.experts.gate_up_proj.detach().numpy()
    down = block.experts.down_proj.detach().numpy()

    def expert(e: int, rows: np.ndarray) -> np.ndarray:
        g, u = np.split(rows @ gate_up[e].T, 2, axis=-1)
        return (g / (1 + np.exp(-g)) * u) @ down[e].T

    got = routing.experts_sum(x[0].numpy(), ti.numpy(), tw.numpy(), expert)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
