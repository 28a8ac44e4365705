"""Numbers from the command line and manifests are plain ASCII decimals (issue 35): Python's int()
and float() also accept '２５６', '1_024' and ' 256 ', which then named an instance K256."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pattern_gen.vocab.text import parse_float, parse_int


@pytest.mark.parametrize("text", ["２５６", "1_024", "0x10", "1e3", "", "+", "9" * 31, "٣", "True"])
def test_parse_int_refuses_what_is_not_plain_decimal(text):
    with pytest.raises(ValueError):
        parse_int(text)


@pytest.mark.parametrize("text", ["１e-5", "1_0.5", "1e99999", "0x1p3", ".", "e5"])
def test_parse_float_refuses_what_is_not_plain_decimal(text):
    with pytest.raises(ValueError):
        parse_float(text)


@given(st.integers(min_value=-10**29, max_value=10**29))
def test_parse_int_reads_every_plain_int(n):
    assert parse_int(str(n)) == n and parse_int(f" {n} ") == n


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30))
def test_parse_float_reads_repr(x):
    assert parse_float(repr(x)) == x


def test_a_unicode_dim_is_refused(cli, tmp_path):
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=２５６", "--dim", "N=128", "--out", str(tmp_path))
    run.assert_bad_input("bad-dim")
    assert not any(tmp_path.iterdir())
