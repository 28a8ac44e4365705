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

__all__ = ["experts_sum", "route_grouped", "route_softmax", "route_tokens", "tie_margin"]


def _best(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values of each row, best first; equal values in index order."""
    return np.argsort(-np.asarray(values, np.float64), axis=-1, kind="stable")[..., :k]


def route_grouped(
    logits, bias, *, n_group: int, topk_group: int, top_k: int, norm_topk_prob: bool, routed_scaling_factor: float
):
    """DeepSeek-V3's router from FP32 logits [T, E] and the correction bias [E]: (weights [T, top_k]
    FP32, experts [T, top_k] int32), best first by biased score."""
    logits = np.asarray(logits, np.float32)
    T, E = logits.shape
    if E % n_group:
        raise ValueError(f"{E} experts do not split into {n_group} groups")
    scores = (np.float32(1) / (np.float32(1) + np.exp(-logits))).astype(np.float32)
    choice = scores + np.asarray(bias, np.float32)
    per = E // n_group
    grouped = choice.reshape(T, n_group, per)
    two = np.take_along_axis(grouped, _best(grouped, 2), axis=-1)
    group_rank = (two[..., 0] + two[..., 1]).astype(np.float32)
    keep = np.zeros((T, n_group), bool)
    np.put_along_axis(keep, _best(group_rank, topk_group), True, axis=-1)
    masked = np.where(np.repeat(keep, per, axis=1), choice, -np.inf)
    experts = _best(masked, top_k)
    weights = np.take_along_axis(scores, experts, axis=-1)
    if norm_topk_prob:
        weights = weights / (weights.sum(axis=-1, keepdims=True, dtype=np.float32) + np.float32(1e-20))
    return (weights * np.float32(routed_scaling_factor)).astype(np.float32), experts.astype(np.int32)


def route_softmax(logits, *, top_k: int, norm_topk_prob: bool):
    """Qwen3-MoE's router from FP32 logits [T, E]: (weights [T, top_k] FP32, experts [T, top_k]
    int32), best first."""
    logits = np.asarray(logits, np.float32)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    probs = (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
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
