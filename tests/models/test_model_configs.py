"""``--model``: what a config.json gives each skeleton, what is refused (one line naming the field,
exit 2, nothing written), explicit flags over the config, manifest ``model:``, ``pattern-gen models``,
and the host adapters' pure parts (rope dim order, vLLM metadata)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pattern_gen.adapters import paged_from_vllm, rope_dims_from_hf, rope_dims_to_hf
from pattern_gen.models import model_settings
from pattern_gen.plan.manifest import load_manifest, to_request

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"


def test_each_family_fills_its_skeletons() -> None:
    q = model_settings(MODELS / "qwen3-tiny.json", "SK-05")
    assert q.dims == {"H": 256, "NQ": 4, "NKV": 2, "D": 64}
    assert q.params == {"eps": 1e-6} and q.stage_params == {"q_norm": {"eps": 1e-6}, "k_norm": {"eps": 1e-6}}
    v3 = model_settings(MODELS / "deepseek-v3-tiny.json", "SK-04")
    assert v3.dims == {"H": 256, "Q": 128, "NH": 4, "D": 128, "DKV": 128, "R": 64} and v3.params["kv_layout"] == "v3"
    v4 = model_settings(MODELS / "deepseek-v4-tiny.json", "SK-04")
    assert v4.dims["R"] == 32 and v4.params["kv_layout"] == "v4" and v4.stage_params["q_head_norm"] == {"eps": 1e-6}
    assert model_settings(MODELS / "qwen3-tiny.json", "SK-03").dims == {"K": 256, "N": (4 + 2 * 2) * 64}
    assert model_settings(MODELS / "qwen3-tiny.json", "SK-06").dims == {"H": 256, "I": 512}
    v3_moe = model_settings(MODELS / "deepseek-v3-tiny.json", "SK-07")
    assert v3_moe.dims == {"H": 256, "I": 128, "E": 8, "G": 2, "KG": 1, "K": 2, "IS": 128}
    # the tiny config leaves routed_scaling_factor and norm_topk_prob out: DeepseekV3Config's defaults
    assert v3_moe.params == {"router": "grouped_sigmoid", "norm_topk_prob": True, "routed_scaling_factor": 2.5, "shared_expert": True}
    qm = model_settings(MODELS / "qwen3-moe-tiny.json", "SK-07")
    assert qm.dims == {"H": 256, "I": 128, "E": 16, "G": 1, "KG": 1, "K": 4}
    assert qm.params == {"router": "softmax", "norm_topk_prob": True, "routed_scaling_factor": 1.0, "shared_expert": False}


def test_v3_yarn_softmax_scale_is_stated() -> None:
    # DeepseekV3Attention.scaling = qk_head_dim^-0.5 * mscale(40, 1.0)^2 = 128^-0.5 * (0.1 ln 40 + 1)^2
    expected = 128 ** -0.5 * (0.1 * np.log(40) + 1) ** 2
    notes = " ".join(model_settings(MODELS / "deepseek-v3-tiny.json", "SK-04").notes)
    assert f"{expected:.9g}" in notes


def _config(tmp_path: Path, base: str, **changes: object) -> Path:
    data = json.loads((MODELS / base).read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data, indent=2))
    return path


@pytest.mark.parametrize("base,skeleton,changes,field", [
    ("qwen3-tiny.json", "SK-05", {"use_sliding_window": True}, "use_sliding_window"),
    ("qwen3-tiny.json", "SK-05", {"hidden_size": None}, "hidden_size"),
    ("qwen3-tiny.json", "SK-05", {"hidden_size": "256"}, "hidden_size"),
    ("qwen3-tiny.json", "SK-05", {"num_key_value_heads": 3}, "num_key_value_heads"),
    ("qwen3-tiny.json", "SK-05", {"rope_scaling": {"rope_type": "longrope", "factor": 2}}, "rope_scaling.rope_type"),
    ("qwen3-tiny.json", "SK-04", {}, "model_type"),
    ("qwen3-tiny.json", "SK-05", {"model_type": "llama"}, "model_type"),
    ("deepseek-v3-tiny.json", "SK-04", {"q_lora_rank": None}, "q_lora_rank"),
    ("deepseek-v3-tiny.json", "SK-04", {"attention_bias": True}, "attention_bias"),
    ("deepseek-v3-tiny.json", "SK-04", {"rope_interleave": False}, "rope_interleave"),
    ("deepseek-v4-tiny.json", "SK-04", {"num_key_value_heads": 2}, "num_key_value_heads"),
    ("qwen3-tiny.json", "SK-06", {"hidden_act": "gelu"}, "hidden_act"),
    ("qwen3-tiny.json", "SK-06", {"intermediate_size": None}, "intermediate_size"),
    ("deepseek-v3-tiny.json", "SK-07", {"topk_method": "greedy"}, "topk_method"),
    ("deepseek-v3-tiny.json", "SK-07", {"scoring_func": "softmax"}, "scoring_func"),
    ("deepseek-v3-tiny.json", "SK-07", {"n_routed_experts": None}, "n_routed_experts"),
    ("qwen3-moe-tiny.json", "SK-07", {"hidden_act": "gelu"}, "hidden_act"),
    ("qwen3-moe-tiny.json", "SK-04", {}, "model_type"),
])
def test_what_no_kernel_computes_is_refused_naming_the_field(cli, tmp_path, base, skeleton, changes, field) -> None:
    path = _config(tmp_path, base, **changes)
    out = tmp_path / "kernels"
    run = cli("new", "--model", path, "--skeleton", skeleton, "--out", out)
    run.assert_bad_input("model-config")
    (text,) = run.with_code("model-config")
    assert f": {field}:" in text and str(path) in text
    assert not out.exists()


def test_a_file_that_is_not_a_config(cli, tmp_path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "qwen3",\n  "hidden_size": 256,,\n}')
    run = cli("new", "--model", bad, "--skeleton", "SK-05", "--out", tmp_path)
    run.assert_bad_input("model-config")
    assert f"{bad}:2:" in run.with_code("model-config")[0]
    run = cli("new", "--model", tmp_path / "missing.json", "--skeleton", "SK-05", "--out", tmp_path)
    run.assert_bad_input("model-config")


def test_explicit_flags_win_and_say_so(cli, tmp_path) -> None:
    run = cli("new", "--model", MODELS / "qwen3-tiny.json", "--skeleton", "SK-05", "--dim", "H=512", "--param", "eps=1e-5", "--dry-run")
    run.assert_ok()
    assert "--dim H=512 overrides the config (hidden_size gives 256)" in run.stderr
    assert "--param eps=1e-5 overrides the config (rms_norm_eps gives 1e-06)" in run.stderr
    assert "H=512" in run.stdout and "eps1em05" in run.stdout


def test_manifest_entries_take_a_model_relative_to_the_manifest(tmp_path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "v3.json").write_text((MODELS / "deepseek-v3-tiny.json").read_text())
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("instances:\n  - skeleton: SK-04\n    atoms: AT-10\n    model: cfg/v3.json\n    dims: {H: 512}\n")
    req = to_request(load_manifest(manifest).instances[0])
    assert req.dims["H"] == 512 and req.dims["DKV"] == 128 and req.params["kv_layout"] == "v3"


def test_models_command(cli) -> None:
    run = cli("models")
    run.assert_ok()
    for family in ("qwen3", "deepseek_v3", "deepseek_v4"):
        assert family in run.stdout
    run = cli("models", MODELS / "deepseek-v4-tiny.json", "--json")
    run.assert_ok()
    assert json.loads(run.stdout)["SK-04"]["dims"]["R"] == 32


def test_rope_dim_order_round_trips() -> None:
    x = np.arange(2 * 3 * 12, dtype=np.float32).reshape(2, 3, 12)
    hf = rope_dims_to_hf(x, 8)
    assert list(hf[0, 0, 4:]) == [4, 6, 8, 10, 5, 7, 9, 11]  # pairs (4,5),(6,7).. -> evens, then odds
    assert np.array_equal(rope_dims_from_hf(hf, 8), x)


def test_paged_from_vllm_per_token_forms_and_a_mid_batch_skip() -> None:
    # two sequences: a 3-token prefill chunk of one with 2 keys cached before, a decode of another;
    # a padding token (slot -1) between them
    paged = paged_from_vllm(np.array([[4, 9], [0, 0], [7, 0]]), np.array([5, 1, 20]), np.array([0, 3, 4, 5]),
                            np.array([34, 35, 36, -1, 71], np.int64), block_size=16, table_width=2)
    assert list(paged.order) == [0, 1, 2, 4, 3]  # the -1 token moves to the end
    assert list(paged.slot_mapping) == [34, 35, 36, 71, -1] and paged.slot_mapping.dtype == np.int32
    assert list(paged.context_lens) == [3, 4, 5, 20, 1]  # causal inside the chunk
    assert paged.block_table[3].tolist() == [7, 0] and paged.block_table[0].tolist() == [4, 0]
    tokens = np.arange(5)
    assert np.array_equal(paged.from_kernel(paged.to_kernel(tokens)), tokens)
    with pytest.raises(ValueError, match="more than the kernel's 2 per sequence"):
        paged_from_vllm(np.array([[1, 2, 3]]), np.array([40]), np.array([0, 1]), np.array([5]), block_size=16, table_width=2)
