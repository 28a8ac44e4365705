"""The schema of a platform profile (``patterns/platforms/*.yaml``), as pydantic models.

Every section refuses keys it does not know (``extra="forbid"``), so a typo such as ``op_dtype:``
or ``cost: {latncy: ...}`` is an error instead of a silently ignored key. Dtype names must be
ptosim dtypes (``dtypes.py``), ``op_dtypes`` keys ops whose dtypes the profile rules
(``OP_DTYPE_OPS``), ``cost.lowering`` keys ptosim ops (``OPS``). ``validate_profile`` turns a
``ValidationError`` into a ``PlatformError`` whose ``path`` is the key path of the first problem
and whose ``problems`` lists every ``(key path, message)``; messages name the key and, for an
unknown one, the closest valid spelling.

The cost section's fields carry the cost model's defaults (a2a3's values), written only here: a
key a profile leaves out takes its field's default.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, field_validator

from .dtypes import DataType, dtype_from_name
from .errors import PlatformError
from .schema_keys import dotted, keys_at
from .vocabulary import OPS as _TABLE
from .vocabulary import ops_of

__all__ = [
    "OP_DTYPE_OPS",
    "OPS",
    "ProfileModel",
    "CostSection",
    "validate_profile",
    "validate_cost_section",
    "problems_of",
]

#: The ops whose input dtypes a profile's ``op_dtypes`` rules (each checks them on every call).
OP_DTYPE_OPS: tuple[str, ...] = ops_of(dtype_checked=True)
#: Every op ptosim records; ``cost.lowering`` may name any of them.
OPS: tuple[str, ...] = tuple(_TABLE)

_DTYPE_NAMES = [m.short for m in DataType]


def unknown(kind: str, name: Any, valid: list[str] | tuple[str, ...]) -> str:
    """``unknown <kind> 'x' (did you mean 'y'?); valid: ...`` (the guess ignores case)."""
    folded = {v.lower(): v for v in valid}
    close = difflib.get_close_matches(str(name).lower(), list(folded), n=1)
    guess = f" (did you mean {folded[close[0]]!r}?)" if close else ""
    return f"unknown {kind} {name!r}{guess}; valid: {', '.join(valid)}"


def _dtype(value: Any) -> DataType:
    if isinstance(value, DataType):
        return value
    if not isinstance(value, str):
        raise ValueError(f"a dtype name must be a string, got {value!r}")
    try:
        return dtype_from_name(value)
    except ValueError:
        raise ValueError(unknown("dtype", value, _DTYPE_NAMES)) from None


def _dtype_or_default(value: Any) -> str:
    """A per-dtype table key: ``default`` or a dtype, kept in its short spelling (``INT8``)."""
    if value == "default":
        return value
    try:
        return _dtype(value).short
    except ValueError:
        raise ValueError(unknown("dtype", value, ["default", *_DTYPE_NAMES])) from None


def _name_in(kind: str, valid: tuple[str, ...]) -> PlainValidator:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value not in valid:
            raise ValueError(unknown(kind, value, valid))
        return value

    return PlainValidator(check)


DType = Annotated[DataType, PlainValidator(_dtype)]
DTypeShort = Annotated[str, PlainValidator(lambda v: _dtype(v).short)]
DTypeKey = Annotated[str, PlainValidator(_dtype_or_default)]
RuledOp = Annotated[str, _name_in("op", OP_DTYPE_OPS)]
AnyOp = Annotated[str, _name_in("ptosim op", OPS)]
Positive = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
Count = Annotated[int, Field(ge=0)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _needs_default(table: dict[str, Any]) -> dict[str, Any]:
    if "default" not in table:
        raise ValueError("lacks key 'default' (the value for every dtype not listed)")
    return table


# --- hardware ----------------------------------------------------------------------------------


#: a chip's core count: real ones have tens; the bound keeps a typo (10^30) from sizing arrays
CoreCount = Annotated[int, Field(gt=0, le=1024)]
#: bytes of a buffer: up to 1 TiB (L2 is 192 MiB on A2/A3); beyond it a value is a typo
Bytes = Annotated[int, Field(gt=0, le=1 << 40)]


class Cores(Section):
    aic: CoreCount
    aiv: CoreCount


class Buffers(Section):
    """Bytes per core (L2: whole chip)."""

    L0A: Bytes
    L0B: Bytes
    L0C: Bytes
    L1: Bytes
    UB: Bytes
    L2: Bytes | None = None
    BT: Bytes | None = None


class MemoryRates(Section):
    """Bytes / cycle / core."""

    ddr_read: PositiveFloat | None = None
    ddr_write: PositiveFloat | None = None
    l2_read: PositiveFloat | None = None
    l2_write: PositiveFloat | None = None
    l1_to_l0a: PositiveFloat | None = None
    l1_to_l0b: PositiveFloat | None = None
    ub_to_l2: PositiveFloat | None = None
    ub_to_ddr: PositiveFloat | None = None


class FootprintFactor(Section):
    """n(kind) of the UB footprint rule: UB bytes of one op = tile bytes x n(kind)."""

    unary: Annotated[int, Field(ge=1)]
    binary: Annotated[int, Field(ge=1)]
    reduce: Annotated[int, Field(ge=1)]
    broadcast: Annotated[int, Field(ge=1)]


class VecRules(Section):
    last_axis_align_bytes: Positive
    max_rank: Positive = 4
    footprint_factor: FootprintFactor
    reduce_tile_max_bytes: Positive


class MatmulPair(Section):
    a: DType
    b: DType
    out: Annotated[list[DType], Field(min_length=1)]
    #: dtypes ``extend_params={"bias_tensor": b}`` takes with these operands (none: no bias)
    bias: list[DType] = []


class CubeRules(Section):
    align_bytes: Positive
    capacity_align: dict[DTypeKey, Positive]
    matmul_pairs: list[MatmulPair] = []
    scaled_mm_pairs: list[MatmulPair] = []
    scaled_mm_k_align: Positive = 64

    @field_validator("capacity_align")
    @classmethod
    def capacity_align_has_default(cls, table: dict[str, Any]) -> dict[str, Any]:
        return _needs_default(table)


# --- cost model --------------------------------------------------------------------------------
# Every coefficient's default is written here and nowhere else: a scalar's is a2a3's value (the
# a2a3 profile states each one with its source); a table's is a minimal one (a profile gives its
# own); a profile's ``cost:`` section replaces them key by key.


class Level0(Section):
    default_cycles: Count = 10
    bytes_per_repeat: Positive = 256
    cycles_per_repeat: Count = 2


class Latency(Section):
    freq_trans: Positive = 2000
    gm_read_cycles: Count = 1400
    gm_write_cycles: Count = 300
    ratio_one: dict[DTypeShort, frozenset[str]] = {}
    level1: dict[str, tuple[float, float]] = {
        "COPY_IN": (2.613, 0.00240884), "COPY_OUT": (3.2883, 0.00195),
        "MUL": (1.63706, 0.01419), "CAST": (0.9125, 0.015687),
    }
    level0: Level0 = Level0()


class L2Cache(Section):
    enabled: bool = False  # PyPTO's SIM runs without L2 (mteUseL2Cache = 0)
    size_bytes: Positive = 20 * 1024 * 1024
    line_bytes: Positive = 512
    hit_latency: Count = 50
    miss_extra_latency: Count = 150


class Sched(Section):
    aicpu_count: Positive = 6
    completion_cycles: Count = 240
    resolve_cycles: Count = 390
    scheduler_cycles: Count = 200
    device_task_switch_cycles: Count = 200
    fair_extra_cycles: Count = 40
    task_start_steps: Count = 64


#: a left-out ``vec_subgraph_ub_limit_bytes`` is a2a3's fitted limit scaled by the profile's UB
UB_LIMIT_FIT = (438272, 196608)


class CostSection(Section):
    cycles_per_us: PositiveFloat = 1800.0
    latency: Latency = Latency()
    issue_gap_cycles: Count = 2
    task_tail_cycles: Count = 1
    lowering: dict[AnyOp, tuple[str, ...]] = {}
    vec_subgraph_ub_limit_bytes: Positive | None = None
    vec_merge_min_tasks: Count = 2
    vec_split_min_consumer_n: Count = 1024
    col_reduce_fused_tiles: Count = 3
    l2: L2Cache = L2Cache()
    sched: Sched = Sched()

    def ub_limit(self, ub_bytes: int) -> int:
        """The summed-UB limit of one vector task: the profile's, else the fit scaled by its UB."""
        given = self.vec_subgraph_ub_limit_bytes
        return given if given is not None else ub_bytes * UB_LIMIT_FIT[0] // UB_LIMIT_FIT[1]

    def us(self, cycles: float) -> float:
        return cycles / self.cycles_per_us


