"""The generated prologs are as accurate as Hugging Face transformers' modules for the same math.

Both are measured against float64 math on the same BF16 inputs and weights: the generated kernel
(run on ptosim) and the same computation through transformers' own pieces in BF16 — Qwen3's
RMSNorm and ``apply_rotary_pos_emb`` (SK-05: residual add, input norm, QKV projection, q/k norm,
RoPE, k/v into the paged caches) and DeepSeek-V3's RMSNorm and ``apply_rotary_pos_emb_interleave``
(SK-04: the MLA prolog with V4's per-head q norm and interleaved RoPE on the last R dims, in
V4's kv layout and in V2/V3's, where k_pe is rotated into a separate kr).
The error is the relative RMS error ||out - ref|| / ||ref|| of each output; the kernel's must not
exceed transformers' by more than 10 %. Skips where transformers (or torch) is not installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (  # noqa: E402
    DeepseekV3RMSNorm,
    apply_rotary_pos_emb_interleave,
)
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm, apply_rotary_pos_emb, eager_attention_forward  # noqa: E402

from pattern_gen.emit.render import module_id  # noqa: E402

EPS = 1e-6
#: the kernel's error may exceed transformers' BF16 modules' by this factor
SLACK = 1.10


def _load(folder: Path, stem: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"hf_{module_id(folder.name)}_{stem}", folder / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def f64(a: Any) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().to(torch.float64).numpy()
    return np.asarray(a).astype(np.float64)


def bf16(a: np.ndarray) -> Any:
    return torch.from_numpy(np.asarray(a).astype(np.float32)).to(torch.bfloat16)


def rel(out: Any, ref: np.ndarray) -> float:
    return float(np.linalg.norm(f64(out) - ref) / np.linalg.norm(ref))


def rms64(x: np.ndarray, gamma: np.ndarray | None) -> np.ndarray:
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS)
    return y if gamma is None else y * f64(gamma)


def norm_module(cls: Any, gamma: np.ndarray | None, width: int) -> Any:
    module = cls(width, eps=EPS)
    if gamma is not None:
        module.weight.data = bf16(gamma)
    return module.to(torch.bfloat16)


def compare(name: str, ours: Any, hf: Any, ref: np.ndarray, report: list[str]) -> None:
    e_ours, e_hf = rel(ours, ref), rel(hf, ref)
    report.append(f"{name}: kernel {e_ours:.3e}, transformers {e_hf:.3e} (ratio {e_ours / e_hf:.2f})")
    assert e_ours <= SLACK * e_hf, f"{name}: the kernel's error {e_ours:.3e} exceeds transformers' {e_hf:.3e}"


# --- SK-05: Qwen3 pre-attention up to the cache write -------------------------------------------------


@pytest.mark.parametrize("T", [16, 3])
def test_sk05_is_as_accurate_as_qwen3_modules(instance_factory, small, T, capsys):
    folder = instance_factory("SK-05", "AT-10", dims=small["SK-05"])
    kernel, golden = _load(folder, "kernel"), _load(folder, "golden")
    d = golden.DIMS
    NQ, NKV, D = d["NQ"], d["NKV"], d["D"]
    inp = golden.make_inputs(T, seed=3)
    out = kernel.run(inp)
    slots = inp["slot_mapping"]
    live = slots >= 0

    # float64 math on the same BF16 values
    xa = f64(inp["x"]) + f64(inp["residual"])
    y = rms64(xa, inp["gamma"]) @ f64(inp["weight"]).T
    c, s = f64(inp["cos"])[:, None, :], f64(inp["sin"])[:, None, :]

    def rope64(h: np.ndarray) -> np.ndarray:
        half = D // 2
        l, r = h[..., :half], h[..., half:]
        return np.concatenate([l * c[..., :half] - r * s[..., :half], r * c[..., half:] + l * s[..., half:]], -1)

    q64 = rope64(rms64(y[:, : NQ * D].reshape(T, NQ, D), inp["q_gamma"]))
    k64 = rope64(rms64(y[:, NQ * D:(NQ + NKV) * D].reshape(T, NKV, D), inp["k_gamma"]))
    v64 = y[:, (NQ + NKV) * D:].reshape(T, NKV, D)

    # transformers' Qwen3 pieces in BF16 (the decoder adds the residual in BF16)
    with torch.no_grad():
        h = norm_module(Qwen3RMSNorm, inp["gamma"], d["H"])(bf16(inp["x"]) + bf16(inp["residual"]))
        w = bf16(inp["weight"])
        qkv = torch.nn.functional.linear(h, w)
        q = norm_module(Qwen3RMSNorm, inp["q_gamma"], D)(qkv[:, : NQ * D].view(T, NQ, D))
        k = norm_module(Qwen3RMSNorm, inp["k_gamma"], D)(qkv[:, NQ * D:(NQ + NKV) * D].view(T, NKV, D))
        v = qkv[:, (NQ + NKV) * D:].view(T, NKV, D)
        q, k = apply_rotary_pos_emb(q.transpose(0, 1)[None], k.transpose(0, 1)[None], bf16(inp["cos"])[None], bf16(inp["sin"])[None])
        q, k = q[0].transpose(0, 1), k[0].transpose(0, 1)

    report: list[str] = []
    compare("q", out["q"], q, q64, report)
    compare("k_cache rows", out["k_cache"][slots[live]].reshape(-1, NKV, D), k[live], k64[live], report)
    compare("v_cache rows", out["v_cache"][slots[live]].reshape(-1, NKV, D), v[live], v64[live], report)
    untouched = np.setdiff1d(np.arange(out["k_cache"].shape[0]), slots[live])
    assert np.array_equal(out["k_cache"][untouched].view(np.int16), inp["k_cache"][untouched].view(np.int16))
    compare("attn", out["attn"], *_attention(inp, q, k, v, q64, k64, v64, golden.STAGE_PARAMS, d), report)
    with capsys.disabled():
        print(f"\nSK-05 T={T} vs float64: " + "; ".join(report))


class _Attn(torch.nn.Module):
    """What Qwen3's eager attention reads of its module."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.num_key_value_groups = groups
        self.eval()


