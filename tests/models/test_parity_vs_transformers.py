"""Kernels instantiated with ``--model`` compute what transformers' own modules compute.

The user's path end to end: ``pattern-gen new --model <tiny config.json> --skeleton SK-0N``, the
weights taken from a transformers module built from the same config (``adapters.inputs_from_hf``),
cos/sin from ``adapters.rope_tables``, the paged metadata from vLLM's form
(``adapters.paged_from_vllm``). The module gets nothing of the kernel's: it runs its own forward
with its own rotary embedding, scale and cache; its outputs are read through hooks.

Criterion, per output: relative RMS error vs float64 math on the same BF16 inputs and weights,
kernel <= 1.1 x the module's own BF16 error. The float64 reference computes what the module computes
(Qwen3: the norm reads the BF16-rounded residual sum, as the decoder and vLLM's fused_add_rms_norm).
Skips where torch or transformers is not installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pattern_gen.adapters import inputs_from_hf, paged_from_vllm, rope_dims_to_hf, rope_tables  # noqa: E402
from pattern_gen.emit.render import module_id  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
SLACK = 1.10
BF16 = torch.bfloat16


def _instance(cli: Any, tmp: Path, config: str, skeleton: str, *extra: str) -> tuple[Any, dict]:
    run = cli("new", "--model", MODELS / config, "--skeleton", skeleton, "--out", tmp, "-q", *extra)
    run.assert_ok()
    folder = Path(run.stdout.strip().splitlines()[-1])
    spec = importlib.util.spec_from_file_location(f"parity_{module_id(folder.name)}", folder / "kernel.py")
    kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernel)  # type: ignore[union-attr]
    gspec = importlib.util.spec_from_file_location(f"parity_{module_id(folder.name)}_golden", folder / "golden.py")
    golden = importlib.util.module_from_spec(gspec)
    gspec.loader.exec_module(golden)  # type: ignore[union-attr]
    return kernel, golden.DIMS


def f64(a: Any) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return a.detach().to(torch.float64).numpy()
    return np.asarray(a).astype(np.float64)


def rel(out: Any, ref: np.ndarray) -> float:
    return float(np.linalg.norm(f64(out).reshape(ref.shape) - ref) / np.linalg.norm(ref))


def compare(name: str, ours: Any, hf: Any, ref: np.ndarray, report: list[str]) -> None:
    e_ours, e_hf = rel(ours, ref), rel(hf, ref)
    report.append(f"{name}: kernel {e_ours:.3e}, transformers {e_hf:.3e} (ratio {e_ours / e_hf:.2f})")
    assert e_ours <= SLACK * e_hf, f"{name}: the kernel's error {e_ours:.3e} exceeds transformers' {e_hf:.3e} x {SLACK}"


def randomize(module: Any, seed: int) -> None:
    """Random weights of a realistic spread (every parameter BF16-representable, whatever its dtype)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name or "layernorm" in name:
                v = 1 + 0.2 * torch.randn(p.shape, generator=g)
            else:
                v = torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5
            p.copy_(v.to(BF16).to(p.dtype))


def rms64(x: np.ndarray, gamma: np.ndarray | None, eps: float) -> np.ndarray:
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y if gamma is None else y * f64(gamma)


# --- Qwen3: SK-05 vs Qwen3DecoderLayer's input norm + Qwen3Attention (prefill, then decode) ---------


def _qwen3_layer(config: Path) -> Any:
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import Qwen3DecoderLayer

    cfg = Qwen3Config.from_json_file(config)
    cfg._attn_implementation = "eager"
    layer = Qwen3DecoderLayer(cfg, 0).eval()
    randomize(layer, 1)
    return layer.to(BF16), cfg


