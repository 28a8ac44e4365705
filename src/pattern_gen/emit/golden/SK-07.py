"""SK-07 MoE: the hand-written composition of the golden.

logits = x·W_routerᵀ (FP32 accumulator); the experts and their weights from ``route_tokens``
(routing.py: DeepSeek-V3's group-limited sigmoid router or Qwen3-MoE's softmax, ties to the lower
index); each chosen expert's SwiGLU FFN on the token — g, u FP32 accumulators, h = BF16(silu(g)·u),
y_e = h·W_downᵀ (FP32) — weighted and summed in float64 (``experts_sum``), plus the shared expert
unweighted, rounded once to BF16. Uses PARAMS / DIMS set by the golden module.
"""

from functools import lru_cache  # noqa: F401
from typing import Mapping  # noqa: F401

import ml_dtypes  # noqa: F401
import numpy as np  # noqa: F401
from atoms import *  # noqa: F401,F403  (the per-atom references; the golden module inlines them)
from routing import *  # noqa: F401,F403

# The golden module sets these per instance; defaults here keep the file importable on its own.
PARAMS: dict = {}
STAGE_PARAMS: dict = {}
DIMS: dict = {}
# --- end of header: everything below is inlined into golden.py ---


@lru_cache(maxsize=4)
def _moe_weights(seed):
    H, I, E, IS = DIMS["H"], DIMS["I"], DIMS["E"], DIMS["IS"]
    rng = np.random.default_rng([seed, 0])
    weights = {
        "w_router": uniform(rng, (E, H), -0.1, 0.1),
        "w_gate_up": uniform(rng, (E * 2 * I, H), -0.1, 0.1),
        "w_down": uniform(rng, (E * H, I), -0.1, 0.1),
    }
    if PARAMS["router"] == "grouped_sigmoid":  # small against the scores' spread, as a trained bias
        weights["e_bias"] = rng.uniform(-0.05, 0.05, size=(E,)).astype(np.float32)
    if PARAMS["shared_expert"]:
        weights["ws_gate_up"] = uniform(rng, (2 * IS, H), -0.1, 0.1)
        weights["ws_down"] = uniform(rng, (H, IS), -0.1, 0.1)
    return weights


def make_inputs(T: int, seed: int = 0) -> dict:
    """x ~ U(-1, 1) [T, H] BF16 (every 8th row QUIET: its logits are tiny, the bias or the softmax's
    small differences choose); weights ~ U(-0.1, 0.1); the bias ~ U(-0.05, 0.05) FP32."""
    rng = np.random.default_rng([seed, 1, T])
    return {"x": activations(rng, T, DIMS["H"], -1.0, 1.0), **_moe_weights(seed)}


def _route(inputs, logits):
    p, d = PARAMS, DIMS
    return route_tokens(
        logits,
        inputs.get("e_bias"),
        router=p["router"],
        n_group=d["G"],
        topk_group=d["KG"],
        top_k=d["K"],
        norm_topk_prob=p["norm_topk_prob"],
        routed_scaling_factor=p["routed_scaling_factor"],
    )


def _ffn(w_gate_up, w_down, rows, width, ties=None, site="h"):
    """One SwiGLU expert on BF16 rows: FP32 gate/up accumulators, h rounded once to BF16, the down
    projection's FP32 accumulator."""
    g = matmul_acc(rows, w_gate_up[:width], "nk")
    u = matmul_acc(rows, w_gate_up[width:], "nk")
    h = store_tied(swiglu(g, u), "BF16", ties, site=site)
    return matmul_acc(h, w_down, "nk")


def _expert(inputs, e, rows, ties=None):
    I, H = DIMS["I"], DIMS["H"]
    return _ffn(inputs["w_gate_up"][e * 2 * I : (e + 1) * 2 * I], inputs["w_down"][e * H : (e + 1) * H], rows, I, ties)


def _moe_sum(inputs, experts, weights):
    x = inputs["x"]
    out = experts_sum(x, experts, weights, lambda e, rows: _expert(inputs, e, rows))
    if PARAMS["shared_expert"]:
        out = out + _ffn(inputs["ws_gate_up"], inputs["ws_down"], x, DIMS["IS"]).astype(np.float64)
    return out


def golden(inputs: Mapping[str, np.ndarray], ties: dict | None = None) -> dict:
    """The output y [T, H] BF16."""
    logits = matmul_acc(inputs["x"], inputs["w_router"], "nk")
    weights, experts = _route(inputs, logits)
    return {"y": store(_moe_sum(inputs, experts, weights), "BF16")}


def _choice_scores(inputs, logits):
    """The values each choice compares, per token, in float64: (group ranks or None, eligible expert
    scores) — routing.py's steps, at the precision the tie bands measure in."""
    _, choice = router_scores(logits, inputs.get("e_bias"), router=PARAMS["router"], dtype=np.float64)
    if PARAMS["router"] == "softmax":
        return None, choice
    ranks = group_ranks(choice, DIMS["G"])
    return ranks, eligible(choice, ranks, DIMS["KG"])


