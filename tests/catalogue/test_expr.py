"""The card expression language (shapes, offsets, scalars): parse, evaluate, render, substitute.

Never ``eval``: the tests check that Python syntax outside the grammar is an ``ExprError`` and that
the module does not call ``eval``/``exec``/``compile``.
"""

from __future__ import annotations

import ast
import inspect
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pattern_gen.vocab import expr as expr_module
from pattern_gen.vocab.expr import (
    BinOp,
    ExprError,
    Name,
    Neg,
    Num,
    evaluate,
    names,
    parse,
    render,
    simplify,
    substitute,
)

ENV = {"K": 4096, "N": 1536, "D": 128, "NH": 64, "T": 10, "tile": 8, "t_off": 16}


# --- parse -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, tree",
    [
        ("K", Name("K")),
        ("32", Num(32)),
        ("1.5", Num(1.5)),
        ("1.0e-6", Num(1e-6)),
        (".5", Num(0.5)),
        ("-1", Neg(Num(1))),
        ("K/32", BinOp("/", Name("K"), Num(32))),
        ("NH*D", BinOp("*", Name("NH"), Name("D"))),
        ("K//2", BinOp("//", Name("K"), Num(2))),
        ("a - b - c", BinOp("-", BinOp("-", Name("a"), Name("b")), Name("c"))),
        ("a + b * c", BinOp("+", Name("a"), BinOp("*", Name("b"), Name("c")))),
        ("(a + b) * c", BinOp("*", BinOp("+", Name("a"), Name("b")), Name("c"))),
        ("  t_off + tile  ", BinOp("+", Name("t_off"), Name("tile"))),
        ("a * -b", BinOp("*", Name("a"), Neg(Name("b")))),
    ],
)
def test_parse(text, tree):
    assert parse(text) == tree


def test_numbers_pass_through():
    assert parse(7) == Num(7)
    assert parse(0.25) == Num(0.25)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "K +",
        "* K",
        "(K",
        "K)",
        "K K",
        "1 2",
        "2**3",  # no power operator
        "K % 2",  # no modulo
        "K.real",  # no attributes
        "f(K)",  # no calls
        "K[0]",  # no indexing
        "__import__('os').system('true')",
        "lambda: 1",
        "None",  # keywords are not names
        "K if T else N",
        "'K'",
        "1_000",
    ],
)
def test_bad_syntax_is_an_expr_error(text):
    with pytest.raises(ExprError):
        parse(text)


def test_bool_is_not_an_expression():
    with pytest.raises(ExprError):
        parse(True)


@pytest.mark.parametrize(
    "text",
    ["(" * 200 + "1" + ")" * 200, "-" * 500 + "1", " + ".join(["K"] * 400), "1" + " * (1" * 100 + ")" * 100],
)
def test_pathological_expressions_are_errors_not_crashes(text):
    """Deep nesting must not reach Python's recursion limit (RecursionError is not an ExprError)."""
    with pytest.raises(ExprError):
        parse(text)


def test_long_but_reasonable_expressions_parse():
    node = parse(" + ".join(["K"] * 40))
    assert evaluate(node, ENV) == 40 * ENV["K"]


# --- evaluate ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value",
    [
        ("K/32", 128),
        ("NH*D", 8192),
        ("1/D", Fraction(1, 128)),
        ("K//3", 4096 // 3),
        ("-(t_off - tile)", -8),
        ("(K + N) / 2", 2816),
        ("1.5 * 2", 3.0),
        ("T - tile", 2),
    ],
)
def test_evaluate(text, value):
    got = evaluate(text, ENV)
    assert got == value
    assert type(got) is type(value)


def test_exact_division_gives_int_or_fraction():
    assert isinstance(evaluate("K/32", ENV), int)
    assert evaluate("1/3", {}) == Fraction(1, 3)
    assert evaluate("2/4", {}) == Fraction(1, 2)


def test_evaluate_unknown_name():
    with pytest.raises(ExprError, match="unknown name 'Q'"):
        evaluate("Q*2", ENV)


