"""Parameter predicates (``when:``): every form, the errors on bad forms, describe/to_data."""

from __future__ import annotations

import ast
import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pattern_gen.vocab import predicates as predicates_module
from pattern_gen.vocab.predicates import (
    TRUE,
    AllOf,
    AnyOf,
    Match,
    Not,
    PredicateError,
    parse_predicate,
    same_value,
)

ENV = {"has_gamma": True, "rsqrt_mode": "rsqrt", "quant_mode": "none", "out_dtype": "BF16", "has_bias": False, "unroll": 8}


@pytest.mark.parametrize(
    "form, expected",
    [
        ({"has_gamma": True}, True),
        ({"has_gamma": False}, False),
        ({"quant_mode": ["int8_w8a8", "mxfp8"]}, False),
        ({"quant_mode": ["none", "mxfp8"]}, True),
        ({"has_bias": False, "out_dtype": "BF16"}, True),
        ({"has_bias": False, "out_dtype": "FP32"}, False),
        ({"any": [{"has_bias": True}, {"out_dtype": "BF16"}]}, True),
        ({"any": [{"has_bias": True}, {"out_dtype": "FP32"}]}, False),
        ({"all": [{"has_gamma": True}, {"rsqrt_mode": "rsqrt"}]}, True),
        ({"all": [{"has_gamma": True}, {"rsqrt_mode": "sqrt_div"}]}, False),
        ({"not": {"quant_mode": "none"}}, False),
        ({"not": {"quant_mode": "mxfp8"}}, True),
        ({"unroll": 8}, True),
        ({"unroll": [1, 2]}, False),
        ({"not": {"any": [{"has_bias": True}, {"all": [{"has_gamma": True}, {"unroll": 16}]}]}}, True),
        (None, True),
        ({}, True),
    ],
)
def test_forms(form, expected):
    assert parse_predicate(form).holds(ENV) is expected


def test_tree_shapes():
    assert parse_predicate({"has_gamma": True}) == Match("has_gamma", (True,))
    assert parse_predicate({"quant_mode": ["a", "b"]}) == Match("quant_mode", ("a", "b"))
    assert parse_predicate({"a": 1, "b": 2}) == AllOf((Match("a", (1,)), Match("b", (2,))))
    assert parse_predicate({"any": [{"a": 1}]}) == AnyOf((Match("a", (1,)),))
    assert parse_predicate({"not": {"a": 1}}) == Not(Match("a", (1,)))
    assert parse_predicate(None) == TRUE
    assert TRUE.holds({}) and TRUE.describe() == "always"


def test_a_missing_parameter_never_matches():
    assert not parse_predicate({"nope": True}).holds(ENV)
    assert parse_predicate({"not": {"nope": True}}).holds(ENV)


def test_true_is_not_one():
    """YAML ``true`` and ``1`` differ, although Python says ``True == 1``."""
    assert not parse_predicate({"has_gamma": 1}).holds(ENV)
    assert not parse_predicate({"unroll": True}).holds({"unroll": 1})
    assert same_value(True, True) and not same_value(True, 1) and same_value(8, 8.0)


def test_params_lists_what_a_predicate_reads():
    pred = parse_predicate({"any": [{"has_bias": True}, {"not": {"quant_mode": "none"}}], "unroll": 8})
    assert pred.params() == {"has_bias", "quant_mode", "unroll"}
    assert TRUE.params() == set()


@pytest.mark.parametrize(
    "form, message",
    [
        ("has_gamma", "a predicate is a mapping"),
        ([{"has_gamma": True}], "a predicate is a mapping"),
        (3, "a predicate is a mapping"),
        ({"any": []}, "non-empty list"),
        ({"all": {"a": 1}}, "non-empty list"),
        ({"any": "a"}, "non-empty list"),
        ({"not": "a"}, "a predicate is a mapping"),
        ({"has-gamma": True}, "not a parameter name"),
        ({1: True}, "not a parameter name"),
        ({"a": []}, "lists no values"),
        ({"a": None}, "scalars only"),
        ({"a": [1, None]}, "scalars only"),
        ({"a": {"b": 1}}, "scalars only"),
        ({"a": [[1]]}, "scalars only"),
        ({"any": [{"a": 1}, "b"]}, "a predicate is a mapping"),
    ],
)
def test_bad_forms(form, message):
    with pytest.raises(PredicateError, match=message):
        parse_predicate(form)


def test_deep_nesting_is_an_error_not_a_crash():
    form: dict = {"a": 1}
    for _ in range(2000):
        form = {"not": form}
    with pytest.raises(PredicateError, match="nested"):
        parse_predicate(form)


def test_describe():
    assert parse_predicate({"has_gamma": True}).describe() == "has_gamma = true"
    assert parse_predicate({"quant_mode": ["int8_w8a8", "mxfp8"]}).describe() == "quant_mode = int8_w8a8 or mxfp8"
    assert parse_predicate({"a": 1, "b": 2}).describe() == "a = 1 and b = 2"
    assert parse_predicate({"any": [{"a": 1}, {"b": 2}]}).describe() == "(a = 1 or b = 2)"
    assert parse_predicate({"not": {"a": 1}}).describe() == "not (a = 1)"


def test_to_data_keeps_repeated_parameters():
    """``all: [{a: 1}, {a: 2}]`` is never true; flattening it to ``{a: 2}`` would change its meaning."""
    pred = parse_predicate({"all": [{"a": 1}, {"a": 2}]})
    assert not pred.holds({"a": 2})
    assert not parse_predicate(pred.to_data()).holds({"a": 2})


# --- round trip: parse(to_data(p)) means p -------------------------------------------------------------

PARAMS = ["a", "b", "c"]
VALUES = [True, False, 0, 1, 2, "x", "y"]
match = st.builds(
    lambda p, vs: {p: vs[0] if len(vs) == 1 else vs},
    st.sampled_from(PARAMS),
    st.lists(st.sampled_from(VALUES), min_size=1, max_size=3),
)
forms = st.recursive(
    match,
    lambda sub: st.one_of(
        st.builds(lambda xs: {"any": xs}, st.lists(sub, min_size=1, max_size=3)),
        st.builds(lambda xs: {"all": xs}, st.lists(sub, min_size=1, max_size=3)),
        st.builds(lambda x: {"not": x}, sub),
    ),
    max_leaves=8,
)
envs = st.fixed_dictionaries({p: st.sampled_from(VALUES) for p in PARAMS})


@settings(max_examples=300, deadline=None)
@given(forms, envs)
def test_to_data_round_trip_means_the_same(form, env):
    pred = parse_predicate(form)
    again = parse_predicate(pred.to_data())
    assert again.holds(env) == pred.holds(env)
    assert again.params() == pred.params()


def test_module_never_calls_eval_exec_or_compile():
    tree = ast.parse(inspect.getsource(predicates_module))
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not called & {"eval", "exec", "compile", "__import__"}
