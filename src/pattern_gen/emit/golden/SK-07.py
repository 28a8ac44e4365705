"""SK-07 MoE: the hand-written composition of the golden.

logits = x·W_routerᵀ (FP32 accumulator); the experts and their weights from ``route_tokens``
(routing.py: DeepSeek-V3's group-limited sigmoid router or Qwen3-MoE's softmax, ties to the lower
index); each chosen expert's SwiGLU FFN on the token — g, u FP32 accumulators, h = BF16(silu(g)·u),
y_e = h·W_downᵀ (FP32) — weighted and summed in float64 (``experts_sum``), plus the shared expert
unweighted, rounded once to BF16. INT8 W8A8: x quantised per token (AT-05), every expert's gate and
up the dequantised INT32 products (AT-06), its FP32 activation quantised per token for the down
projection, whose INT32 product is dequantised before the routing weight. Uses PARAMS / DIMS set by
the golden module.
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
    weights = {"w_router": uniform(rng, (E, H), -0.1, 0.1)}  # the router stays BF16 in every mode

    def draw(name, shape):  # the same draws in every mode: INT8 quantises the BF16 mode's FP32 values
        w = rng.uniform(-0.1, 0.1, size=shape).astype(np.float32)
        if PARAMS["quant_mode"] == "int8_w8a8":  # per row: per expert and output channel
            weights[name], weights[f"{name}_scale"] = quant_weight_int8(w, channel_axis=0)
        else:
            weights[name] = store(w, "BF16")

    draw("w_gate_up", (E * 2 * I, H))
    draw("w_down", (E * H, I))
    if PARAMS["router"] == "grouped_sigmoid":  # small against the scores' spread, as a trained bias
        weights["e_bias"] = rng.uniform(-0.05, 0.05, size=(E,)).astype(np.float32)
    if PARAMS["shared_expert"]:
        draw("ws_gate_up", (2 * IS, H))
        draw("ws_down", (H, IS))
    return weights


def make_inputs(T: int, seed: int = 0) -> dict:
    """x ~ U(-1, 1) [T, H] BF16 (every 8th row QUIET: its logits are tiny, the bias or the softmax's
    small differences choose); weights ~ U(-0.1, 0.1) (INT8: the same values quantised per row, with
    FP32 scales); the bias ~ U(-0.05, 0.05) FP32."""
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


def _int8():
    return PARAMS["quant_mode"] == "int8_w8a8"


def _activation(w, rows, width):
    """An expert's FP32 activation silu(g)·u on BF16 rows; ``w`` = (gate/up weight, its scale or
    None, down weight, its scale or None). INT8: the rows' per-token codes (a row's codes do not
    depend on the other rows, so these are the tile's codes the kernel computes once), and gate
    and up the dequantised INT32 products — exact."""
    w_gu, s_gu = w[0], w[1]
    if _int8():
        x_q, x_s = quant_int8(rows)
        g = dequant(matmul_int8(x_q, w_gu[:width], "nk"), x_s, s_gu[:width])
        u = dequant(matmul_int8(x_q, w_gu[width:], "nk"), x_s, s_gu[width:])
        return swiglu(g, u)
    return swiglu(matmul_acc(rows, w_gu[:width], "nk"), matmul_acc(rows, w_gu[width:], "nk"))


def _ffn(w, rows, width, ties=None, site="h"):
    """One SwiGLU expert on BF16 rows: the FP32 activation, then h rounded once to BF16 and the
    down projection's FP32 accumulator — or (INT8) the activation's per-token codes and the
    dequantised INT32 product."""
    a = _activation(w, rows, width)
    if _int8():
        a_q, a_s = quant_int8(a, ties, site=site)
        return dequant(matmul_int8(a_q, w[2], "nk"), a_s, w[3])
    return matmul_acc(store_tied(a, "BF16", ties, site=site), w[2], "nk")


def _expert_weights(inputs, e):
    """Expert e's (gate/up, its scale, down, its scale) slices of the stacked weights."""
    I, H = DIMS["I"], DIMS["H"]
    gu, d = slice(e * 2 * I, (e + 1) * 2 * I), slice(e * H, (e + 1) * H)
    if _int8():
        return inputs["w_gate_up"][gu], inputs["w_gate_up_scale"][gu], inputs["w_down"][d], inputs["w_down_scale"][d]
    return inputs["w_gate_up"][gu], None, inputs["w_down"][d], None


def _shared_weights(inputs):
    return inputs["ws_gate_up"], inputs.get("ws_gate_up_scale"), inputs["ws_down"], inputs.get("ws_down_scale")


def _expert(inputs, e, rows, ties=None):
    return _ffn(_expert_weights(inputs, e), rows, DIMS["I"], ties)


def _moe_sum(inputs, experts, weights):
    x = inputs["x"]
    out = experts_sum(x, experts, weights, lambda e, rows: _expert(inputs, e, rows))
    if PARAMS["shared_expert"]:
        out = out + _ffn(_shared_weights(inputs), x, DIMS["IS"]).astype(np.float64)
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
    other way (INT8: its activation codes within ``ulps`` of 2^-17 of a boundary, each moving one
    step): y is linear in h (in the codes), so |dh| · |W_down_e| times the expert's weight bounds
    them all."""
    H = DIMS["H"]
    x = inputs["x"]
    move = np.zeros((x.shape[0], H))
    for e in np.unique(experts):
        tok, slot = np.nonzero(experts == e)
        w = _expert_weights(inputs, e)
        move[tok] += np.abs(weights[tok, slot]).astype(np.float64)[:, None] * _down_moves(w, x[tok], DIMS["I"], ulps)
    if PARAMS["shared_expert"]:
        move += _down_moves(_shared_weights(inputs), x, DIMS["IS"], ulps)
    return move


def _down_moves(w, rows, width, ulps):
    """|dy_e| of one expert's down projection when its near activation elements (codes) flip."""
    a = _activation(w, rows, width)
    w_abs = np.abs(np.asarray(w[2]).astype(np.float64)).T
    if not _int8():
        return _bf16_steps(a, ulps) @ w_abs
    probe: dict = {}
    _, a_s = quant_int8(a, probe, site="h")
    near = (probe["margin"]["h"] <= ulps).astype(np.float64)  # a flipped code moves by one: a_s · |w_q| · w_s
    return (near @ w_abs) * f32(a_s).astype(np.float64) * f32(w[3]).astype(np.float64).reshape(1, -1)


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