def _near(values, k, ulps):
    """Tokens whose k-th and (k+1)-th best values are within ``ulps`` row-scale FP32 ulps."""
    if k >= values.shape[-1]:
        return np.zeros(values.shape[0], bool)
    finite = np.where(np.isfinite(values), np.abs(values), 0.0)
    unit = 2.0**-24 * finite.max(axis=-1)
    return tie_margin(values, k) <= ulps * unit


def _route_moves(inputs, logits, expected_y, ulps):
    """How far y moves for a token whose expert (or group) choice is within ``ulps`` of a tie: the
    other choice's output — the (k+1)-th expert for the k-th (the lower group for the higher)."""
    ranks, scores = _choice_scores(inputs, logits)
    near = _near(scores, DIMS["K"], ulps)
    if ranks is not None:
        near |= _near(ranks, DIMS["KG"], ulps)
    move = np.zeros(expected_y.shape)
    for t in np.nonzero(near)[0]:
        weights, experts = _route(inputs, logits[t : t + 1])
        order = np.argsort(-np.where(np.isfinite(scores[t]), scores[t], -np.inf), kind="stable")
        alt = order[: DIMS["K"] + 1]
        alt = np.concatenate([alt[: DIMS["K"] - 1], alt[DIMS["K"] :]]).reshape(1, -1)  # the k-th swapped for the next
        base = store(_moe_sum({**inputs, "x": inputs["x"][t : t + 1]}, experts, weights), "BF16").astype(np.float64)
        unbiased, _ = router_scores(logits[t : t + 1], inputs.get("e_bias"), router=PARAMS["router"], dtype=np.float64)
        alt_w = np.take_along_axis(unbiased, alt, axis=-1)
        if PARAMS["norm_topk_prob"]:
            alt_w = alt_w / alt_w.sum(axis=-1, keepdims=True)
        alt_w = alt_w * PARAMS["routed_scaling_factor"]
        other = store(_moe_sum({**inputs, "x": inputs["x"][t : t + 1]}, alt, alt_w), "BF16").astype(np.float64)
        move[t] = np.abs(other - base)[0]
        if ranks is not None and _near(ranks[t : t + 1], DIMS["KG"], ulps)[0]:
            move[t] = np.inf  # another group eligible: any expert of it may be chosen; not checked
    return move


def _activation_moves(inputs, experts, weights, ulps):
    """|dy| from each chosen expert's h elements within ``ulps`` of a BF16 boundary rounding the
    other way: y is linear in h, so |dh| · |W_down_e| times the expert's weight bounds them all."""
    I, H = DIMS["I"], DIMS["H"]
    x = inputs["x"]
    move = np.zeros((x.shape[0], H))
    for e in np.unique(experts):
        tok, slot = np.nonzero(experts == e)
        w_gu = inputs["w_gate_up"][e * 2 * I : (e + 1) * 2 * I]
        a = swiglu(matmul_acc(x[tok], w_gu[:I], "nk"), matmul_acc(x[tok], w_gu[I:], "nk"))
        w_abs = np.abs(inputs["w_down"][e * H : (e + 1) * H].astype(np.float64)).T
        move[tok] += np.abs(weights[tok, slot]).astype(np.float64)[:, None] * _bf16_steps(a, ulps) @ w_abs
    if PARAMS["shared_expert"]:
        IS, w_gu = DIMS["IS"], inputs["ws_gate_up"]
        a = swiglu(matmul_acc(x, w_gu[:IS], "nk"), matmul_acc(x, w_gu[IS:], "nk"))
        move += _bf16_steps(a, ulps) @ np.abs(inputs["ws_down"].astype(np.float64)).T
    return move


def _bf16_steps(a, ulps):
    """|dh| of the elements of ``a`` within ``ulps`` of a BF16 rounding boundary (0 elsewhere)."""
    probe: dict = {}
    h = store_tied(a, "BF16", probe, site="h").astype(np.float64)
    near = probe["margin"]["h"] <= ulps
    return np.abs(store_tied(a, "BF16", {"flip": {"h": near}}, site="h").astype(np.float64) - h)


def tie_bands(inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], ulps: Mapping[str, float]) -> dict:
    """How far y may move: the other choice of experts for a token within ``ulps`` of a tie, plus
    the activation roundings within ``ulps`` of a BF16 boundary, plus one BF16 step of y."""
    if "y" not in ulps:
        return {}
    logits = matmul_acc(inputs["x"], inputs["w_router"], "nk")
    weights, experts = _route(inputs, logits)
    move = _route_moves(inputs, logits, expected["y"], ulps["y"]) + _activation_moves(
        inputs, experts, weights, ulps["y"]
    )
    y = np.abs(np.asarray(expected["y"]).astype(np.float64)) + np.where(np.isfinite(move), move, 0.0)
    step = np.exp2(np.floor(np.log2(np.maximum(y, 2.0**-126))) - 7)
    return {"y": np.where(move > 0, move + step, 0.0)}