@pytest.mark.parametrize("text", ["K/0", "K//0", "K/(D-128)", "1.0/0.0"])
def test_division_by_zero_is_an_expr_error(text):
    with pytest.raises(ExprError, match="division by zero"):
        evaluate(text, ENV)


def test_names():
    assert names(parse("t_off + tile * K / NH")) == {"t_off", "tile", "K", "NH"}
    assert names(parse("3")) == set()


# --- render ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, source",
    [
        ("K/32", "K // 32"),
        ("NH*D", "NH * D"),
        ("a - (b - c)", "a - (b - c)"),
        ("(a - b) - c", "a - b - c"),
        ("(a + b) * c", "(a + b) * c"),
        ("a * (b * c)", "a * (b * c)"),
        ("-(a + b)", "-(a + b)"),
        ("-1", "-1"),
    ],
)
def test_render_shapes(text, source):
    assert render(text) == source


def test_render_scalars_with_float_division():
    assert render("1/D", float_div=True) == "1.0 / D"
    assert render("K/32", float_div=True) == "K / 32"


def test_render_renames():
    assert render("t_off + tile", {"t_off": "bs_offset", "tile": "tile_bs"}) == "bs_offset + tile_bs"


def test_render_fraction_constant():
    assert render(simplify(parse("1/4"))) == "0.25"


ints = st.integers(min_value=1, max_value=50)
leaf = st.one_of(ints.map(Num), st.sampled_from(["a", "b", "c"]).map(Name))
trees = st.recursive(
    leaf,
    lambda sub: st.one_of(
        st.builds(BinOp, st.sampled_from(["+", "-", "*"]), sub, sub),
        st.builds(Neg, sub),
    ),
    max_leaves=12,
)


def _python_value(source: str, env: dict) -> int:
    """What Python makes of the rendered source (walks Python's own AST; no eval)."""
    ops = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__}

    def go(node: ast.AST) -> int:
        if isinstance(node, ast.BinOp):
            return ops[type(node.op)](go(node.left), go(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -go(node.operand)
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.Constant):
            return node.value
        raise AssertionError(f"unexpected Python syntax {ast.dump(node)}")

    return go(ast.parse(source, mode="eval").body)


@settings(max_examples=200, deadline=None)
@given(trees, st.fixed_dictionaries({"a": ints, "b": ints, "c": ints}))
def test_render_round_trips_through_parse(tree, env):
    """``render`` writes Python source that means the same as the tree."""
    source = render(tree)
    assert evaluate(parse(source), env) == evaluate(tree, env)
    assert _python_value(source, env) == evaluate(tree, env)


@settings(max_examples=200, deadline=None)
@given(trees, st.fixed_dictionaries({"a": ints, "b": ints, "c": ints}))
def test_simplify_keeps_the_value(tree, env):
    assert evaluate(simplify(tree), env) == evaluate(tree, env)


# --- substitute --------------------------------------------------------------------------------------------


def test_substitute_callee_dims_by_caller_shapes():
    node = substitute("M*D + 1", {"M": parse("tile"), "D": parse("NH*D")})
    assert node == BinOp("+", BinOp("*", Name("tile"), BinOp("*", Name("NH"), Name("D"))), Num(1))
    assert evaluate(node, ENV) == 8 * 64 * 128 + 1
    assert render(node) == "tile * (NH * D) + 1"


def test_substitute_leaves_other_names():
    assert substitute("K + N", {"K": Num(3)}) == BinOp("+", Num(3), Name("N"))


def test_simplify_folds_constants_and_units():
    assert simplify(parse("1*K")) == Name("K")
    assert simplify(parse("K*1")) == Name("K")
    assert simplify(parse("K+0")) == Name("K")
    assert simplify(parse("2*3")) == Num(6)
    assert simplify(parse("-(2)")) == Num(-2)


# --- no eval -----------------------------------------------------------------------------------------------


def test_module_never_calls_eval_exec_or_compile():
    tree = ast.parse(inspect.getsource(expr_module))
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__"}
