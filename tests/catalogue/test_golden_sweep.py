"""Every parameter value of every skeleton passes its own golden at the seed dims (slow lane).

``validate`` proves each combination legal; this proves each value right. It is what would have
found SK-04 with ``has_gamma=false`` failing at T=9 with seed 0 before a user did (the manifest
held that variation only at small dims). Each variation is one test, so ``-n auto`` spreads them.
"""

from __future__ import annotations

import pytest

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.output.sweep import run_variation, variations

CAT = load_catalogue([])
VARIATIONS = list(variations(CAT))


def test_the_sweep_covers_every_parameter_value_of_every_skeleton():
    labels = {v.label for v in VARIATIONS}
    assert "SK-04 AT-10 has_gamma=false" in labels and "SK-03 AT-10 quant_mode=mxfp8 on ascend950" in labels
    # a value a card's refuse: rule names is no kernel: AT-09 refuses a quantised K split
    assert "SK-03 AT-10 k_split=true" in labels and "SK-03 AT-11 k_split=true" not in labels
    assert {v.skeleton for v in VARIATIONS} == {sk.id for sk in CAT.skeletons()}
    others = sorted(p for p in CAT.platforms if p != "a2a3")
    assert others and all(f"{sk.id} {next(iter(sk.slots.values())).default} (defaults) on {p}" in labels
                          for sk in CAT.skeletons() for p in others)  # every platform builds every skeleton


@pytest.mark.parametrize("variation", VARIATIONS, ids=lambda v: v.label.replace(" ", "-"))
def test_variation_passes_its_golden(variation):
    result = run_variation(CAT, variation)
    assert not result.refused, result.refused
    assert result.passed, f"{variation.label}:\n" + "\n".join(result.failures)
