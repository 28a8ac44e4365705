"""A tiny arithmetic language for shapes, offsets and scalars in cards: no ``eval``, ever.

Grammar: integers, decimals (``1.0e-6``), names (dims such as ``K``, parameters, the loop names
``tile`` and ``t_off``), ``+ - * /``, ``//``, parentheses and unary minus. ``/`` is exact
division (a Fraction), ``//`` floor division. ``evaluate`` needs every name bound to a number;
``render`` writes the expression back as Python source for the kernel, keeping names symbolic.
"""

from __future__ import annotations

import functools
import keyword
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Mapping, Union

__all__ = ["Expr", "Num", "Name", "BinOp", "Neg", "parse", "evaluate", "render", "names", "substitute", "simplify", "ExprError"]

Number = Union[int, Fraction, float]


class ExprError(ValueError):
    pass


@dataclass(frozen=True)
class Num:
    value: Number


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class BinOp:
    op: str
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Neg:
    operand: "Expr"


Expr = Union[Num, Name, BinOp, Neg]

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+(?:[eE][-+]?\d+)?|\d+)"
    r"|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<op>//|[-+*/()]))"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExprError(f"unexpected character {text[pos:].strip()[:1]!r} in {text!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


#: card expressions are a few tokens long; the limits keep every recursive walk far from Python's
#: recursion limit (a pathological card is an error, not a crash)
MAX_TOKENS = 256
MAX_DEPTH = 64


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        if len(self.toks) > MAX_TOKENS:
            raise ExprError(f"expression of {len(self.toks)} tokens is too long (at most {MAX_TOKENS})")
        self.i = 0
        self.nesting = 0

    def nest(self) -> None:
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise ExprError(f"expression {self.text[:40]!r}… is nested too deeply (at most {MAX_DEPTH} levels)")

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok is None:
            raise ExprError(f"expression {self.text!r} ends too early")
        self.i += 1
        return tok

    def expr(self) -> Expr:
        node = self.term()
        while (tok := self.peek()) and tok[1] in ("+", "-"):
            self.take()
            node = BinOp(tok[1], node, self.term())
        return node

    def term(self) -> Expr:
        node = self.unary()
        while (tok := self.peek()) and tok[1] in ("*", "/", "//"):
            self.take()
            node = BinOp(tok[1], node, self.unary())
        return node

    def unary(self) -> Expr:
        tok = self.peek()
        if tok and tok[1] == "-":
            self.take()
            self.nest()
            node = Neg(self.unary())
            self.nesting -= 1
            return node
        return self.atom()

    def atom(self) -> Expr:
        kind, text = self.take()
        if kind == "num":
            return Num(int(text) if text.isdigit() else float(text))
        if kind == "name":
            if keyword.iskeyword(text):
                raise ExprError(f"{text!r} is a Python keyword, not a name, in {self.text!r}")
            return Name(text)
        if text == "(":
            self.nest()
            node = self.expr()
            if self.take()[1] != ")":
                raise ExprError(f"missing ')' in {self.text!r}")
            self.nesting -= 1
            return node
        raise ExprError(f"unexpected {text!r} in {self.text!r}")


def parse(text: str | int | float) -> Expr:
    """Parse an expression (ints and floats pass straight through)."""
    if isinstance(text, bool):
        raise ExprError(f"a bool is not an expression: {text!r}")
    if isinstance(text, (int, float)):
        return Num(text)
    return _parse_text(str(text))


@functools.lru_cache(maxsize=8192)
def _parse_text(text: str) -> Expr:
    """Trees are immutable, and the catalogue checks parse the same few hundred strings ~10^5 times."""
    parser = _Parser(text)
    node = parser.expr()
    if parser.peek() is not None:
        raise ExprError(f"unexpected {parser.peek()[1]!r} in {text!r}")  # type: ignore[index]
    if _depth(node) > MAX_DEPTH:
        raise ExprError(f"expression {str(text)[:40]!r}… is nested too deeply (at most {MAX_DEPTH} levels)")
    return node


def _depth(node: Expr) -> int:
    """Height of the tree, without recursion."""
    best, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        best = max(best, d)
        if isinstance(n, BinOp):
            stack.extend(((n.left, d + 1), (n.right, d + 1)))
        elif isinstance(n, Neg):
            stack.append((n.operand, d + 1))
    return best


def names(node: Expr) -> set[str]:
    if isinstance(node, Name):
        return {node.name}
    if isinstance(node, BinOp):
        return names(node.left) | names(node.right)
    if isinstance(node, Neg):
        return names(node.operand)
    return set()


_OPS: dict[str, Callable[[Number, Number], Number]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: Fraction(a) / Fraction(b) if not isinstance(a, float) and not isinstance(b, float) else a / b,
    "//": lambda a, b: a // b,
}


def evaluate(node: Expr | str | int | float, env: Mapping[str, Number]) -> Number:
    """Value of an expression; ints stay ints, exact ratios come back as Fractions."""
    if not isinstance(node, (Num, Name, BinOp, Neg)):
        node = parse(node)
    if isinstance(node, Num):
        return node.value
    if isinstance(node, Name):
        if node.name not in env:
            raise ExprError(f"unknown name {node.name!r}")
        return env[node.name]
    if isinstance(node, Neg):
        return -evaluate(node.operand, env)
    right = evaluate(node.right, env)
    if node.op in ("/", "//") and right == 0:
        raise ExprError("division by zero")
    value = _OPS[node.op](evaluate(node.left, env), right)
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value


_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "//": 2}