def _attention(inp: dict, q: Any, k: Any, v: Any, q64: np.ndarray, k64: np.ndarray, v64: np.ndarray, stage: dict, d: dict) -> tuple[Any, np.ndarray]:
    """Phase 2 both ways: each token over its sequence's keys (the history the caches held, this
    call's keys from the prolog) — transformers' eager attention in BF16 and float64 math."""
    NQ, NKV, D, BS = d["NQ"], d["NKV"], d["D"], d["BS"]
    scale = D ** -0.5  # Qwen3Attention.scaling: the model's rule, not the kernel's setting
    slots, table, lens = inp["slot_mapping"], inp["block_table"], inp["context_lens"]
    live = slots >= 0
    kc64, vc64 = f64(inp["k_cache"]).reshape(-1, NKV, D), f64(inp["v_cache"]).reshape(-1, NKV, D)
    kc64[slots[live]], vc64[slots[live]] = k64[live], v64[live]
    kc, vc = bf16(inp["k_cache"]).view(-1, NKV, D).clone(), bf16(inp["v_cache"]).view(-1, NKV, D).clone()
    kc[torch.from_numpy(slots[live].astype(np.int64))] = k[live]
    vc[torch.from_numpy(slots[live].astype(np.int64))] = v[live]
    module = _Attn(NQ // NKV)
    hf, ref = [], np.zeros((len(lens), NQ, D))
    for t, n in enumerate(lens):
        rows = np.array([table[t, p // BS] * BS + p % BS for p in range(int(n))])
        with torch.no_grad():
            o, _ = eager_attention_forward(
                module, q[t][None, :, None, :], kc[rows].permute(1, 0, 2)[None], vc[rows].permute(1, 0, 2)[None], None, scale
            )
        hf.append(o[0, 0])
        for h in range(NQ):
            s = kc64[rows, h // (NQ // NKV)] @ q64[t, h] * scale
            w = np.exp(s - s.max())
            ref[t, h] = (w / w.sum()) @ vc64[rows, h // (NQ // NKV)]
    return torch.stack(hf), ref


# --- SK-04: the MLA prolog (DeepSeek-V4 layout) through DeepSeek-V3's modules ---------------------------


@pytest.mark.parametrize("layout", ["v4", "v3"])
def test_sk04_is_as_accurate_as_deepseek_modules(instance_factory, small, layout, capsys):
    folder = instance_factory("SK-04", "AT-10", dims=small["SK-04"], params={"kv_layout": layout})
    kernel, golden = _load(folder, "kernel"), _load(folder, "golden")
    d = golden.DIMS
    T, NH, D, R, DKV = 16, d["NH"], d["D"], d["R"], d["DKV"]
    inp = golden.make_inputs(T, seed=3)
    # real RoPE tables: one angle per interleaved pair (transformers' interleave takes the pair's angle)
    theta = np.random.default_rng(7).uniform(-np.pi, np.pi, (T, R // 2)).repeat(2, axis=1)
    inp["cos"] = np.cos(theta).astype(np.float32).astype(inp["cos"].dtype)
    inp["sin"] = np.sin(theta).astype(np.float32).astype(inp["sin"].dtype)
    out = kernel.run(inp)

    c, s = f64(inp["cos"]), f64(inp["sin"])

    def rope64(h: np.ndarray) -> np.ndarray:  # pairs (2i, 2i+1) of the last R dims, V4's layout
        part = h[..., D - R:] if h.shape[-1] == D else h[..., h.shape[-1] - R:]
        e, o = part[..., 0::2], part[..., 1::2]
        ce, se = c[:, None, 0::2], s[:, None, 0::2]
        rot = np.stack([e * ce - o * se, o * ce + e * se], -1).reshape(part.shape)
        return np.concatenate([h[..., : h.shape[-1] - R], rot], -1)

    x = f64(inp["x"])
    q_a = x @ f64(inp["wq_a"])
    qr = rms64(q_a, inp.get("gamma_cq"))
    q_proj64 = (qr @ f64(inp["wq_b"])).reshape(T, NH, D)
    q64 = rope64(q_proj64 if layout == "v3" else rms64(q_proj64, None))  # DeepseekV3Attention has no q norm
    kv_a64 = x @ f64(inp["wkv"])
    if layout == "v3":  # latent normed, k_pe (not normed) rotated apart
        kv64 = rms64(kv_a64[:, :DKV], inp.get("gamma_ckv"))
        kr64 = rope64(kv_a64[:, None, DKV:])[:, 0]
    else:
        kv64 = rope64(rms64(kv_a64, inp.get("gamma_ckv"))[:, None, :])[:, 0]

    def rope_hf(h: Any) -> Any:
        """transformers' interleaved RoPE on the last R dims, back in V4's interleaved layout."""
        # its tables are cat(freqs, freqs): the pair angles, twice
        cos = torch.cat([bf16(inp["cos"])[:, 0::2]] * 2, -1)[None]
        sin = torch.cat([bf16(inp["sin"])[:, 0::2]] * 2, -1)[None]
        part = h[..., -R:].transpose(0, 1)[None]
        rot, _ = apply_rotary_pos_emb_interleave(part, part, cos, sin)
        rot = rot[0].transpose(0, 1)
        pairs = torch.stack([rot[..., : R // 2], rot[..., R // 2:]], -1).reshape(rot.shape)
        return torch.cat([h[..., :-R], pairs], -1)

    with torch.no_grad():
        xb = bf16(inp["x"])
        q_a_hf = xb @ bf16(inp["wq_a"])
        qr_hf = norm_module(DeepseekV3RMSNorm, inp.get("gamma_cq"), q_a_hf.shape[-1])(q_a_hf)
        q_heads = (qr_hf @ bf16(inp["wq_b"])).view(T, NH, D)
        q_hf = rope_hf(q_heads if layout == "v3" else norm_module(DeepseekV3RMSNorm, None, D)(q_heads))
        kv_a = xb @ bf16(inp["wkv"])
        if layout == "v3":  # as DeepseekV3Attention: kv_a_layernorm on the latent, RoPE on k_pe
            kv_hf = norm_module(DeepseekV3RMSNorm, inp.get("gamma_ckv"), DKV)(kv_a[:, :DKV])
            kr_hf = rope_hf(kv_a[:, None, DKV:])[:, 0]
        else:
            kv_hf = rope_hf(norm_module(DeepseekV3RMSNorm, inp.get("gamma_ckv"), DKV)(kv_a)[:, None, :])[:, 0]

    report: list[str] = []
    compare("q", out["q"], q_hf, q64, report)
    compare("kv", out["kv"], kv_hf, kv64, report)
    if layout == "v3":
        compare("kr", out["kr"], kr_hf, kr64, report)
    with capsys.disabled():
        print(f"\nSK-04 ({layout} layout) T={T} vs float64: " + "; ".join(report))
