"""PyPTO's words as ptosim implements them: every op it records, every dtype, every cast mode.

This is the one table. ``ptosim.__all__`` and its lazy loader, the profile schema's op lists, the
cost lowering's tile opcodes, the dtype storage table and pattern-gen's card vocabulary (its
``OpSpec``, the card dtype and cast-mode Literals) all derive from it. Pure data: importing it
loads neither NumPy nor ml_dtypes, so a tool that only validates names stays fast.

A new op of an existing family is one ``OpInfo`` here, its function in ``module``, and its
platform-profile data (``op_dtypes`` when ``dtype_checked``; ``level1`` for its tile op).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "OpInfo",
    "OPS",
    "DTypeSpec",
    "DTYPES",
    "DTYPE_NAMES",
    "CAST_MODES",
    "ops_of",
]

Unit = Literal["V", "C", "any"]
Footprint = Literal["unary", "elementwise", "reduce"]


@dataclass(frozen=True)
class OpInfo:
    """One op ptosim records (and the cost model prices), as ``pypto.<name>`` spells it."""

    name: str
    #: the ptosim module that defines ``pypto.<name>``
    module: str
    #: the calling convention: ops of a family take the same arguments (card syntax, typing rule
    #: and spelling macro in pattern-gen are per family)
    family: str
    #: V (vector), C (cube) or "any" (moves data: no V/C work of its own)
    unit: Unit
    #: how the UB rule counts its vector tile; None when it uses none
    footprint: Footprint | None
    #: its input dtype must be listed in every platform profile's ``op_dtypes``
    dtype_checked: bool
    #: the tile op PyPTO lowers it to, priced by the profile's ``level1`` (a profile's
    #: ``cost.lowering`` entry, when present, replaces it with a sequence)
    tile_op: str | None = None
    #: the tile op with a scalar second operand (``pypto.add(x, 2.0)`` -> ADDS)
    scalar_tile_op: str | None = None


def _ops(module: str, family: str, unit: Unit, footprint: Footprint | None, dtype_checked: bool,
         names: dict[str, tuple[str | None, str | None]]) -> list[OpInfo]:
    return [OpInfo(n, module, family, unit, footprint, dtype_checked, t, s) for n, (t, s) in names.items()]


OPS: dict[str, OpInfo] = {
    o.name: o
    for o in [
        *_ops("ops", "cast", "V", "unary", False, {"cast": ("CAST", None)}),
        *_ops("ops", "binary", "V", "elementwise", True, {
            "add": ("ADD", "ADDS"), "sub": ("SUB", "SUBS"), "mul": ("MUL", "MULS"), "div": ("DIV", "DIVS"),
            "maximum": ("MAXIMUM", None), "minimum": ("MINIMUM", None),
        }),
        *_ops("ops", "unary", "V", "unary", True, {
            "abs": ("ABS", None), "sqrt": ("SQRT", None),
            "rsqrt": (None, None),  # the profile's lowering: SQRT, VEC_DUP(1.0), DIV
            "exp": ("EXP", None), "neg": ("NEG", None),
            "sigmoid": (None, None),  # the profile's lowering: MULS, EXP, ADDS, VEC_DUP(1.0), DIV
        }),
        *_ops("ops", "reduce", "V", "reduce", True, {"sum": ("ROWSUM_SINGLE", None), "amax": ("ROWMAX_SINGLE", None)}),
        *_ops("ops", "full", "V", "unary", True, {"full": ("VEC_DUP", None)}),
        *_ops("ops", "zeros", "V", "unary", False, {"zeros": ("VEC_DUP", None)}),
        *_ops("comparison", "compare", "V", "elementwise", True, {  # BOOL results; PyPTO's SIM: CMP / CMPS
            n: ("CMP", "CMPS") for n in ("gt", "ge", "eq", "ne", "lt", "le")
        }),
        *_ops("comparison", "where", "V", "elementwise", True, {"where": ("WHERE_TT", None)}),  # a scalar: WHERE_TS/ST/SS
        *_ops("joining", "gather", "V", "elementwise", True, {"gather": ("GATHER_ELEMENT", None)}),
        *_ops("joining", "concat", "any", None, True, {"concat": (None, None)}),  # recorded as one assemble per part
        *_ops("cube", "matmul", "C", None, False, {"matmul": (None, None)}),
        *_ops("cube", "scaled_mm", "C", None, False, {"scaled_mm": (None, None)}),
        *_ops("movement", "view", "any", None, False, {"view": (None, None)}),
        *_ops("movement", "assemble", "any", None, False, {"assemble": (None, None)}),
        *_ops("movement", "reshape", "any", None, False, {"reshape": (None, None)}),
        *_ops("scatter", "scatter", "V", "unary", False, {"scatter_update": (None, None)}),
        *_ops("select", "topk", "V", "unary", True, {"topk": ("TOPK", None)}),  # PyPTO's SIM: see select.topk
    ]
}


def ops_of(*, family: str | None = None, module: str | None = None, dtype_checked: bool | None = None) -> tuple[str, ...]:
    """The names of the ops that match every given attribute, in table order."""
    return tuple(
        o.name for o in OPS.values()
        if (family is None or o.family == family) and (module is None or o.module == module)
        and (dtype_checked is None or o.dtype_checked == dtype_checked)
    )


@dataclass(frozen=True)
class DTypeSpec:
    """One element type: its card spelling (``DataType.DT_<name>``), size, kind and storage type."""

    name: str
    #: PyPTO 0.2.0's ``DataType`` enum code
    code: int
    nbytes: int
    kind: Literal["int", "uint", "float", "bool"]
    #: the NumPy type that stores it, as ``module.attribute`` (ml_dtypes for the narrow floats;
    #: resolved on first use, ml_dtypes costs a second to import)
    storage: str


DTYPES: dict[str, DTypeSpec] = {
    d.name: d
    for d in [
        DTypeSpec("BF16", 8, 2, "float", "ml_dtypes.bfloat16"),
        DTypeSpec("FP16", 6, 2, "float", "numpy.float16"),
        DTypeSpec("FP32", 7, 4, "float", "numpy.float32"),
        DTypeSpec("INT8", 1, 1, "int", "numpy.int8"),
        DTypeSpec("INT16", 2, 2, "int", "numpy.int16"),
        DTypeSpec("INT32", 3, 4, "int", "numpy.int32"),
        DTypeSpec("INT64", 4, 8, "int", "numpy.int64"),
        DTypeSpec("UINT8", 11, 1, "uint", "numpy.uint8"),
        DTypeSpec("FP8E4M3", 18, 1, "float", "ml_dtypes.float8_e4m3fn"),
        DTypeSpec("FP8E5M2", 17, 1, "float", "ml_dtypes.float8_e5m2"),
        DTypeSpec("FP8E8M0", 19, 1, "float", "ml_dtypes.float8_e8m0fnu"),
        DTypeSpec("BOOL", 15, 1, "bool", "numpy.bool_"),
    ]
}
DTYPE_NAMES: tuple[str, ...] = tuple(DTYPES)

#: ``pypto.CastMode`` members, in PyPTO's order (``CAST_NONE`` … ``CAST_ODD``)
CAST_MODES: tuple[str, ...] = ("NONE", "RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD")
