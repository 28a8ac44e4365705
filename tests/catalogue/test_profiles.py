"""Platform profiles are typed: a misspelt, missing or out-of-bound key is a ``validate`` error at
its line (issue 10), never silently ignored (``op_dtype:`` would have made ``sum`` take INT8)."""

from __future__ import annotations

import pytest

A2A3 = "platforms/a2a3.yaml"


@pytest.mark.parametrize(
    ("old", "new", "needle", "words"),
    [
        ("op_dtypes:", "op_dtype:", "op_dtype:", ["unknown key 'op_dtype'", "did you mean 'op_dtypes'"]),
        ("  sum: [FP32]\n", "", "op_dtypes:", ["op_dtypes lists no dtypes for sum"]),
        ("{unary: 2, binary: 3, reduce: 3, broadcast: 3}", "{unary: 2, reduce: 3, broadcast: 3}", "footprint_factor", ["binary"]),
        ("cores: {aic: 24, aiv: 48}", "cores: {aic: -24, aiv: 48}", "cores:", ["aic"]),
        ("  issue_gap_cycles: 2", "  issue_gap_cycle: 2", "issue_gap_cycle", ["issue_gap_cycle", "did you mean"]),
    ],
)
def test_a_profile_mistake_is_a_validate_error_at_its_line(cli, catalogue_copy, old, new, needle, words):
    catalogue_copy.edit(A2A3, old, new)
    run = cli("validate", str(catalogue_copy.root))
    run.assert_bad_input()
    (text,) = run.with_code("bad-profile")
    assert "a2a3.yaml:" in text, text
    for word in words:
        assert word in text, text
    line = int(text.split("a2a3.yaml:")[1].split(":")[0])
    assert abs(line - catalogue_copy.line(A2A3, needle)) <= 1, text