def render(node: Expr | str | int | float, env: Mapping[str, str] | None = None, *, float_div: bool = False) -> str:
    """Python source for the expression; names are renamed through ``env`` where given.

    ``float_div`` renders ``/`` as float division (scalars); otherwise ``/`` must divide exactly
    and is rendered ``//`` so that shapes stay ints.
    """
    if not isinstance(node, (Num, Name, BinOp, Neg)):
        node = parse(node)
    env = env or {}

    def go(n: Expr, parent: int) -> str:
        if isinstance(n, Num):
            v = n.value
            return repr(float(v)) if isinstance(v, Fraction) else repr(v)
        if isinstance(n, Name):
            return env.get(n.name, n.name)
        if isinstance(n, Neg):
            return "-" + go(n.operand, 3)
        op = n.op
        if op == "/" and float_div:
            left = go(n.left, _PREC[op])
            text = f"{left if '.' in left or not left.isdigit() else left + '.0'} / {go(n.right, _PREC[op] + 1)}"
        else:
            text = f"{go(n.left, _PREC[op])} {'//' if op == '/' else op} {go(n.right, _PREC[op] + 1)}"
        return f"({text})" if _PREC[op] < parent else text

    return go(node, 0)


def substitute(node: Expr | str | int | float, mapping: Mapping[str, Expr]) -> Expr:
    """Replace names by expressions (a callee's dims by the caller's shapes)."""
    if not isinstance(node, (Num, Name, BinOp, Neg)):
        node = parse(node)
    if isinstance(node, Name):
        return mapping.get(node.name, node)
    if isinstance(node, BinOp):
        return BinOp(node.op, substitute(node.left, mapping), substitute(node.right, mapping))
    if isinstance(node, Neg):
        return Neg(substitute(node.operand, mapping))
    return node


def simplify(node: Expr) -> Expr:
    """Fold constant sub-expressions (so ``1*K`` compares equal to ``K``)."""
    if isinstance(node, BinOp):
        left, right = simplify(node.left), simplify(node.right)
        if isinstance(left, Num) and isinstance(right, Num):
            try:
                return Num(evaluate(BinOp(node.op, left, right), {}))
            except ExprError:
                pass
        if node.op == "*" and isinstance(left, Num) and left.value == 1:
            return right
        if node.op in ("*", "/", "//") and isinstance(right, Num) and right.value == 1:
            return left
        if node.op in ("+", "-") and isinstance(right, Num) and right.value == 0:
            return left
        return BinOp(node.op, left, right)
    if isinstance(node, Neg):
        inner = simplify(node.operand)
        return Num(-inner.value) if isinstance(inner, Num) else Neg(inner)
    return node
