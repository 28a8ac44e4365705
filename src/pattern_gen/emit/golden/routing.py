"""NumPy references of MoE routing (upstream's AT-15 expert gating), hand-written from the two
models' definitions and independent of ptosim and of any card: from FP32 router logits to the
chosen experts and their weights, then the experts' weighted sum.

Two routers:

- ``route_grouped`` — DeepSeek-V3: sigmoid scores; the choice adds the score-correction bias;
  experts are split into ``n_group`` equal groups, a group's rank is the sum of its two best biased
  scores, only the best ``topk_group`` groups stay eligible; the ``top_k`` best biased scores among
  them are the experts; their weights are the *unbiased* scores, optionally normalised to sum 1
  (plus 1e-20), times ``routed_scaling_factor``.
- ``route_softmax`` — Qwen3-MoE: softmax over all experts (FP32), the ``top_k`` best, optionally
  normalised to sum 1.

Ties. A choice among equal values takes the lower index (the lower group, the lower expert), and
the chosen experts are listed best first. The models leave ties to ``torch.topk`` (``sorted=False``
for DeepSeek-V3: an unspecified order), so a comparison with them compares each token's *set* of
experts, and only on tokens whose choice is not within ``margin`` of a tie (``tie_margin``).

Inlined into the golden of every SK-07 (MoE) instance, after ``atoms.py``; ``route_tokens`` is the
reference SK-07's composition calls for the atom in its ``gate`` slot (AT-15).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "eligible",
    "experts_sum",
    "group_ranks",
    "route_grouped",
    "route_softmax",
    "route_tokens",
    "router_scores",
    "tie_margin",
]


def _best(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values of each row, best first; equal values in index order."""
    return np.argsort(-np.asarray(values, np.float64), axis=-1, kind="stable")[..., :k]


def router_scores(logits, bias, *, router: str, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(the scores the weights are taken from, the values the choice compares) [T, E] from router
    logits: sigmoid and sigmoid + bias (``grouped_sigmoid``), or the softmax twice (``softmax``);
    in ``dtype`` (FP32 as the models; float64 for the golden's tie bands)."""
    z = np.asarray(logits, dtype)
    if router == "softmax":
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        probs = (e / e.sum(axis=-1, keepdims=True)).astype(dtype)
        return probs, probs
    scores = (dtype(1) / (dtype(1) + np.exp(-z))).astype(dtype)
    return scores, (scores + np.asarray(bias, dtype)).astype(dtype)


def group_ranks(choice: np.ndarray, n_group: int) -> np.ndarray:
    """[T, n_group]: each group's rank, the sum of its two best choice values."""
    T, E = choice.shape
    grouped = choice.reshape(T, n_group, E // n_group)
    two = np.take_along_axis(grouped, _best(grouped, 2), axis=-1)
    return (two[..., 0] + two[..., 1]).astype(choice.dtype)


def eligible(choice: np.ndarray, ranks: np.ndarray, topk_group: int) -> np.ndarray:
    """The choice values of the experts in each token's ``topk_group`` best groups, -inf elsewhere."""
    keep = np.zeros(ranks.shape, bool)
    np.put_along_axis(keep, _best(ranks, topk_group), True, axis=-1)
    return np.where(np.repeat(keep, choice.shape[-1] // ranks.shape[-1], axis=1), choice, -np.inf)


def route_grouped(
    logits, bias, *, n_group: int, topk_group: int, top_k: int, norm_topk_prob: bool, routed_scaling_factor: float
):
    """DeepSeek-V3's router from FP32 logits [T, E] and the correction bias [E]: (weights [T, top_k]
    FP32, experts [T, top_k] int32), best first by biased score."""
    if np.shape(logits)[-1] % n_group:
        raise ValueError(f"{np.shape(logits)[-1]} experts do not split into {n_group} groups")
    scores, choice = router_scores(logits, bias, router="grouped_sigmoid")
    experts = _best(eligible(choice, group_ranks(choice, n_group), topk_group), top_k)
    weights = np.take_along_axis(scores, experts, axis=-1)
    if norm_topk_prob:
        weights = weights / (weights.sum(axis=-1, keepdims=True, dtype=np.float32) + np.float32(1e-20))
    return (weights * np.float32(routed_scaling_factor)).astype(np.float32), experts.astype(np.int32)


def route_softmax(logits, *, top_k: int, norm_topk_prob: bool):
    """Qwen3-MoE's router from FP32 logits [T, E]: (weights [T, top_k] FP32, experts [T, top_k]
    int32), best first."""
    probs, _ = router_scores(logits, None, router="softmax")
    experts = _best(probs, top_k)
    weights = np.take_along_axis(probs, experts, axis=-1)
    if norm_topk_prob:
        weights = weights / weights.sum(axis=-1, keepdims=True, dtype=np.float32)
    return weights.astype(np.float32), experts.astype(np.int32)


def route_tokens(
    logits,
    bias,
    *,
    router: str,
    n_group: int,
    topk_group: int,
    top_k: int,
    norm_topk_prob: bool,
    routed_scaling_factor: float,
):
    """AT-15 with its card's parameters: ``route_grouped`` (``router: grouped_sigmoid``) or
    ``route_softmax`` times ``routed_scaling_factor``; (weights [T, top_k] FP32, experts [T, top_k])."""
    if router == "grouped_sigmoid":
        return route_grouped(
            logits,
            bias,
            n_group=n_group,
            topk_group=topk_group,
            top_k=top_k,
            norm_topk_prob=norm_topk_prob,
            routed_scaling_factor=routed_scaling_factor,
        )
    weights, experts = route_softmax(logits, top_k=top_k, norm_topk_prob=norm_topk_prob)
    return (weights * np.float32(routed_scaling_factor)).astype(np.float32), experts


def tie_margin(values, k: int) -> np.ndarray:
    """Per row, the gap between the k-th and the (k+1)-th largest value: a choice of ``k`` whose
    gap is within the computation's rounding can go either way."""
    v = -np.sort(-np.asarray(values, np.float64), axis=-1)
    return v[..., k - 1] - v[..., k]


def experts_sum(x, experts, weights, expert_fn):
    """sum_j weights[t, j] * expert_fn(e, x[t]) over each token's chosen experts, in float64;
    ``expert_fn(e, rows)`` is expert ``e``'s FFN on the rows routed to it."""
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    experts, weights = np.asarray(experts), np.asarray(weights, np.float64)
    for e in np.unique(experts):
        tok, slot = np.nonzero(experts == e)
        out[tok] += weights[tok, slot][:, None] * np.asarray(expert_fn(int(e), x[tok]), np.float64)
    return out