def _qwen3_hf_step(layer: Any, cfg: Any, h: Any, positions: np.ndarray, cache: Any) -> dict[str, Any]:
    """One sequence's step through the module: input_layernorm, self_attn with its own rotary
    embedding and DynamicCache; q (after RoPE) and the o_proj input read through hooks."""
    from transformers.masking_utils import create_causal_mask
    from transformers.models.qwen3 import modeling_qwen3 as mq

    seen: dict[str, Any] = {}
    rotate = mq.apply_rotary_pos_emb

    def spy(q: Any, k: Any, cos: Any, sin: Any, *a: Any, **kw: Any) -> Any:
        seen["q"], seen["k"] = rotate(q, k, cos, sin, *a, **kw)
        return seen["q"], seen["k"]

    hook = layer.self_attn.o_proj.register_forward_pre_hook(lambda m, args: seen.__setitem__("attn", args[0]))
    mq.apply_rotary_pos_emb = spy
    try:
        pos = torch.from_numpy(positions)[None]
        emb = mq.Qwen3RotaryEmbedding(cfg)(h[None], pos)
        mask = create_causal_mask(config=cfg, inputs_embeds=h[None], attention_mask=None, cache=cache, position_ids=pos)
        with torch.no_grad():
            normed = layer.input_layernorm(h[None])
            layer.self_attn(normed, position_embeddings=emb, attention_mask=mask, cache=cache)
    finally:
        mq.apply_rotary_pos_emb = rotate
        hook.remove()
    return {"q": seen["q"][0].transpose(0, 1), "k": seen["k"][0].transpose(0, 1), "attn": seen["attn"][0]}


