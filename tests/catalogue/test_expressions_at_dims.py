"""Shape expressions are evaluated at the dims the kernels use: a division by zero, a non-finite or
a fractional extent is a validate error at the card's line, never a traceback later (issue 17)."""

from __future__ import annotations

import pytest

AT03 = "atoms/AT-03-rmsnorm.yaml"


@pytest.mark.parametrize(
    ("new", "words"),
    [
        ("[M, D / (D - D)]", "division by zero"),
        ("[M, 1e999]", "inf"),
        ("[M, D / 3]", "64/3"),
    ],
)
def test_a_bad_extent_is_a_card_error(cli, catalogue_copy, new, words):
    catalogue_copy.edit(AT03, "shape: [M, D]", f"shape: {new}")
    run = cli("validate", str(catalogue_copy.root))
    run.assert_bad_input("bad-expression")
    texts = run.with_code("bad-expression")
    assert any("AT-03-rmsnorm.yaml:" in t and words in t for t in texts), texts