# --- the whole profile ---------------------------------------------------------------------------


class ProfileModel(Section):
    name: str
    title: str | None = None
    cores: Cores
    clock_mhz: PositiveFloat
    buffers: Buffers
    fractal: dict[DTypeKey, tuple[Positive, Positive, Positive]]
    memory_rates: MemoryRates | None = None
    features: list[str] = []
    cv_mix: bool = False
    dtypes: list[DType]
    vec_rules: VecRules
    cube_rules: CubeRules
    op_dtypes: dict[RuledOp, list[DType]] = {}
    casts: dict[DType, list[DType]]
    cost: CostSection | None = None

    @field_validator("fractal")
    @classmethod
    def fractal_has_default(cls, table: dict[str, Any]) -> dict[str, Any]:
        return _needs_default(table)


# --- errors --------------------------------------------------------------------------------------


_BOUNDS = {"greater_than": "> {gt}", "greater_than_equal": ">= {ge}", "less_than": "< {lt}",
           "less_than_equal": "<= {le}", "too_short": "a list of at least {min_length}"}
_TYPES = {"int_type": "an int", "int_parsing": "an int", "int_from_float": "an int", "float_type": "a number",
          "float_parsing": "a number", "bool_type": "a bool", "bool_parsing": "a bool", "string_type": "a string",
          "list_type": "a list", "dict_type": "a mapping", "model_type": "a mapping", "tuple_type": "a list"}


