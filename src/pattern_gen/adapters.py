"""Host adapters: what a model's own code holds, in the form a generated kernel takes.

- ``rope_tables``: the kernel's cos/sin for token positions, equal to what the model family's
  transformers rotary embedding computes (Qwen3: half-split tables cat(f, f); DeepSeek: one angle per
  interleaved pair, repeated for both of its dims), YaRN's cos/sin factor included.
- ``rope_dims_to_hf`` / ``rope_dims_from_hf``: the kernel rotates interleaved pairs in place;
  transformers' DeepSeek-V3 (``apply_rotary_pos_emb_interleave``) returns the rope dims
  de-interleaved (evens, then odds). Same values, permuted; q·kᵀ is the same either way.
- ``inputs_from_hf``: a transformers decoder layer's (or attention module's) weights as a kernel's
  weight inputs: transposes, the q/k/v concat, BF16.
- ``paged_from_vllm``: vLLM's per-sequence paged-attention metadata as the kernel's per-token forms,
  with tokens whose slot is -1 anywhere in the batch moved to the end (the kernel's scatter stops at
  a -1, as PyPTO 0.2.0's does) and the outputs put back in vLLM's order.

NumPy only; a torch tensor is read through ``.detach()``. Nothing here imports torch or transformers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import ml_dtypes
import numpy as np

from .models import RopeSpec, family_of, read_hf_config

__all__ = ["rope_tables", "rope_dims_to_hf", "rope_dims_from_hf", "inputs_from_hf", "paged_from_vllm", "PagedBatch"]

BF16 = ml_dtypes.bfloat16
#: how each family lays one angle over the rotated dims
_LAYOUT = {"qwen3": "half", "deepseek_v3": "pairs", "deepseek_v4": "pairs"}


def rope_tables(positions: Any, config: str | Path | None = None, *, rope: str | None = None, spec: RopeSpec | None = None,
                layout: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """[T, rotary dims] BF16 cos and sin for ``positions`` from a config.json (or a ``RopeSpec``).
    ``rope``: DeepSeek-V4's rope set ("main" or "compress"). ``layout``: "half" (Qwen3, cat(f, f))
    or "pairs" (DeepSeek, each pair's angle twice); the family's by default."""
    if (config is None) == (spec is None):
        raise ValueError("give a config.json path or a RopeSpec")
    if config is not None:
        cfg = read_hf_config(Path(config))
        family = family_of(cfg)
        spec = family.rope(cfg, rope)
        layout = layout or _LAYOUT[family.name]
    assert spec is not None
    layout = layout or "half"
    angles = spec.angles(np.asarray(positions))
    if layout == "half":
        full = np.concatenate([angles, angles], axis=-1)
    elif layout == "pairs":
        full = np.repeat(angles, 2, axis=-1)
    else:
        raise ValueError(f"layout must be 'half' or 'pairs', got {layout!r}")
    factor = np.float32(spec.cos_sin_scale())
    cos = (np.cos(full).astype(np.float32) * factor).astype(np.float32)
    sin = (np.sin(full).astype(np.float32) * factor).astype(np.float32)
    return cos.astype(BF16), sin.astype(BF16)


def _pair_order(rope_dim: int) -> np.ndarray:
    return np.concatenate([np.arange(0, rope_dim, 2), np.arange(1, rope_dim, 2)])


def rope_dims_to_hf(x: np.ndarray, rope_dim: int) -> np.ndarray:
    """The last ``rope_dim`` dims from the kernel's interleaved pairs to transformers' de-interleaved order."""
    x = np.asarray(x)
    head = x.shape[-1] - rope_dim
    return np.concatenate([x[..., :head], x[..., head:][..., _pair_order(rope_dim)]], axis=-1)


def rope_dims_from_hf(x: np.ndarray, rope_dim: int) -> np.ndarray:
    """The inverse of ``rope_dims_to_hf``."""
    x = np.asarray(x)
    head = x.shape[-1] - rope_dim
    out = np.empty_like(x)
    out[..., :head] = x[..., :head]
    out[..., head + _pair_order(rope_dim)] = x[..., head:]
    return out


def _array(t: Any) -> np.ndarray:
    if hasattr(t, "detach"):
        t = t.detach()
        t = t.float().cpu().numpy() if hasattr(t, "float") else t.numpy()
    return np.asarray(t, dtype=np.float32)


def _bf16(name: str, t: Any, *, exact: bool = False) -> np.ndarray:
    """A weight as BF16; ``exact``: refuse an FP32 weight BF16 cannot hold (a norm gamma the kernel
    takes as BF16 would be rounded: DeepSeek-V4 keeps its norm weights in FP32)."""
    a = _array(t)
    out = a.astype(BF16)
    if exact and not np.array_equal(out.astype(np.float32), a):
        bad = int(np.count_nonzero(out.astype(np.float32) != a))
        raise ValueError(f"{name}: {bad} of {a.size} FP32 values are not BF16 values; the kernel takes this norm weight as BF16 "
                         "(its card's input dtype), so they would be rounded — pass allow_rounding=True to accept that")
    return out


def inputs_from_hf(module: Any, skeleton: str, *, allow_rounding: bool = False) -> dict[str, np.ndarray]:
    """The kernel's weight inputs from a transformers module: SK-05 from a Qwen3 decoder layer
    (input_layernorm + self_attn), SK-04 from a DeepSeek-V3/V4 attention module (or its layer),
    SK-06 from a Qwen3MLP (or its layer), SK-07 from a DeepseekV3MoE or Qwen3MoeSparseMoeBlock.
    Activations, tables and caches are the caller's (``rope_tables``, ``paged_from_vllm``)."""
    attn = getattr(module, "self_attn", module)
    exact = not allow_rounding
    if skeleton == "SK-05":
        norm = getattr(module, "input_layernorm", None)
        if norm is None:
            raise ValueError("SK-05 normalises the layer input: pass the decoder layer (it holds input_layernorm)")
        out = {
            "gamma": _bf16("input_layernorm.weight", norm.weight, exact=exact),
            "weight": np.concatenate([_bf16(f"{p}.weight", getattr(attn, p).weight) for p in ("q_proj", "k_proj", "v_proj")], axis=0),
            "q_gamma": _bf16("q_norm.weight", attn.q_norm.weight, exact=exact),
            "k_gamma": _bf16("k_norm.weight", attn.k_norm.weight, exact=exact),
        }
        if getattr(attn.q_proj, "bias", None) is not None:
            out["bias"] = np.concatenate([_bf16(f"{p}.bias", getattr(attn, p).bias) for p in ("q_proj", "k_proj", "v_proj")])
        return out
    if skeleton == "SK-04":
        v4 = hasattr(attn, "kv_proj")
        q_norm = attn.q_a_norm if v4 else attn.q_a_layernorm
        kv_norm = attn.kv_norm if v4 else attn.kv_a_layernorm
        kv = attn.kv_proj if v4 else attn.kv_a_proj_with_mqa
        return {  # SK-04 takes its projections as [in, out] (weight_layout kn)
            "wq_a": _bf16("q_a_proj.weight", attn.q_a_proj.weight).T.copy(),
            "gamma_cq": _bf16("q_a_norm.weight", q_norm.weight, exact=exact),
            "wq_b": _bf16("q_b_proj.weight", attn.q_b_proj.weight).T.copy(),
            "wkv": _bf16("kv projection weight", kv.weight).T.copy(),
            "gamma_ckv": _bf16("kv norm weight", kv_norm.weight, exact=exact),
        }
    if skeleton == "SK-06":
        mlp = getattr(module, "mlp", module)
        if not hasattr(mlp, "gate_proj"):
            raise ValueError("SK-06 takes a Qwen3MLP (or the decoder layer that holds it as .mlp)")
        # nn.Linear keeps [out, in]: the kernel's default weight_layout nk
        out = {name: _bf16(f"{proj}.weight", getattr(mlp, proj).weight)
               for name, proj in (("w_gate", "gate_proj"), ("w_up", "up_proj"), ("w_down", "down_proj"))}
        for name, proj in (("b_gate", "gate_proj"), ("b_up", "up_proj")):
            if getattr(getattr(mlp, proj), "bias", None) is not None:
                out[name] = _bf16(f"{proj}.bias", getattr(mlp, proj).bias)
        if getattr(mlp.down_proj, "bias", None) is not None:
            raise ValueError("down_proj has a bias: SK-06's down projection takes none")
        return out
    if skeleton == "SK-07":
        return _moe_inputs(getattr(module, "mlp", module))
    raise ValueError(f"inputs_from_hf maps SK-04, SK-05, SK-06 and SK-07, not {skeleton!r}")


def _moe_inputs(moe: Any) -> dict[str, np.ndarray]:
    """SK-07 from a DeepseekV3MoE or Qwen3MoeSparseMoeBlock: the router weight (and DeepSeek-V3's
    FP32 correction bias), the experts' stacked gate_up_proj [E, 2I, H] and down_proj [E, H, I] as
    2-D, and DeepSeek-V3's shared experts as one [gate; up] and one down weight."""
    experts, gate = getattr(moe, "experts", None), getattr(moe, "gate", None)
    if experts is None or gate is None or not hasattr(experts, "gate_up_proj"):
        raise ValueError("SK-07 takes a DeepseekV3MoE or Qwen3MoeSparseMoeBlock (or the decoder layer that holds it as .mlp)")
    gu, down = _bf16("experts.gate_up_proj", experts.gate_up_proj), _bf16("experts.down_proj", experts.down_proj)
    out = {"w_router": _bf16("gate.weight", gate.weight), "w_gate_up": gu.reshape(-1, gu.shape[-1]),
           "w_down": down.reshape(-1, down.shape[-1])}
    bias = getattr(gate, "e_score_correction_bias", None)
    if bias is not None:
        out["e_bias"] = _array(bias).astype(np.float32)
    shared = getattr(moe, "shared_experts", None)
    if shared is not None:
        out["ws_gate_up"] = np.concatenate([_bf16(f"shared_experts.{p}.weight", getattr(shared, p).weight) for p in ("gate_proj", "up_proj")])
        out["ws_down"] = _bf16("shared_experts.down_proj.weight", shared.down_proj.weight)
    return out


@dataclass(frozen=True)
class PagedBatch:
    """The kernel's per-token paged inputs and the token order they are in (``order[i]``: the vLLM
    token the kernel's token i is)."""

    slot_mapping: np.ndarray  # [T] INT32, -1 only at the end
    block_table: np.ndarray  # [T, MB] INT32
    context_lens: np.ndarray  # [T] INT32
    order: np.ndarray  # [T]

    def to_kernel(self, tokens: np.ndarray) -> np.ndarray:
        """A token-major array (x, residual, cos, sin) in the kernel's token order."""
        return np.asarray(tokens)[self.order]

    def from_kernel(self, tokens: np.ndarray) -> np.ndarray:
        """A token-major output (q, attn) back in vLLM's token order."""
        out = np.empty_like(tokens)
        out[self.order] = tokens
        return out

    def inputs(self) -> Mapping[str, np.ndarray]:
        return {"slot_mapping": self.slot_mapping, "block_table": self.block_table, "context_lens": self.context_lens}


def paged_from_vllm(block_tables: Any, seq_lens: Any, query_start_loc: Any, slot_mapping: Any, *, block_size: int, table_width: int) -> PagedBatch:
    """vLLM's metadata (``block_tables`` [S, W], ``seq_lens`` [S] keys per sequence after this step,
    ``query_start_loc`` [S + 1], ``slot_mapping`` [T], any integer width, -1 = do not cache) as the
    kernel's per-token forms: token p of a sequence's new tokens sees its causal prefix
    (seq_len - (new - 1 - p) keys) through its sequence's table row. Tokens past the last sequence
    (CUDA-graph padding) see one key of block 0. -1 slots anywhere are moved to the end."""
    tables = np.asarray(block_tables).astype(np.int64)
    lens = np.asarray(seq_lens).reshape(-1).astype(np.int64)
    starts = np.asarray(query_start_loc).reshape(-1).astype(np.int64)
    slots = np.asarray(slot_mapping).reshape(-1)
    if not np.issubdtype(slots.dtype, np.integer):
        raise TypeError(f"slot_mapping must hold integers, got {slots.dtype}")
    slots = slots.astype(np.int64)
    if len(starts) != len(lens) + 1 or (np.diff(starts) < 0).any() or starts[0] != 0 or starts[-1] > len(slots):
        raise ValueError("query_start_loc must rise from 0 with one entry per sequence plus one, within the batch")
    T = len(slots)
    table = np.zeros((T, table_width), np.int64)
    context = np.ones(T, np.int64)
    for s in range(len(lens)):
        new = int(starts[s + 1] - starts[s])
        if new > lens[s]:
            raise ValueError(f"sequence {s}: {new} new tokens but seq_lens[{s}] = {lens[s]}")
        need = -(-int(lens[s]) // block_size)
        if need > table_width:
            raise ValueError(f"sequence {s}: {lens[s]} keys need {need} blocks of {block_size}, more than the kernel's {table_width} per sequence (MB)")
        row = tables[s, :need]
        for p in range(new):
            i = int(starts[s] + p)
            table[i, : len(row)] = row
            context[i] = lens[s] - (new - 1 - p)
    order = np.concatenate([np.flatnonzero(slots >= 0), np.flatnonzero(slots < 0)])
    return PagedBatch(slots[order].astype(np.int32), table[order].astype(np.int32), context[order].astype(np.int32), order)
