"""The MoE block (SK-07) of the families that have one: DeepSeek-V3's group-limited sigmoid router
with a shared expert, Qwen3-MoE's softmax router. Which config fields fill SK-07's dims and AT-15's
parameters, and which router a kernel cannot honour (refused, naming the field)."""

from __future__ import annotations

from .config import HFConfig
from .settings import ModelSettings
from ..vocab.text import quote

__all__ = ["v3_sk07", "qwen3_moe_sk07"]


def _silu(cfg: HFConfig) -> None:
    act = cfg.str("hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise cfg.problem("hidden_act", f"{quote(act)}: SK-07's experts are SwiGLU (silu(gate) * up)")


def v3_sk07(cfg: HFConfig) -> ModelSettings:
    """DeepseekV3MoE: sigmoid scores, the correction bias in the choice, n_group groups ranked by
    their two best, topk_group eligible, num_experts_per_tok experts, routed_scaling_factor; the
    shared experts as one SwiGLU of moe_intermediate_size x n_shared_experts."""
    _silu(cfg)
    method = cfg.str("topk_method", "noaux_tc")
    if method != "noaux_tc":
        raise cfg.problem("topk_method", f"{quote(method)}: AT-15 builds DeepSeek-V3's noaux_tc router (sigmoid, bias in the choice, group-limited)")
    scoring = cfg.str("scoring_func", "sigmoid")
    if scoring != "sigmoid":
        raise cfg.problem("scoring_func", f"{quote(scoring)}: DeepSeek-V3's router scores with a sigmoid")
    inter, shared = cfg.int("moe_intermediate_size"), cfg.int("n_shared_experts", 0)
    dims = {"H": cfg.int("hidden_size"), "I": inter, "E": cfg.int("n_routed_experts"), "G": cfg.int("n_group"),
            "KG": cfg.int("topk_group"), "K": cfg.int("num_experts_per_tok")}
    if shared:
        dims["IS"] = inter * shared
    return ModelSettings(
        "deepseek_v3", "SK-07", dims,
        params={"router": "grouped_sigmoid", "norm_topk_prob": cfg.bool("norm_topk_prob", True),
                "routed_scaling_factor": cfg.float("routed_scaling_factor", 2.5), "shared_expert": bool(shared)},
        sources={"H": "hidden_size", "I": "moe_intermediate_size", "E": "n_routed_experts", "G": "n_group", "KG": "topk_group",
                 "K": "num_experts_per_tok", "IS": "moe_intermediate_size x n_shared_experts", "router": "topk_method",
                 "norm_topk_prob": "norm_topk_prob", "routed_scaling_factor": "routed_scaling_factor",
                 "shared_expert": "n_shared_experts"},
        notes=("DeepseekV3MoE of an MoE layer (layers from first_k_dense_replace on): experts as transformers stores them, "
               "gate_up_proj [E, 2I, H] and down_proj [E, H, I] (pattern_gen.adapters.inputs_from_hf)",),
    )


def qwen3_moe_sk07(cfg: HFConfig) -> ModelSettings:
    """Qwen3MoeSparseMoeBlock: softmax over num_experts, the top num_experts_per_tok, optionally
    normalised; no shared expert."""
    _silu(cfg)
    return ModelSettings(
        "qwen3_moe", "SK-07",
        {"H": cfg.int("hidden_size"), "I": cfg.int("moe_intermediate_size"), "E": cfg.int("num_experts"), "G": 1, "KG": 1,
         "K": cfg.int("num_experts_per_tok")},
        params={"router": "softmax", "norm_topk_prob": cfg.bool("norm_topk_prob", False), "routed_scaling_factor": 1.0,
                "shared_expert": False},
        sources={"H": "hidden_size", "I": "moe_intermediate_size", "E": "num_experts", "K": "num_experts_per_tok",
                 "router": "model_type", "norm_topk_prob": "norm_topk_prob"},
        notes=("the module's router linear runs in BF16 (its logits rounded); the kernel's is FP32, so a token whose choice "
               "that rounding decides may pick another expert",),
    )