def problems_of(exc: ValidationError, root: type[BaseModel]) -> list[tuple[tuple[Any, ...], str]]:
    """``[(key path, message)]`` of every error; a message starts with the dotted key path and
    names the key (and the closest valid spelling of an unknown one)."""
    out: list[tuple[tuple[Any, ...], str]] = []
    for e in exc.errors():
        path = tuple(p for p in e["loc"] if p != "[key]")
        kind, ctx = e["type"], e.get("ctx") or {}
        if kind == "extra_forbidden":
            at, text = path[:-1], unknown("key", path[-1], keys_at(root, path[:-1]))
        elif kind == "missing":
            at, text = path[:-1], f"lacks key {path[-1]!r}"
        elif kind == "value_error":
            at, text = path, str(ctx["error"])
        elif kind in _BOUNDS:
            at, text = path, f"must be {_BOUNDS[kind].format(**ctx)}, got {e['input']!r}"
        elif kind in _TYPES:
            at, text = path, f"must be {_TYPES[kind]}, got {type(e['input']).__name__} {e['input']!r}"
        else:
            at, text = path, f"{e['msg'][0].lower()}{e['msg'][1:]}, got {e['input']!r}"
        out.append((path, f"{dotted(at)}: {text}" if at else text))
    return out


_M = TypeVar("_M", bound=BaseModel)


def _validate(model: type[_M], data: Any, what: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = problems_of(exc, model)
    more = f" (and {len(problems) - 1} more: {'; '.join(m for _p, m in problems[1:])})" if len(problems) > 1 else ""
    raise PlatformError(f"{what}: {problems[0][1]}{more}", path=problems[0][0], problems=problems)


def validate_profile(data: Mapping[str, Any], source: str = "") -> ProfileModel:
    """The profile ``data`` checked against the schema (``PlatformError`` with every problem)."""
    name = data.get("name") if isinstance(data, Mapping) else None
    return _validate(ProfileModel, data, f"platform profile {source or name!r}")


def validate_cost_section(data: Any, name: str = "") -> CostSection:
    """A ``cost:`` section alone (paths relative to it)."""
    return _validate(CostSection, data or {}, f"cost section of platform profile {name!r}")
