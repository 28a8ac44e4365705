"""The Hugging Face model families pattern-gen instantiates kernels for: which ``config.json``
fields fill which skeleton's dims and parameters, and which fields a kernel cannot honour.

Each family is a record: its ``model_type`` values, its rope, and one small function per skeleton
it maps to. A function reads fields through ``HFConfig`` (so a missing or mistyped field is named
with its line) and returns ``ModelSettings``; what a kernel would silently compute differently is
refused, naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from .config import HFConfig
from .moe import qwen3_moe_sk07, v3_sk07
from .settings import ModelSettings
from ..vocab.text import quote
from .rope import ROPE_TYPES, RopeSpec

__all__ = ["Family", "ModelSettings", "FAMILIES", "family_of", "rope_of"]


@dataclass(frozen=True)
class Family:
    name: str
    model_types: tuple[str, ...]
    title: str
    #: the rope-parameter set a kernel's tables use, given a label (V4: "main" or "compress")
    rope: Callable[[HFConfig, str | None], RopeSpec]
    skeletons: dict[str, Callable[[HFConfig], ModelSettings]]


def rope_of(cfg: HFConfig, dim: int, label: str | None = None) -> RopeSpec:
    """The config's rope parameters (transformers 5's ``rope_parameters``, or the older top-level
    ``rope_theta`` + ``rope_scaling``) for ``dim`` rotated dims; an unsupported type is refused."""
    key = "rope_parameters" if cfg.has("rope_parameters") else "rope_scaling"
    src = cfg.dict(key) or {}
    if label is not None and isinstance(src.get(label), dict):
        src, key = src[label], f"{key}.{label}"
    rope_type = src.get("rope_type", src.get("type", "default"))
    if rope_type not in ROPE_TYPES:
        raise cfg.problem(f"{key}.rope_type", f"{quote(rope_type)} is not supported; rope tables are built for {', '.join(ROPE_TYPES)}")
    theta = src.get("rope_theta", cfg.data.get("rope_theta"))
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or theta <= 1:
        raise cfg.problem(f"{key}.rope_theta" if "rope_theta" in src else "rope_theta", f"{quote(theta)} is not a rope base > 1")
    spec: dict[str, Any] = {"theta": float(theta), "dim": dim, "rope_type": rope_type}
    if rope_type in ("linear", "yarn"):
        factor = src.get("factor")
        if not isinstance(factor, (int, float)) or isinstance(factor, bool) or factor < 1:
            raise cfg.problem(f"{key}.factor", f"{quote(factor)} is not a scaling factor >= 1")
        spec["factor"] = float(factor)
    if rope_type == "yarn":
        original = src.get("original_max_position_embeddings", cfg.data.get("original_max_position_embeddings"))
        if not isinstance(original, int) or original <= 0:
            raise cfg.problem(f"{key}.original_max_position_embeddings", "YaRN needs the pretraining context length")
        spec["original_max_position"] = original
        for name, hf in (("beta_fast", "beta_fast"), ("beta_slow", "beta_slow"), ("mscale", "mscale"),
                         ("mscale_all_dim", "mscale_all_dim"), ("attention_factor", "attention_factor"), ("truncate", "truncate")):
            if src.get(hf) is not None:
                spec[name] = src[hf]
    return RopeSpec(**spec)


# --- Qwen3 ---------------------------------------------------------------------------------------


def _qwen3_heads(cfg: HFConfig) -> tuple[int, int, int, int]:
    if cfg.bool("use_sliding_window", False):
        raise cfg.problem("use_sliding_window", "true: the kernels attend over every key of a sequence; a sliding window is not built")
    if cfg.float("partial_rotary_factor", 1.0) != 1.0:
        raise cfg.problem("partial_rotary_factor", "Qwen3's kernels rotate the whole head (rotary_dim = head_dim)")
    hidden, heads = cfg.int("hidden_size"), cfg.int("num_attention_heads")
    kv = cfg.int("num_key_value_heads", heads)
    if heads % kv:
        raise cfg.problem("num_key_value_heads", f"{kv} does not divide num_attention_heads {heads} (GQA groups)")
    return hidden, heads, kv, cfg.int("head_dim", hidden // heads)


def _qwen3_rope(cfg: HFConfig, label: str | None) -> RopeSpec:
    return rope_of(cfg, _qwen3_heads(cfg)[3], label)


def _qwen3_sk05(cfg: HFConfig) -> ModelSettings:
    hidden, heads, kv, head_dim = _qwen3_heads(cfg)
    _qwen3_rope(cfg, None)
    eps = cfg.float("rms_norm_eps")
    bias = cfg.bool("attention_bias", False)
    return ModelSettings(
        "qwen3", "SK-05", {"H": hidden, "NQ": heads, "NKV": kv, "D": head_dim},
        params={"eps": eps, **({"has_bias": True} if bias else {})},
        stage_params={"q_norm": {"eps": eps}, "k_norm": {"eps": eps}},
        sources={"H": "hidden_size", "NQ": "num_attention_heads", "NKV": "num_key_value_heads", "D": "head_dim",
                 "eps": "rms_norm_eps", "has_bias": "attention_bias", "q_norm.eps": "rms_norm_eps", "k_norm.eps": "rms_norm_eps"},
        notes=(f"softmax scale 1/sqrt({head_dim}) (Qwen3Attention.scaling, the kernel's default)",),
    )


def _qwen3_sk03(cfg: HFConfig) -> ModelSettings:
    hidden, heads, kv, head_dim = _qwen3_heads(cfg)
    bias = cfg.bool("attention_bias", False)
    return ModelSettings(
        "qwen3", "SK-03", {"K": hidden, "N": (heads + 2 * kv) * head_dim},
        params={"eps": cfg.float("rms_norm_eps"), **({"has_bias": True} if bias else {})},
        sources={"K": "hidden_size", "N": "(num_attention_heads + 2 num_key_value_heads) head_dim", "eps": "rms_norm_eps", "has_bias": "attention_bias"},
        notes=("the input RMSNorm and the fused q/k/v projection (weight rows: q heads, k heads, v heads)",),
    )


def _qwen3_sk01(cfg: HFConfig) -> ModelSettings:
    _, heads, kv, head_dim = _qwen3_heads(cfg)
    return ModelSettings(
        "qwen3", "SK-01", {"NQ": heads, "NKV": kv, "D": head_dim},
        sources={"NQ": "num_attention_heads", "NKV": "num_key_value_heads", "D": "head_dim"},
        notes=(f"softmax scale 1/sqrt({head_dim}) (the kernel's default)",),
    )


def _qwen3_sk02(cfg: HFConfig) -> ModelSettings:
    _, heads, kv, head_dim = _qwen3_heads(cfg)
    return ModelSettings(
        "qwen3", "SK-02", {"NQ": heads, "NKV": kv, "D": head_dim},
        sources={"NQ": "num_attention_heads", "NKV": "num_key_value_heads", "D": "head_dim"},
        notes=(f"softmax scale 1/sqrt({head_dim}) (Qwen3Attention.scaling, the kernel's default)",
               "S (the keys of the call) is no config field: the card's default unless --dim S=…; every query token sees all S keys (no causal mask)"),
    )


def _qwen3_sk06(cfg: HFConfig) -> ModelSettings:
    act = cfg.str("hidden_act", "silu")
    if act not in ("silu", "swish"):
        raise cfg.problem("hidden_act", f"{quote(act)}: SK-06's activation is SwiGLU (silu(gate) * up); Qwen3MLP with another activation has no kernel")
    return ModelSettings(
        "qwen3", "SK-06", {"H": cfg.int("hidden_size"), "I": cfg.int("intermediate_size")},
        sources={"H": "hidden_size", "I": "intermediate_size"},
        notes=("Qwen3MLP: down_proj(silu(gate_proj(x)) * up_proj(x)), no biases, weights [out, in] (nk)",),
    )


# --- DeepSeek-V3 (MLA, V2/V3 kv layout) ----------------------------------------------------------


def _mla_common(cfg: HFConfig) -> tuple[int, int, int]:
    if cfg.bool("attention_bias", False):
        raise cfg.problem("attention_bias", "true: SK-04 has no bias on q_a_proj or the kv projection")
    q_rank = cfg.data.get("q_lora_rank", 0)
    if q_rank is None:
        raise cfg.problem("q_lora_rank", "null (a direct q_proj, as DeepSeek-V2-Lite): SK-04 builds the low-rank q path q_a -> norm -> q_b")
    return cfg.int("hidden_size"), cfg.int("q_lora_rank"), cfg.int("num_attention_heads")


def _v3_rope(cfg: HFConfig, label: str | None) -> RopeSpec:
    return rope_of(cfg, cfg.int("qk_rope_head_dim"), label)


def _v3_sk04(cfg: HFConfig) -> ModelSettings:
    hidden, q_rank, heads = _mla_common(cfg)
    if not cfg.bool("rope_interleave", True):
        raise cfg.problem("rope_interleave", "false: SK-04 rotates interleaved pairs (DeepSeek's checkpoints, rope_interleave true)")
    nope, rope_dim, latent = cfg.int("qk_nope_head_dim"), cfg.int("qk_rope_head_dim"), cfg.int("kv_lora_rank")
    scale = _v3_rope(cfg, None).softmax_scale(nope + rope_dim, mla=True)
    eps = cfg.float("rms_norm_eps")
    return ModelSettings(
        "deepseek_v3", "SK-04", {"H": hidden, "Q": q_rank, "NH": heads, "D": nope + rope_dim, "DKV": latent, "R": rope_dim},
        params={"kv_layout": "v3", "eps": eps}, stage_params={"kv_norm": {"eps": eps}},
        sources={"H": "hidden_size", "Q": "q_lora_rank", "NH": "num_attention_heads", "D": "qk_nope_head_dim + qk_rope_head_dim",
                 "DKV": "kv_lora_rank", "R": "qk_rope_head_dim", "kv_layout": "model_type", "eps": "rms_norm_eps", "kv_norm.eps": "rms_norm_eps"},
        notes=(f"the attention that reads this prolog scales q·kᵀ by {scale:.9g} (1/sqrt(qk_head_dim)"
               + (", times YaRN's mscale squared)" if scale != (nope + rope_dim) ** -0.5 else ")"),
               "q and kr come out with their rope dims as interleaved pairs; transformers' apply_rotary_pos_emb_interleave "
               "returns them de-interleaved (pattern_gen.adapters.rope_dims_to_hf)"),
    )


def _v3_sk03(cfg: HFConfig) -> ModelSettings:
    hidden, q_rank, _ = _mla_common(cfg)
    return ModelSettings(
        "deepseek_v3", "SK-03", {"K": hidden, "N": q_rank}, params={"eps": cfg.float("rms_norm_eps")},
        sources={"K": "hidden_size", "N": "q_lora_rank", "eps": "rms_norm_eps"},
        notes=("the input RMSNorm and q_a_proj",),
    )


# --- DeepSeek-V4 ---------------------------------------------------------------------------------


def _v4_rope_dim(cfg: HFConfig) -> int:
    head_dim = cfg.int("head_dim")
    if cfg.has("qk_rope_head_dim"):
        return cfg.int("qk_rope_head_dim")
    return int(head_dim * cfg.float("partial_rotary_factor", 64 / 512))  # DeepseekV4Config's default factor


def _v4_rope(cfg: HFConfig, label: str | None) -> RopeSpec:
    """V4's two rope sets (DeepseekV4Config): "main" (sliding-window layers) plain RoPE at
    rope_theta; "compress" (CSA/HCA layers) the config's scaling at compress_rope_theta, with YaRN's
    cos/sin factor 1 unless the config sets one."""
    label = label or "main"
    if label not in ("main", "compress"):
        raise cfg.problem("rope_parameters", f"DeepSeek-V4 has the rope sets main and compress, not {quote(label)}")
    nested = cfg.dict("rope_parameters") or {}
    if isinstance(nested.get(label), dict):
        return rope_of(cfg, _v4_rope_dim(cfg), label)
    dim = _v4_rope_dim(cfg)
    if label == "main":
        return RopeSpec(theta=cfg.float("rope_theta"), dim=dim)
    spec = rope_of(cfg, dim, None)
    theta = cfg.float("compress_rope_theta")
    factor = spec.attention_factor if spec.attention_factor is not None or spec.rope_type != "yarn" else 1.0
    return replace(spec, theta=theta, attention_factor=factor)


def _v4_sk04(cfg: HFConfig) -> ModelSettings:
    hidden, q_rank, heads = _mla_common(cfg)
    if cfg.int("num_key_value_heads", 1) != 1:
        raise cfg.problem("num_key_value_heads", "DeepSeek-V4 attends to one shared kv head; SK-04's v4 layout projects one")
    head_dim, rope_dim = cfg.int("head_dim"), _v4_rope_dim(cfg)
    _v4_rope(cfg, None)
    eps = cfg.float("rms_norm_eps")
    return ModelSettings(
        "deepseek_v4", "SK-04", {"H": hidden, "Q": q_rank, "NH": heads, "D": head_dim, "DKV": head_dim, "R": rope_dim},
        params={"kv_layout": "v4", "eps": eps}, stage_params={"q_head_norm": {"eps": eps}, "kv_norm": {"eps": eps}},
        sources={"H": "hidden_size", "Q": "q_lora_rank", "NH": "num_attention_heads", "D": "head_dim", "DKV": "head_dim",
                 "R": "head_dim x partial_rotary_factor", "kv_layout": "model_type", "eps": "rms_norm_eps",
                 "q_head_norm.eps": "rms_norm_eps", "kv_norm.eps": "rms_norm_eps"},
        notes=(f"the attention that reads this prolog scales q·kᵀ by 1/sqrt({head_dim})",),
    )


FAMILIES: tuple[Family, ...] = (
    Family("qwen3", ("qwen3",), "Qwen3 (dense): GQA, q/k RMSNorm, half-split RoPE", _qwen3_rope,
           {"SK-05": _qwen3_sk05, "SK-03": _qwen3_sk03, "SK-01": _qwen3_sk01, "SK-06": _qwen3_sk06,
            "SK-02": _qwen3_sk02}),
    Family("deepseek_v3", ("deepseek_v3",), "DeepSeek-V3 (MLA, V2/V3 kv layout, interleaved RoPE)", _v3_rope,
           {"SK-04": _v3_sk04, "SK-03": _v3_sk03, "SK-07": v3_sk07}),
    Family("qwen3_moe", ("qwen3_moe",), "Qwen3-MoE: Qwen3's attention, a softmax-routed MoE block", _qwen3_rope,
           {"SK-07": qwen3_moe_sk07}),
    Family("deepseek_v4", ("deepseek_v4",), "DeepSeek-V4 (MLA with per-head q norm, one shared kv head)", _v4_rope,
           {"SK-04": _v4_sk04}),
)


def family_of(cfg: HFConfig) -> Family:
    model_type = cfg.model_type
    for family in FAMILIES:
        if model_type in family.model_types:
            return family
    known = ", ".join(t for f in FAMILIES for t in f.model_types)
    raise cfg.problem("model_type", f"{quote(model_type)} is not a family pattern-gen knows ({known}); `pattern-gen models` lists them")