@pytest.mark.parametrize("config", ["qwen3-tiny.json", "qwen3-tiny-d128.json"])
def test_sk05_matches_qwen3(cli: Any, tmp_path: Path, config: str, capsys: Any) -> None:
    from transformers.cache_utils import DynamicCache

    kernel, d = _instance(cli, tmp_path, config, "SK-05")
    layer, cfg = _qwen3_layer(MODELS / config)
    H, NQ, NKV, D, BS, NB, MB = d["H"], d["NQ"], d["NKV"], d["D"], d["BS"], d["NB"], d["MB"]
    eps = cfg.rms_norm_eps
    w = inputs_from_hf(layer, "SK-05")
    rng = np.random.default_rng(5)
    blocks = {0: 2, 1: 5}  # sequence -> its cache block (one block holds BS >= its keys)
    caches = {"k": np.zeros((NB * BS, NKV * D), np.float32).astype(w["weight"].dtype), "v": None}
    caches["v"] = caches["k"].copy()
    hf_caches = {s: DynamicCache() for s in blocks}
    k64 = {s: [] for s in blocks}  # float64 keys and values per sequence, in position order
    v64 = {s: [] for s in blocks}
    report: list[str] = []

    # a causal prefill of two sequences (5 and 3 tokens), then one decode step of both with a
    # padding token between them (slot -1 mid-batch, as vLLM may pass): (sequence, new tokens, start)
    steps = [[(0, 5, 0), (1, 3, 0)], [(0, 1, 5), (None, 1, 0), (1, 1, 3)]]
    for step_no, batch in enumerate(steps):
        qsl, lens, table, slots, positions, owner = [0], [], [], [], [], []
        for s, new, start in batch:
            qsl.append(qsl[-1] + new)
            lens.append(start + new)
            table.append([blocks[s] if s is not None else 0])
            for p in range(new):
                positions.append(start + p)
                slots.append(-1 if s is None else blocks[s] * BS + start + p)
                owner.append(s)
        T = len(slots)
        x = (rng.standard_normal((T, H)) * 0.5).astype(np.float32).astype(w["weight"].dtype)
        res = (rng.standard_normal((T, H)) * 2.0).astype(np.float32).astype(w["weight"].dtype)
        cos, sin = rope_tables(np.array(positions), MODELS / config)
        paged = paged_from_vllm(np.array(table), np.array(lens), np.array(qsl), np.array(slots, np.int64), block_size=BS, table_width=MB)
        inputs = {"x": paged.to_kernel(x), "residual": paged.to_kernel(res), "cos": paged.to_kernel(cos), "sin": paged.to_kernel(sin),
                  "k_cache": caches["k"], "v_cache": caches["v"], **paged.inputs(), **w}
        out = kernel.run(inputs)
        caches["k"], caches["v"] = out["k_cache"], out["v_cache"]
        q_k, attn_k = paged.from_kernel(out["q"]), paged.from_kernel(out["attn"])

        # transformers, one sequence at a time with its own DynamicCache; float64 beside it
        got_all: dict[str, list] = {key: [] for key in ("q_hf", "q_ref", "q_ours", "a_hf", "a_ref", "a_ours", "k_hf", "k_ref", "k_ours")}
        for s, new, start in batch:
            if s is None:
                continue
            idx = [i for i, o in enumerate(owner) if o == s]
            h = torch.from_numpy(x[idx].astype(np.float32)).to(BF16) + torch.from_numpy(res[idx].astype(np.float32)).to(BF16)
            got = _qwen3_hf_step(layer, cfg, h, np.array(positions)[idx], hf_caches[s])
            qkv = rms64(f64(h), w["gamma"], eps) @ f64(w["weight"]).T  # the module normalises the BF16 sum
            c, sn = f64(cos[idx])[:, None, :], f64(sin[idx])[:, None, :]

            def rope64(t: np.ndarray) -> np.ndarray:
                return t * c + np.concatenate([-t[..., D // 2:], t[..., : D // 2]], -1) * sn

            q64 = rope64(rms64(qkv[:, : NQ * D].reshape(-1, NQ, D), w["q_gamma"], eps))
            k64[s] += list(rope64(rms64(qkv[:, NQ * D:(NQ + NKV) * D].reshape(-1, NKV, D), w["k_gamma"], eps)))
            v64[s] += list(qkv[:, (NQ + NKV) * D:].reshape(-1, NKV, D))
            keys, vals = np.array(k64[s]), np.array(v64[s])
            for j in range(new):
                n = start + j + 1  # causal: the token sees its sequence up to itself
                ref = np.zeros((NQ, D))
                for hq in range(NQ):
                    g = hq // (NQ // NKV)
                    sc = keys[:n, g] @ q64[j, hq] * D ** -0.5  # Qwen3Attention.scaling
                    e = np.exp(sc - sc.max())
                    ref[hq] = (e / e.sum()) @ vals[:n, g]
                got_all["a_ref"].append(ref.reshape(-1))
            got_all["q_ref"].append(q64)
            got_all["q_hf"].append(got["q"])
            got_all["q_ours"].append(q_k[idx])
            got_all["a_hf"].append(got["attn"])
            got_all["a_ours"].append(attn_k[idx])
            got_all["k_hf"].append(got["k"])
            got_all["k_ref"].append(keys[-new:])
            got_all["k_ours"].append(caches["k"][np.array(slots)[idx]].reshape(-1, NKV, D))
        tag = "prefill" if step_no == 0 else "decode"
        cat = {k: (torch.cat(v) if k.endswith("hf") else np.concatenate(v) if not k.startswith("a_ref") else np.array(v)) for k, v in got_all.items()}
        compare(f"{tag} q", cat["q_ours"], cat["q_hf"], cat["q_ref"], report)
        compare(f"{tag} k_cache rows", cat["k_ours"], cat["k_hf"], cat["k_ref"], report)
        compare(f"{tag} attn", cat["a_ours"], cat["a_hf"], cat["a_ref"], report)
    # the padding token wrote nothing: only the 10 real tokens' slots hold keys
    written = np.flatnonzero(np.any(caches["k"].astype(np.float32) != 0, axis=1))
    assert len(written) == 5 + 1 + 3 + 1, written
    with capsys.disabled():
        print(f"\nSK-05 --model {config}: " + "; ".join(report))


# --- DeepSeek-V3 / V4: SK-04 vs DeepseekV3Attention / DeepseekV4Attention, read up to the rope ------


def _np_bf16(t: Any) -> np.ndarray:
    return t.float().numpy().astype(ml_dtypes.bfloat16)


class _Stop(Exception):
    """Ends a module's forward once the prolog's outputs are seen (what follows is attention)."""


def _rope_pairs64(t: np.ndarray, cos: np.ndarray, sin: np.ndarray, R: int) -> np.ndarray:
    """Interleaved-pair RoPE on the last R dims in float64 (tables [T, R], one angle per pair)."""
    part = t[..., t.shape[-1] - R:]
    e, o = part[..., 0::2], part[..., 1::2]
    c = f64(cos)[:, None, 0::2] if t.ndim == 3 else f64(cos)[:, 0::2]
    s = f64(sin)[:, None, 0::2] if t.ndim == 3 else f64(sin)[:, 0::2]
    rot = np.stack([e * c - o * s, o * c + e * s], -1).reshape(part.shape)
    return np.concatenate([t[..., : t.shape[-1] - R], rot], -1)


def _hf_prolog(module: Any, mod: Any, rope_fn: str, x: Any, emb: Any, hooks: dict[str, Any], calls: int) -> dict[str, Any]:
    """Run ``module`` on x, recording the outputs of the submodules in ``hooks`` and of its rope
    function (``mod.<rope_fn>``) until it has been called ``calls`` times."""
    seen: dict[str, Any] = {"rope": []}
    original = getattr(mod, rope_fn)

    def spy(*args: Any, **kw: Any) -> Any:
        result = original(*args, **kw)
        seen["rope"].append(result)
        if len(seen["rope"]) == calls:
            raise _Stop
        return result

    handles = [sub.register_forward_hook(lambda m, a, out, key=key: seen.__setitem__(key, out)) for key, sub in hooks.items()]
    setattr(mod, rope_fn, spy)
    try:
        with torch.no_grad(), pytest.raises(_Stop):
            module(x[None], position_embeddings=emb, position_ids=torch.arange(x.shape[0])[None], attention_mask=None)
    finally:
        setattr(mod, rope_fn, original)
        for h in handles:
            h.remove()
    return seen


def test_sk04_matches_deepseek_v3_attention(cli: Any, tmp_path: Path, capsys: Any) -> None:
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as m3

    kernel, d = _instance(cli, tmp_path, "deepseek-v3-tiny.json", "SK-04")
    cfg = DeepseekV3Config.from_json_file(MODELS / "deepseek-v3-tiny.json")
    cfg._attn_implementation = "eager"
    attn = m3.DeepseekV3Attention(cfg, 0).eval()
    randomize(attn, 2)
    attn = attn.to(BF16)
    T, NH, D, DKV, R, eps = 16, d["NH"], d["D"], d["DKV"], d["R"], cfg.rms_norm_eps
    positions = np.arange(100, 100 + T)
    x = torch.randn(T, d["H"], generator=torch.Generator().manual_seed(3)).to(BF16)
    emb = m3.DeepseekV3RotaryEmbedding(cfg)(x[None], torch.from_numpy(positions)[None])
    seen = _hf_prolog(attn, m3, "apply_rotary_pos_emb_interleave", x, emb, {"q": attn.q_b_proj, "kv": attn.kv_a_layernorm}, 1)
    q_rot, k_rot = seen["rope"][0]
    q_hf = torch.cat([seen["q"].view(T, NH, D)[..., : D - R], q_rot[0].transpose(0, 1)], -1)

    w = inputs_from_hf(attn, "SK-04")
    cos, sin = rope_tables(positions, MODELS / "deepseek-v3-tiny.json")
    out = kernel.run({"x": x.float().numpy().astype(w["wq_a"].dtype), "cos": cos, "sin": sin, **w})

    xf = f64(x)
    q64 = (rms64(xf @ f64(w["wq_a"]), w["gamma_cq"], eps) @ f64(w["wq_b"])).reshape(T, NH, D)  # V3: no per-head q norm
    kv_a = xf @ f64(w["wkv"])
    report: list[str] = []
    compare("q", rope_dims_to_hf(out["q"].astype(np.float32), R), q_hf, rope_dims_to_hf(_rope_pairs64(q64, cos, sin, R), R), report)
    compare("kv", out["kv"], seen["kv"][0], rms64(kv_a[:, :DKV], w["gamma_ckv"], eps), report)
    compare("kr", rope_dims_to_hf(out["kr"].astype(np.float32), R), k_rot[0, 0], rope_dims_to_hf(_rope_pairs64(kv_a[:, DKV:], cos, sin, R), R), report)
    with capsys.disabled():
        print("\nSK-04 --model deepseek-v3-tiny.json vs DeepseekV3Attention: " + "; ".join(report))


def test_sk04_matches_deepseek_v4_attention(cli: Any, tmp_path: Path, capsys: Any) -> None:
    from transformers import DeepseekV4Config
    from transformers.models.deepseek_v4 import modeling_deepseek_v4 as m4

    kernel, d = _instance(cli, tmp_path, "deepseek-v4-tiny.json", "SK-04")
    cfg = DeepseekV4Config.from_json_file(MODELS / "deepseek-v4-tiny.json")
    cfg._attn_implementation = "eager"
    attn = m4.DeepseekV4Attention(cfg, 0).eval()
    randomize(attn, 4)  # its norm weights stay FP32 (as V4 keeps them), BF16-representable
    attn = attn.to(BF16)
    attn.q_a_norm.float()
    attn.kv_norm.float()
    T, NH, D, R, eps = 16, d["NH"], d["D"], d["R"], cfg.rms_norm_eps
    positions = np.arange(40, 40 + T)
    x = torch.randn(T, d["H"], generator=torch.Generator().manual_seed(5)).to(BF16)
    rotary = m4.DeepseekV4RotaryEmbedding(cfg)
    pos = torch.from_numpy(positions)[None]
    emb = {label: rotary(x[None], pos, layer_type=label) for label in ("main", "compress")}
    seen = _hf_prolog(attn, m4, "apply_rotary_pos_emb", x, emb, {"qr": attn.q_a_norm}, 2)
    q_hf, kv_hf = seen["rope"][0][0].transpose(0, 1), seen["rope"][1][0, 0]

    w = inputs_from_hf(attn, "SK-04")
    assert w["gamma_cq"].dtype.name == "bfloat16"
    cos, sin = rope_tables(positions, MODELS / "deepseek-v4-tiny.json", rope=attn.rope_layer_type)
    out = kernel.run({"x": x.float().numpy().astype(w["wq_a"].dtype), "cos": cos, "sin": sin, **w})

    xf = f64(x)
    qr64 = rms64(xf @ f64(w["wq_a"]), w["gamma_cq"], eps)
    q64 = _rope_pairs64(rms64((qr64 @ f64(w["wq_b"])).reshape(T, NH, D), None, eps), cos, sin, R)
    kv64 = _rope_pairs64(rms64(xf @ f64(w["wkv"]), w["gamma_ckv"], eps), cos, sin, R)
    report: list[str] = []
    compare("qr", out["qr"], seen["qr"][0], qr64, report)
    compare("q", out["q"], q_hf, q64, report)
    compare("kv", out["kv"], kv_hf, kv64, report)
    with capsys.disabled():
        print(f"\nSK-04 --model deepseek-v4-tiny.json vs DeepseekV4Attention ({attn.rope_layer_type} rope): " + "; ".join(report))


# --- SK-01 vs torch's scaled_dot_product_attention (GQA) over vLLM-style paged sequences ------------


def test_sk01_matches_torch_sdpa(cli: Any, tmp_path: Path, capsys: Any) -> None:
    kernel, d = _instance(cli, tmp_path, "qwen3-tiny.json", "SK-01", "--dim", "NB=8", "--dim", "BS=32", "--dim", "MB=4")
    NQ, NKV, D, NB, BS, MB = d["NQ"], d["NKV"], d["D"], d["NB"], d["BS"], d["MB"]
    rng = np.random.default_rng(11)
    kc = rng.standard_normal((NB * BS, NKV * D)).astype(np.float32)
    vc = rng.standard_normal((NB * BS, NKV * D)).astype(np.float32)
    kc, vc = torch.from_numpy(kc).to(BF16), torch.from_numpy(vc).to(BF16)
    # three sequences (vLLM: per sequence tables and lengths, one decode token each, and a 4-token
    # chunk of the third's prefill, causal), through the adapter to the kernel's per-token forms
    tables = np.array([[3, 1, 6, 0], [5, 2, -1, -1], [7, 4, 0, 2]])
    lens = np.array([70, 40, 100])
    qsl = np.array([0, 1, 2, 6])
    paged = paged_from_vllm(tables, lens, qsl, np.arange(6), block_size=BS, table_width=MB)
    T = 6
    q = torch.from_numpy(rng.standard_normal((T, NQ, D)).astype(np.float32)).to(BF16)
    out = kernel.run({"q": paged.to_kernel(_np_bf16(q)), "k_cache": _np_bf16(kc), "v_cache": _np_bf16(vc), **paged.inputs()})
    hf, ref = [], []
    for t in range(T):
        n = int(paged.context_lens[t])
        rows = np.array([paged.block_table[t, p // BS] * BS + p % BS for p in range(n)])
        k = kc[rows].view(n, NKV, D).transpose(0, 1)[None]
        v = vc[rows].view(n, NKV, D).transpose(0, 1)[None]
        with torch.no_grad():  # torch's own scale: 1/sqrt(D)
            hf.append(torch.nn.functional.scaled_dot_product_attention(q[t][None, :, None, :], k, v, enable_gqa=True)[0, :, 0])
        k64, v64 = f64(k[0]), f64(v[0])
        o = np.zeros((NQ, D))
        for h in range(NQ):
            s = k64[h // (NQ // NKV)] @ f64(q[t, h]) / np.sqrt(D)
            e = np.exp(s - s.max())
            o[h] = e / e.sum() @ v64[h // (NQ // NKV)]
        ref.append(o)
    report: list[str] = []
    compare("out", paged.from_kernel(out["out"]), torch.stack(hf), np.array(ref), report)
    with capsys.disabled():
        print("\nSK-01 --model qwen3-tiny.json vs torch SDPA (GQA): " + "; ".join(report))


# --- SK-02 vs torch's scaled_dot_product_attention (GQA) over a whole contiguous key range ----------


def test_sk02_matches_torch_sdpa(cli: Any, tmp_path: Path, capsys: Any) -> None:
    """Every query token attends to all S keys (no mask): torch's SDPA with its own scale
    (1/sqrt(D)) and its own GQA head mapping (enable_gqa) on the same BF16 q, k, v."""
    S = 320
    kernel, d = _instance(cli, tmp_path, "qwen3-tiny.json", "SK-02", "--dim", f"S={S}")
    NQ, NKV, D = d["NQ"], d["NKV"], d["D"]
    rng = np.random.default_rng(5)
    k = torch.from_numpy(rng.standard_normal((S, NKV, D)).astype(np.float32)).to(BF16)
    v = torch.from_numpy(rng.standard_normal((S, NKV, D)).astype(np.float32)).to(BF16)
    report: list[str] = []
    for T in (1, 5):
        q = torch.from_numpy(rng.standard_normal((T, NQ, D)).astype(np.float32)).to(BF16)
        out = kernel.run({"q": _np_bf16(q), "k": _np_bf16(k.reshape(S, NKV * D)), "v": _np_bf16(v.reshape(S, NKV * D))})
        with torch.no_grad():  # [1, heads, tokens, D]: the T tokens as T queries of one sequence, unmasked
            hf = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None], enable_gqa=True
            )[0].transpose(0, 1)
        q64, k64, v64 = f64(q), f64(k), f64(v)
        ref = np.zeros((T, NQ, D))
        for h in range(NQ):
            s = q64[:, h] @ k64[:, h // (NQ // NKV)].T / np.sqrt(D)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            ref[:, h] = e / e.sum(axis=-1, keepdims=True) @ v64[:, h // (NQ // NKV)]
        compare(f"T={T} out", out["out"], hf, ref, report)
    with capsys.disabled():
        print("\nSK-02 --model qwen3-tiny.json vs torch SDPA (GQA, no mask): " + "; ".join(report))


# --- Qwen3: SK-06 vs Qwen3MLP -------------------------------------------------------------------------


@pytest.mark.parametrize("config", ["qwen3-tiny.json"])
def test_sk06_matches_qwen3_mlp(cli: Any, tmp_path: Path, config: str, capsys: Any) -> None:
    """The FFN: the module runs in BF16 (five roundings: gate, up, silu, product, down); the
    kernel keeps gate, up and the SwiGLU in FP32 and rounds the activation once. The float64
    reference is the module's math on the same BF16 input and weights."""
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import Qwen3MLP

    kernel, d = _instance(cli, tmp_path, config, "SK-06")
    cfg = Qwen3Config.from_json_file(MODELS / config)
    mlp = Qwen3MLP(cfg).eval()
    randomize(mlp, 3)
    mlp = mlp.to(BF16)
    w = inputs_from_hf(mlp, "SK-06")
    report: list[str] = []
    for T in (1, 7, 37):  # a decode token, a remainder path, several paths of the unroll list
        x = (np.random.default_rng(T).standard_normal((T, d["H"]))).astype(np.float32).astype(w["w_gate"].dtype)
        out = kernel.run({"x": x, **w})
        with torch.no_grad():
            hf = mlp(torch.from_numpy(x.astype(np.float32)).to(BF16))
        x64 = f64(x)
        g, u = x64 @ f64(w["w_gate"]).T, x64 @ f64(w["w_up"]).T
        ref = (g / (1 + np.exp(-g)) * u) @ f64(w["w_down"]).T
        compare(f"T={T} y", out["y"], hf, ref, report)
    with capsys.disabled():
        print("\n  " + "\n  ".join(report))


# --- SK-07 vs DeepseekV3MoE and Qwen3MoeSparseMoeBlock ------------------------------------------------


def _route64(x64: np.ndarray, w: dict, d: dict, p: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The module's routing in float64 from its own definition: (experts [T, K], weights [T, K], each
    token's relative gap between the k-th and (k+1)-th choice value — a tie is within the
    computation's rounding; for DeepSeek-V3 also the groups' gap)."""
    logits = x64 @ f64(w["w_router"]).T
    K = d["K"]
    if p["router"] == "softmax":
        z = np.exp(logits - logits.max(-1, keepdims=True))
        scores = choice = z / z.sum(-1, keepdims=True)
        gap_g = np.full(len(x64), np.inf)
    else:
        scores = 1 / (1 + np.exp(-logits))
        choice = scores + f64(w["e_bias"])
        T, E, G = len(x64), d["E"], d["G"]
        ranks = -np.sort(-choice.reshape(T, G, E // G), axis=-1)[..., :2].sum(-1)
        order_g = np.argsort(-ranks, axis=-1, kind="stable")
        sorted_g = np.take_along_axis(ranks, order_g, -1)
        gap_g = (sorted_g[:, d["KG"] - 1] - sorted_g[:, d["KG"]]) / np.abs(sorted_g).max(-1) if d["KG"] < G else np.full(T, np.inf)
        keep = np.zeros((T, G), bool)
        np.put_along_axis(keep, order_g[:, : d["KG"]], True, -1)
        choice = np.where(np.repeat(keep, E // G, axis=1), choice, -np.inf)
    order = np.argsort(-choice, axis=-1, kind="stable")
    picked = np.take_along_axis(choice, order, -1)
    gap = np.minimum((picked[:, K - 1] - picked[:, K]) / np.abs(picked[:, K - 1]), gap_g)
    experts = order[:, :K]
    weights = np.take_along_axis(scores, experts, -1)
    if p["norm_topk_prob"]:
        weights = weights / (weights.sum(-1, keepdims=True) + (1e-20 if p["router"] != "softmax" else 0.0))
    return experts, weights * p["routed_scaling_factor"], gap


def _moe64(x64: np.ndarray, w: dict, d: dict, experts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    H, I = d["H"], d["I"]
    gu, down = f64(w["w_gate_up"]).reshape(d["E"], 2 * I, H), f64(w["w_down"]).reshape(d["E"], H, I)

    def ffn(w_gu: np.ndarray, w_d: np.ndarray, rows: np.ndarray) -> np.ndarray:
        g, u = np.split(rows @ w_gu.T, 2, axis=-1)
        return (g / (1 + np.exp(-g)) * u) @ w_d.T

    y = np.zeros_like(x64)
    for t in range(len(x64)):
        for e, wt in zip(experts[t], weights[t]):
            y[t] += wt * ffn(gu[e], down[e], x64[t:t + 1])[0]
    if "ws_gate_up" in w:
        y += ffn(f64(w["ws_gate_up"]), f64(w["ws_down"]), x64)
    return y


@pytest.mark.parametrize("config", ["deepseek-v3-tiny.json", "qwen3-moe-tiny.json"])
def test_sk07_matches_the_moe_block(cli: Any, tmp_path: Path, config: str, capsys: Any) -> None:
    """The MoE block: the module runs each expert in BF16 on the tokens routed to it (Qwen3-MoE also
    its router linear, and the weighted sum); the kernel runs every expert in FP32 weighted by its
    routing column and rounds the activation and y once. Routing is compared apart from values:
    the module's chosen experts equal the float64 choice on every token whose k-th and (k+1)-th
    choice values (and, DeepSeek-V3, the groups') are further apart, relative, than the module's
    logits' rounding can move them (1e-5 for DeepSeek-V3's FP32 router, 2^-6 for Qwen3-MoE's BF16
    one) — and values are compared on those tokens."""
    import transformers
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE
    from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock

    kernel, d = _instance(cli, tmp_path, config, "SK-07")
    v3 = config.startswith("deepseek")
    cfg_cls = transformers.DeepseekV3Config if v3 else transformers.Qwen3MoeConfig
    cfg = cfg_cls.from_json_file(MODELS / config)
    moe = (DeepseekV3MoE if v3 else Qwen3MoeSparseMoeBlock)(cfg).eval()
    randomize(moe, 5)
    if v3:
        with torch.no_grad():
            moe.gate.e_score_correction_bias.copy_(0.02 * torch.randn(d["E"], generator=torch.Generator().manual_seed(6)))
    moe = moe.to(BF16)
    if v3:
        moe.gate.e_score_correction_bias.data = moe.gate.e_score_correction_bias.data.float()  # the model keeps it FP32
    w = inputs_from_hf(moe, "SK-07")
    params = {"router": "grouped_sigmoid" if v3 else "softmax", "norm_topk_prob": bool(cfg.norm_topk_prob),
              "routed_scaling_factor": float(cfg.routed_scaling_factor) if v3 else 1.0}
    chosen: list[Any] = []
    moe.gate.register_forward_hook(lambda mod, args, out: chosen.append(out[2]))
    report: list[str] = []
    for T in (1, 7, 37):
        x = np.random.default_rng(T).standard_normal((T, d["H"])).astype(np.float32).astype(w["w_router"].dtype)
        out = kernel.run({"x": x, **w})
        with torch.no_grad():
            hf = moe(torch.from_numpy(x.astype(np.float32)).to(BF16)[None])[0]
        x64 = f64(x)
        experts, weights, gap = _route64(x64, w, d, params)
        # the module's logits: FP32 (DeepSeek-V3), a few ulps from float64; BF16 (Qwen3-MoE), 2^-9 relative
        clear = gap > (1e-5 if v3 else 2.0**-6)
        module_sets = [set(map(int, r)) for r in chosen[-1].reshape(T, -1).numpy()]
        agree = [module_sets[t] == set(map(int, experts[t])) for t in range(T)]
        assert all(a for a, c in zip(agree, clear) if c), f"T={T}: the module chose other experts than its float64 definition on a clear token"
        assert clear.mean() >= 0.5, f"T={T}: only {int(clear.sum())} of {T} tokens are clear of a tie"
        ref = _moe64(x64, w, d, experts, weights)[clear]
        report.append(f"T={T}: {int(clear.sum())}/{T} tokens clear of a tie, module choices agree on {sum(agree)}/{T}")
        compare(f"T={T} y", out["y"][clear], f64(hf)[clear], ref, report)
    with capsys.disabled():
        print(f"\nSK-07 --model {config}:\n  " + "\n  ".join(report))
