"""The SK-01 golden test catches the attention bugs a kernel designer makes: each fault is one
line of the generated kernel rewritten as the bug would write it (the accumulator not rescaled,
the length mask off by one, keys and values swapped, the wrong kv head for a query group, the
block number not read through the table), and the instance's own golden test must then fail —
at a decode T (every token its own sequence) or a prefill T (causal rows of two sequences)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .test_fault_injection import load_generated_test

#: fault -> (line of the generated kernel, what the bug writes instead)
FAULTS = {
    "accumulator not rescaled": ("softmax_o_old = pypto.mul(oi, softmax_alpha)", "softmax_o_old = oi"),
    "sum not rescaled": ("softmax_l_old = pypto.mul(li, softmax_alpha)", "softmax_l_old = li"),
    "mask one key too far": ("valid = (n_ctx - j * BS).min(BS)", "valid = (n_ctx - j * BS + 1).min(BS)"),
    "keys and values swapped": ("k_j = pypto.view(k_cache,", "k_j = pypto.view(v_cache,"),
    "kv head of the wrong group": ("[blk * BS, h * D]", "[blk * BS, (NKV - 1 - h) * D]"),
    "block table ignored": ("blk = block_table[t_off, j].max(0)", "blk = j"),
}
T_DECODE, T_PREFILL = 3, 9


@pytest.fixture(scope="module")
def sk01(instance_factory, small) -> Path:
    return instance_factory("SK-01", "AT-01", dims=small["SK-01"], params={"scale": 0.125})


def _run(folder: Path, T: int) -> bool:
    module = load_generated_test(folder)
    try:
        module.test_matches_golden(T)
    except AssertionError:
        return False
    return True


def test_unpatched_passes_decode_and_prefill(sk01):
    assert _run(sk01, T_DECODE) and _run(sk01, T_PREFILL)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_fails_the_golden_test(sk01, tmp_path, fault):
    line, bug = FAULTS[fault]
    folder = tmp_path / sk01.name
    shutil.copytree(sk01, folder)
    kernel = folder / "kernel.py"
    text = kernel.read_text()
    assert line in text, f"the generated kernel no longer has {line!r}: update the fault"
    kernel.write_text(text.replace(line, bug))
    assert not (_run(folder, T_DECODE) and _run(folder, T_PREFILL)), f"{fault}: the golden test still passes"
