"""The SK-01 and SK-05 (phase 2) golden tests catch the attention bugs a kernel designer makes: each fault is one
line of the generated kernel rewritten as the bug would write it (the accumulator not rescaled,
the length mask off by one, keys and values swapped, the wrong kv head for a query group, the
block number not read through the table), and the instance's own golden test must then fail —
at a decode T (every token its own sequence) or a prefill T (causal rows of two sequences).
SK-02 (single-pass attention over all S keys) has its own lines: the scale left out, the softmax
not normalised, keys and values swapped, the wrong kv head's values, every group reading the
first group's query rows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .test_fault_injection import load_generated_test

#: fault -> (line of the generated kernel, what the bug writes instead); ``{t}`` is the token index
#: of the attention loop (the softmax's locals carry short names: the only alpha of the kernel)
FAULTS = {
    "accumulator not rescaled": ("o_old = pypto.mul(oi, alpha)", "o_old = oi"),
    "sum not rescaled": ("l_old = pypto.mul(li, alpha)", "l_old = li"),
    "mask one key too far": ("valid = (n_ctx - j * BS).min(BS)", "valid = (n_ctx - j * BS + 1).min(BS)"),
    "keys and values swapped": ("k_j = pypto.view(k_cache,", "k_j = pypto.view(v_cache,"),
    "kv head of the wrong group": ("[blk * BS, h * D]", "[blk * BS, (NKV - 1 - h) * D]"),
    "block table ignored": ("blk = block_table[{t}, j].max(0)", "blk = j"),
}
#: instance -> (skeleton, atoms, dims key, params, softmax prefix, token index)
INSTANCES = {
    "sk01": ("SK-01", "AT-01", {"scale": 0.125}, "softmax", "t_off"),
    "sk05": ("SK-05", "AT-10", {"attn_softmax.scale": 0.125}, "attn_softmax", "t2"),
}
T_DECODE, T_PREFILL = 3, 9
#: SK-02's faults (its kernel has no paged cache, no mask and no running state)
SK02_FAULTS = {
    "scale left out": ("ss = pypto.mul(s, SCALE)", "ss = s"),
    "softmax not normalised": ("p = pypto.div(e, l)", "p = e"),
    "keys and values swapped": ("k_h = pypto.view(k, [S, D]", "k_h = pypto.view(v, [S, D]"),
    "values of the wrong kv head": ("v_h = pypto.view(v, [S, D], [0, h * D])", "v_h = pypto.view(v, [S, D], [0, (NKV - 1 - h) * D])"),
    "query rows of the first group": ("[t_off * NQ + h * (NQ // NKV), 0]", "[t_off * NQ, 0]"),
}


@pytest.fixture(scope="module")
def folders(instance_factory, small) -> dict[str, Path]:
    out = {}
    for key, (sk, atoms, params, _, _) in INSTANCES.items():
        stage = {k.split(".")[0]: {k.split(".")[1]: v} for k, v in params.items() if "." in k}
        bare = {k: v for k, v in params.items() if "." not in k}
        out[key] = instance_factory(sk, atoms, dims=small[sk], params=bare, stage_params=stage)
    out["sk02"] = instance_factory("SK-02", "AT-02", dims=small["SK-02"])
    return out


def _run(folder: Path, T: int) -> bool:
    module = load_generated_test(folder)
    try:
        module.test_matches_golden(T, module.SEEDS[0])
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("key", [*INSTANCES, "sk02"])
def test_unpatched_passes_decode_and_prefill(folders, key):
    assert _run(folders[key], T_DECODE) and _run(folders[key], T_PREFILL)


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("key", list(INSTANCES))
def test_fault_fails_the_golden_test(folders, tmp_path, key, fault):
    prefix, token = INSTANCES[key][3:]
    line, bug = (x.format(p=prefix, t=token) for x in FAULTS[fault])
    folder = tmp_path / folders[key].name
    shutil.copytree(folders[key], folder)
    kernel = folder / "kernel.py"
    text = kernel.read_text()
    assert line in text, f"the generated kernel no longer has {line!r}: update the fault"
    kernel.write_text(text.replace(line, bug))
    assert not (_run(folder, T_DECODE) and _run(folder, T_PREFILL)), f"{fault}: the golden test still passes"


@pytest.mark.parametrize("fault", list(SK02_FAULTS))
def test_sk02_fault_fails_the_golden_test(folders, tmp_path, fault):
    line, bug = SK02_FAULTS[fault]
    folder = tmp_path / folders["sk02"].name
    shutil.copytree(folders["sk02"], folder)
    kernel = folder / "kernel.py"
    text = kernel.read_text()
    assert text.count(line) == 1, f"the generated kernel no longer has {line!r} once: update the fault"
    kernel.write_text(text.replace(line, bug))
    assert not _run(folder, 1), f"{fault}: the golden test still passes at T = 1"


def test_host_refuses_a_table_outside_the_cache_and_a_count_past_the_table(folders):
    """Data a kernel would read out of bounds with is refused by the host before the call."""
    from .test_fault_injection import load_generated_test

    kernel = load_generated_test(folders["sk01"]).kernel
    golden = load_generated_test(folders["sk01"]).golden
    inputs = golden.make_inputs(3)
    bad = dict(inputs, block_table=inputs["block_table"].copy())
    bad["block_table"][1, 0] = 999
    with pytest.raises(ValueError, match=r"block_table\[1, 0\] = 999 is outside k_cache's 16 blocks"):
        kernel.run(bad)
    bad = dict(inputs, context_lens=inputs["context_lens"].copy())
    bad["context_lens"][2] = 4 * 32 + 1
    with pytest.raises(ValueError, match=r"context_lens\[2\] = 129: a query token sees 1..128 keys"):
        kernel.run(bad)
    padded = dict(inputs, block_table=inputs["block_table"].copy())
    need = -(-int(inputs["context_lens"][0]) // 32)
    padded["block_table"][0, need:] = -1  # -1 past the blocks a row needs is vLLM's padding: accepted
    kernel.run(padded)
