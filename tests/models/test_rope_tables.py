"""``adapters.rope_tables`` equals what each family's transformers rotary embedding computes, bit for
bit in BF16 (the kernel's cos/sin dtype), for the shipped tiny configs: Qwen3 plain and with YaRN,
DeepSeek-V3 with YaRN (mscale), DeepSeek-V4's main and compress sets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pattern_gen.adapters import rope_tables  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"
POSITIONS = np.array([0, 1, 2, 7, 100, 4095, 4096, 30000])


def _hf(name: str, rope: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """transformers' own tables, built from the config file by the model's rotary embedding class."""
    path = MODELS / name
    x = torch.zeros(1, len(POSITIONS), 8, dtype=torch.bfloat16)
    pos = torch.from_numpy(POSITIONS)[None]
    if name.startswith("qwen3"):
        from transformers import Qwen3Config
        from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding

        cos, sin = Qwen3RotaryEmbedding(Qwen3Config.from_json_file(path))(x, pos)
    elif "v3" in name:
        from transformers import DeepseekV3Config
        from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3RotaryEmbedding

        cos, sin = DeepseekV3RotaryEmbedding(DeepseekV3Config.from_json_file(path))(x, pos)
        half = cos.shape[-1] // 2  # cat(f, f): each pair's angle is f[i]; the kernel repeats it per pair
        cos, sin = cos[..., :half].repeat_interleave(2, -1), sin[..., :half].repeat_interleave(2, -1)
    else:
        from transformers import DeepseekV4Config
        from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4RotaryEmbedding

        cos, sin = DeepseekV4RotaryEmbedding(DeepseekV4Config.from_json_file(path))(x, pos, layer_type=rope)
        cos, sin = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
    return cos[0].float().numpy(), sin[0].float().numpy()


@pytest.mark.parametrize("name,rope", [("qwen3-tiny.json", None), ("qwen3-tiny-d128.json", None), ("deepseek-v3-tiny.json", None),
                                       ("deepseek-v4-tiny.json", "main"), ("deepseek-v4-tiny.json", "compress")])
def test_tables_match_transformers(name: str, rope: str | None) -> None:
    cos, sin = rope_tables(POSITIONS, MODELS / name, rope=rope)
    hf_cos, hf_sin = _hf(name, rope)
    assert cos.shape == hf_cos.shape
    ours = np.stack([cos.astype(np.float32), sin.astype(np.float32)])
    theirs = np.stack([hf_cos, hf_sin])
    # the angle position x inv_freq is one FP32 product both ways; cos/sin of a large angle may
    # differ by one BF16 step between NumPy's and ATen's libm: count those, allow none elsewhere
    off = np.abs(ours - theirs) > 0
    assert off.mean() < 0.01, f"{off.sum()} of {off.size} table entries differ"
    assert np.max(np.abs(ours - theirs)) <= 2.0 ** -8
