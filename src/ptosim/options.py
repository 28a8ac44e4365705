"""PyPTO runtime and pass options: typed, validated, scoped.

Keys, defaults, ranges and strict types (an int is no bool and a bool no int, as in PyPTO's C++
config manager) follow the digest ``pypto-api.md`` §0-§2. Where it is silent we follow pypto's
``config.py``: a func key is exactly ``func[0-9]+_[0-9]+`` (so ``"Func8_0"`` and ``"func8_x"``
are label keys), a ``(count, side)`` side is case-insensitive with count < 1,000,000 (PyPTO packs
``side * 1e6 + count`` into one int), and ``sg_set_scope`` takes a tuple or a list.
"""

from __future__ import annotations

import difflib
import enum
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Literal, NamedTuple

from annotated_types import Ge, Le
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import OptionError, PtoSimError, warn

__all__ = [
    "RunMode", "SgScope", "MergeSetting", "RuntimeOptions", "PassOptions", "MergedOptions",
    "OptionScope", "RUNTIME_KEYS", "PASS_KEYS", "SET_OPTIONS_PASS_KEYS", "CV_MIX_ONLY",
    "parse_merge_setting", "validate_runtime_options", "validate_pass_options", "no_effect_warnings",
]

INT32_MAX = 2**31 - 1
_L1_REUSE_SIDE_BASE = 1_000_000  # PyPTO packs (count, side) as side * 1e6 + count
L1_SIDES = ("left", "right", "auto")
DEFAULT_KEY = "DEFAULT"
_FUNC_KEY = re.compile(r"func([0-9]+)_([0-9]+)")
# Strings a user most likely meant as a func/DEFAULT key; PyPTO reads them as labels, we warn.
_FUNC_LOOKALIKE = re.compile(r"func[0-9]*_[0-9a-z]*|default", re.IGNORECASE)


class RunMode(enum.IntEnum):
    """Where a kernel runs: on the device or in PyPTO's CPU simulator / cost model."""

    NPU = 0
    SIM = 1


class SgScope(NamedTuple):
    """``sg_set_scope`` as ``(scope_id, allow_parallel_merge, allow_cross_scope_merge)``."""

    scope_id: int
    allow_parallel_merge: bool = False
    allow_cross_scope_merge: bool = False


MergeValue = int | tuple[int, str]  # tuple only in cube_l1_reuse_setting: (count, "left"|"right")


def _count(v: MergeValue) -> int:
    return v[0] if isinstance(v, tuple) else v


@dataclass(frozen=True)
class MergeSetting:
    """A parsed merge setting, split like PyPTO's C++ binding into int, func and label maps."""

    by_int: Mapping[int, MergeValue] = field(default_factory=dict)
    by_func: Mapping[str, MergeValue] = field(default_factory=dict)
    by_label: Mapping[str, MergeValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("by_int", "by_func", "by_label"):  # read-only views keep the object frozen
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def __hash__(self) -> int:  # mappingproxy is not hashable; the options objects must be
        return hash(tuple(frozenset(m.items()) for m in (self.by_int, self.by_func, self.by_label)))

    @property
    def multi_in_out(self) -> int | None:
        """vec_nbuffer ``-2`` key: 0 = auto multi-input/output merge, 1 = manual; None = unset."""
        return self.by_int.get(-2)  # type: ignore[return-value]

    def lookup(self, hash_order: int, labels: Iterable[str] = (),
               func_key: str | None = None) -> MergeValue | None:
        """The raw value for one isomorphic group (or, for L1 reuse, one subgraph); None = auto.

        Label keys win over everything (they replace the group's granularity; the largest count
        wins when several hit), then the exact func key, DEFAULT, the group's int key, then -1.
        """
        if isinstance(hash_order, bool) or not isinstance(hash_order, int) or hash_order < 0:
            raise PtoSimError(f"hash_order must be an int >= 0, got {hash_order!r}", code="argument")
        hits = [self.by_label[lb] for lb in labels if lb in self.by_label]
        if hits:
            return max(hits, key=_count)
        if func_key is not None and func_key in self.by_func:
            return self.by_func[func_key]
        for table, key in ((self.by_func, DEFAULT_KEY), (self.by_int, hash_order), (self.by_int, -1)):
            if key in table:
                return table[key]  # type: ignore[index]
        return None

    def granularity(self, hash_order: int, labels: Iterable[str] = (),
                    func_key: str | None = None) -> int | None:
        """Merge count N for the group (1 = no merge); None means PyPTO picks it (auto)."""
        v = self.lookup(hash_order, labels, func_key)
        return None if v is None else _count(v)


def _err(code: Literal["option-value", "option-type"], what: str, msg: str) -> OptionError:
    return OptionError(f"{what} {msg}", code=code)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _merge_value(name: str, key: object, v: object) -> MergeValue:
    what = f"pass option '{name}'[{key!r}]"
    if name == "cube_l1_reuse_setting" and isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise _err("option-value", what, f"must be (count, side), got a sequence of length {len(v)}")
        count, side = v
        if not _is_int(count):
            raise _err("option-type", what, f"count must be an int, got {type(count).__name__}")
        if not 1 <= count < _L1_REUSE_SIDE_BASE:
            raise _err("option-value", what, f"count must be in 1..{_L1_REUSE_SIDE_BASE - 1}, got {count}")
        if not isinstance(side, str) or side.lower() not in L1_SIDES:
            raise _err("option-value" if isinstance(side, str) else "option-type", what,
                       f"side must be one of {', '.join(L1_SIDES)}; got {side!r}")
        # "auto" packs to the bare count in PyPTO, so (n, "auto") reads back as n.
        return count if side.lower() == "auto" else (count, side.lower())
    if not _is_int(v):
        form = "an int or a (count, side) tuple" if name == "cube_l1_reuse_setting" else "an int"
        raise _err("option-type", what, f"must be {form}, got {type(v).__name__} {v!r}")
    if key == -2:
        if v not in (0, 1):
            raise _err("option-value", what, f"(multi-in/out merge) must be 0 or 1, got {v}")
        return v
    if not 1 <= v <= INT32_MAX:
        raise _err("option-value", what, f"must be in 1..{INT32_MAX}, got {v}")
    return v


def parse_merge_setting(name: str, d: object) -> MergeSetting:
    """Read a vec_nbuffer / cube_l1_reuse / cube_nbuffer dict by PyPTO's key rules (digest §2b)."""
    if isinstance(d, MergeSetting):
        return d
    if not isinstance(d, Mapping):
        raise _err("option-type", f"pass option '{name}'", f"must be a dict, got {type(d).__name__}")
    by_int: dict[int, MergeValue] = {}
    by_func: dict[str, MergeValue] = {}
    by_label: dict[str, MergeValue] = {}
    for key, v in d.items():
        what = f"pass option '{name}' key {key!r}"
        if _is_int(key):
            lo = -2 if name == "vec_nbuffer_setting" else -1  # -2 (multi-in/out) is vec only
            if not lo <= key <= INT32_MAX:
                raise _err("option-value", what, f"is not valid: integer keys must be in {lo}..{INT32_MAX}"
                           " (-1 default group, k >= 0 the group with hashOrder k"
                           + (", -2 multi-in/out merge)" if lo == -2 else ")"))
            by_int[key] = _merge_value(name, key, v)
        elif isinstance(key, str):
            m = _FUNC_KEY.fullmatch(key)
            if m or key == DEFAULT_KEY:
                canon = f"func{int(m[1])}_{int(m[2])}" if m else key  # "func08_0" is group func8_0
                by_func[canon] = _merge_value(name, key, v)
            else:
                if _FUNC_LOOKALIKE.fullmatch(key):
                    warn(f"pass option '{name}' key {key!r} is read as a semantic label, not as a "
                         "function key (those are spelt exactly func<magic>_<order> or DEFAULT)")
                by_label[key] = _merge_value(name, key, v)
        else:
            raise _err("option-type", what, "must be an int, 'func<M>_<O>', 'DEFAULT' or a label string")
    if by_int and by_func:
        raise _err("option-value", f"pass option '{name}'",
                   "cannot mix integer keys with func/DEFAULT keys; use either all integer keys or "
                   f"all func/DEFAULT keys (label keys may sit with either); got keys {list(d)}")
    return MergeSetting(by_int, by_func, by_label)


def _scope_before(v: object) -> SgScope:
    what = "pass option 'sg_set_scope'"
    if isinstance(v, (tuple, list)):
        if len(v) != 3:
            raise _err("option-value", what, "must be (scope_id, allow_parallel_merge, "
                       f"allow_cross_scope_merge), got length {len(v)}")
        sid, par, cross = v
    else:
        sid, par, cross = v, False, False
    if not _is_int(sid):
        raise _err("option-type", what, f"scope id must be an int, got {type(sid).__name__} {sid!r}")
    if not -1 <= sid <= INT32_MAX:
        raise _err("option-value", what, f"scope id must be in -1..{INT32_MAX}, got {sid}")
    for flag in (par, cross):
        if not isinstance(flag, bool):
            raise _err("option-type", what, f"flags must be bool, got {type(flag).__name__} {flag!r}")
    if sid == -1 and (par or cross):
        raise _err("option-value", what, f"scope id -1 (no scope) needs both flags False, got {tuple(v)}")
    return SgScope(sid, par, cross)


def _run_mode_before(v: object) -> RunMode:
    if not _is_int(v):
        raise _err("option-type", "runtime option 'run_mode'",
                   f"must be RunMode.NPU or RunMode.SIM, got {v!r}")
    if v not in (0, 1):
        raise _err("option-value", "runtime option 'run_mode'",
                   f"must be RunMode.NPU or RunMode.SIM (0 or 1), got {v}")
    return RunMode(v)


def _names_before(v: object) -> object:
    if isinstance(v, (list, tuple)):  # element types are left to pydantic (strict str)
        return tuple(v)  # stored as a tuple so the options object stays hashable
    raise _err("option-type", "runtime option 'ready_on_host_tensors'", f"must be a list of str, got {v!r}")


def _ooo_scope_before(v: object) -> int:
    if not _is_int(v):
        raise _err("option-type", "pass option 'sg_set_ooo_scope'",
                   f"must be an int, got {type(v).__name__} {v!r}")
    if v != -1 and not 1 <= v <= 100_000:
        raise _err("option-value", "pass option 'sg_set_ooo_scope'", f"must be -1 or in 1..100000, got {v}")
    return v


# Fields whose checks are hand-written (tuple forms, enums, dict keys). validate_* runs them before
# pydantic so errors and warnings point at the kernel line, not at a pydantic frame; the models
# run them again (idempotently) so direct construction, e.g. PassOptions(sg_set_scope=3), works.
_PRE_PARSE: dict[str, Callable[[object], object]] = {
    "run_mode": _run_mode_before,
    "ready_on_host_tensors": _names_before,
    "sg_set_scope": _scope_before,
    "sg_set_ooo_scope": _ooo_scope_before,
    **{k: functools.partial(parse_merge_setting, k)
       for k in ("vec_nbuffer_setting", "cube_l1_reuse_setting", "cube_nbuffer_setting")},
}


def _pre_parse(d: Mapping[str, object]) -> dict[str, object]:
    return {k: _PRE_PARSE[k](v) if k in _PRE_PARSE else v for k, v in d.items()}


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, arbitrary_types_allowed=True,
                              use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _hand_checks(cls, data: Any) -> Any:
        return _pre_parse(data) if isinstance(data, Mapping) else data


class RuntimeOptions(_Options):
    """The 9 keys of jit ``runtime_options`` / ``set_options(runtime_options=)``."""

    device_sched_mode: Annotated[int, Field(ge=0, le=3)] = 0
    """Default 0. AICPU dispatch: 0 shared FIFO, 1 L2 affinity, 2 fair across cores, 3 both."""
    stitch_function_max_num: Annotated[int, Field(ge=1, le=1024)] = 128
    """Default 128. Root functions (loop-body instances) stitched into one DeviceTask."""
    max_workspace_kb: Annotated[int, Field(ge=0, le=INT32_MAX)] = 0
    """Default 0 (off). DeviceTask workspace budget in KB; when set it drives stitch depth."""
    run_mode: RunMode = RunMode.SIM
    """Default SIM here (PyPTO: NPU when CANN is installed, else SIM). NPU=0 device, SIM=1 simulator."""
    valid_shape_optimize: Annotated[int, Field(ge=0, le=1)] = 0
    """Default 0. 1 = compile full main blocks statically and only the tail dynamically."""
    ready_on_host_tensors: tuple[str, ...] = ()
    """Default []. Input tensor names whose values are ready on the host (early control flow)."""
    device_sched_parallelism: Annotated[int, Field(ge=1, le=8)] = 1
    """Default 1. Parallelism of ``loop(..., parallel=True)`` iterations."""
    launch_sched_aicpu_num: Annotated[int, Field(ge=1, le=7)] = 7
    """Default 7. Schedule AICPU threads (at most 5 usable on A2/A3, 7 on 950)."""
    launch_early_mode: Annotated[int, Field(ge=0, le=2)] = 0
    """Default 0 (A2/A3; 2 on 950). AICPU early launch: 0 capture mode only, 1 always, 2 never."""


class PassOptions(_Options):
    """The 9 keys of ``set_pass_options`` / jit ``pass_options``, plus the ``pass.*`` keys that only
    ``set_options(pass_options=)`` / ``options(...)`` can set (digest §2c)."""

    vec_nbuffer_setting: MergeSetting = MergeSetting()
    """Default {} (auto). Merge N isomorphic vector (AIV) subgraphs into one task."""
    cube_l1_reuse_setting: MergeSetting = MergeSetting()
    """Default {} (auto). Merge cube subgraphs loading the same GM block into L1; (count, side) allowed."""
    cube_nbuffer_setting: MergeSetting = MergeSetting({-1: 1})
    """Default {-1: 1} (no merge). Merge N isomorphic cube (AIC) subgraphs; {} = auto."""
    sg_set_scope: SgScope = SgScope(-1)
    """Default (-1, False, False). Ops sharing a scope id >= 0 are forced into one subgraph."""
    sg_set_ooo_scope: int = -1
    """Default -1. Out-of-order scheduling task group inside a MIX subgraph (CV-mix only)."""
    ooo_sched_mode: Literal["", "GAPMIN", "HLF"] = ""
    """Default "". OoO scheduler: "" GapMin + local search, "GAPMIN" baseline, "HLF" (CV-mix only)."""
    auto_mix_partition: Annotated[int, Field(ge=0, le=1)] = 0
    """Default 0. 1 = fuse neighbouring cube and vector subgraphs into MIX subgraphs (CV-mix only)."""
    sg_set_tunevf_mode: Annotated[int, Field(ge=0, le=2)] = 0
    """Default 0. VF tuning: 0 balanced, 1 keep OoO order, 2 maximise vector fusion (CV-mix only)."""
    enable_slice: bool = False
    """Default False. Slice-related processing."""
    # --- reachable only through set_options(pass_options=...) / options(...) ---
    pg_parallel_lower_bound: Annotated[int, Field(ge=0, le=INT32_MAX)] = 20
    """Default 20. Minimum count of same-structure subgraphs before they are merged."""
    pg_lower_bound: Annotated[int, Field(ge=0, le=INT32_MAX)] = 512
    """Default 512. Subgraphs smaller than this try to merge."""
    pg_partition_algorithm: Literal["Iso", "OspSarkar", "OspBsp"] = "Iso"
    """Default "Iso". Partitioner: isomorphism-based, critical-path reduction, or BSP."""
    mg_copyin_upper_bound: Annotated[int, Field(ge=0, le=INT32_MAX)] = 104_857_600
    """Default 100 MiB. Merging stops once a subgraph's copy-in bytes exceed this."""
    mg_vec_parallel_lb: Annotated[int, Field(ge=1, le=48)] = 48
    """Default 48. Vector parallelism that auto vec merging keeps busy."""
    copyout_resolve_coalescing: Annotated[int, Field(ge=0, le=1_000_000)] = 0
    """Default 0. Non-zero coalesces scattered copy-outs."""
    ooo_sort_mode_aic: str = ""
    """Default "" (PriorDFS). OoO sort mode of cube cores (other values are not published)."""
    ooo_sort_mode_aiv: str = ""
    """Default "" (PriorDFS). OoO sort mode of vector cores (other values are not published)."""


RUNTIME_KEYS: tuple[str, ...] = tuple(RuntimeOptions.model_fields)
PASS_KEYS: tuple[str, ...] = tuple(PassOptions.model_fields)[:9]  # the set_pass_options keywords
SET_OPTIONS_PASS_KEYS: tuple[str, ...] = tuple(PassOptions.model_fields)
LEGACY_PASS_KEYS = {"pg_upper_bound": "the subgraph-size upper bound, now computed by PyPTO itself"}
CV_MIX_ONLY = frozenset({"sg_set_ooo_scope", "ooo_sched_mode", "auto_mix_partition", "sg_set_tunevf_mode"})


def _check_keys(d: Mapping[str, object], valid: Iterable[str], kind: str, hint: str = "") -> None:
    valid = list(valid)
    for key in d:
        if key not in valid:
            close = difflib.get_close_matches(str(key), valid, n=1)
            guess = f" (did you mean {close[0]!r}?)" if close else ""
            raise OptionError(f"unknown {kind} {key!r}{guess}{hint}. Valid keys: {', '.join(valid)}",
                              code="unknown-option")


_TYPE_WORDS = {"int_type": "an int", "bool_type": "a bool", "string_type": "a str", "literal_error": "a str"}


def _build(model: type[BaseModel], d: Mapping[str, object], kind: str) -> Any:
    d = _pre_parse(d)
    try:
        return model(**d)
    except ValidationError as exc:
        e = exc.errors()[0]
        key, value = str(e["loc"][0]), e["input"]
        what = f"{kind} {key!r}" + "".join(f"[{i!r}]" for i in e["loc"][1:])
        if e["type"] in ("greater_than_equal", "less_than_equal"):
            meta = model.model_fields[key].metadata
            lo = next(m.ge for m in meta if isinstance(m, Ge))
            hi = next(m.le for m in meta if isinstance(m, Le))
            raise _err("option-value", what, f"must be in {lo}..{hi}, got {value!r}") from None
        if e["type"] == "literal_error" and isinstance(value, str):
            expected = e["ctx"]["expected"]
            raise _err("option-value", what, f"must be one of {expected}; got {value!r}") from None
        expected = _TYPE_WORDS.get(e["type"], e["msg"])  # strict: True is no int, 1 is no bool
        raise _err("option-type", what, f"must be {expected}, got {type(value).__name__} {value!r}") from None


def validate_runtime_options(d: Mapping[str, object]) -> RuntimeOptions:
    """Check a ``runtime_options`` dict; unset keys take PyPTO's defaults."""
    _check_keys(d, RUNTIME_KEYS, "runtime option")
    return _build(RuntimeOptions, d, "runtime option")


def validate_pass_options(d: Mapping[str, object], *,
                          source: Literal["jit", "set_pass_options", "set_options"]) -> PassOptions:
    """Check a pass-options dict as PyPTO does for ``source``.

    jit ``pass_options`` is forwarded to ``set_pass_options(**d)``, so only its 9 keywords exist
    there; ``set_options(pass_options=)`` reaches every ``pass.*`` key, and there the removed
    ``pg_upper_bound`` is accepted, ignored and warned about.
    """
    d = dict(d)
    if source == "set_options":
        _check_keys(d, [*SET_OPTIONS_PASS_KEYS, *LEGACY_PASS_KEYS], "pass option")
        for key, why in LEGACY_PASS_KEYS.items():
            if key in d:
                d.pop(key)
                warn(f"pass option {key!r} ({why}) was removed upstream; ptosim accepts and ignores it")
    else:
        extra = [k for k in d if k in SET_OPTIONS_PASS_KEYS or k in LEGACY_PASS_KEYS]
        hint = ""
        if extra:
            k = extra[0]
            hint = (f"; {k!r} was removed upstream" if k in LEGACY_PASS_KEYS else
                    f"; {k!r} can be set only through set_options(pass_options=...) or options(...)")
        _check_keys(d, PASS_KEYS, f"{source} pass option", hint)
    return _build(PassOptions, d, "pass option")


def no_effect_warnings(pass_options: PassOptions, *, cv_mix: bool, platform: str = "a2a3") -> list[str]:
    """One message per CV-mix-only option set to a non-default value on a platform without CV-mix cores."""
    if cv_mix:
        return []
    fields = PassOptions.model_fields
    return [f"pass option {key!r}={getattr(pass_options, key)!r} has no effect on {platform} "
            "(no CV-mix cores)"
            for key in sorted(CV_MIX_ONLY) if getattr(pass_options, key) != fields[key].default]


ScopeKind = Literal["root", "jit", "loop", "options"]


@dataclass
class _Frame:
    kind: ScopeKind
    name: str
    runtime: dict[str, object] = field(default_factory=dict)  # only the keys set in this scope
    pass_: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class MergedOptions:
    """The options in force in one scope: everything set there or inherited from outer scopes."""

    kind: ScopeKind
    name: str
    runtime: RuntimeOptions
    pass_options: PassOptions


class OptionScope:
    """A stack of option scopes (jit body, ``loop``, ``options(...)``), one per kernel call.

    As in PyPTO, a value set in a scope holds only until that scope ends, and a scope inherits
    every value it does not set from its enclosing scopes.
    """

    def __init__(self) -> None:
        self._stack: list[_Frame] = [_Frame("root", "")]
        self._scope_flags: dict[int, tuple[bool, bool]] = {}  # sg_set_scope id -> its flags

    @property
    def depth(self) -> int:
        """Number of open scopes above the root."""
        return len(self._stack) - 1

    def push(self, kind: ScopeKind, name: str = "") -> None:
        self._stack.append(_Frame(kind, name))

    def pop(self) -> MergedOptions:
        """Close the innermost scope and return what was in force inside it."""
        if len(self._stack) == 1:
            raise PtoSimError("no option scope left to close (push/pop mismatch)", code="argument")
        merged = self.current()
        self._stack.pop()
        return merged

    def set_runtime(self, d: Mapping[str, object]) -> RuntimeOptions:
        """Validate ``d`` and record its keys in the innermost scope."""
        opts = validate_runtime_options(d)
        self._stack[-1].runtime.update({k: getattr(opts, k) for k in d})
        return opts

    def set_pass(self, d: Mapping[str, object], *,
                 source: Literal["jit", "set_pass_options", "set_options"]) -> PassOptions:
        """Validate ``d`` as ``source`` would and record its keys in the innermost scope."""
        opts = validate_pass_options(d, source=source)
        sid, *flags = opts.sg_set_scope
        if "sg_set_scope" in d and sid != -1:  # every op of one scope id must use the same flags
            known = self._scope_flags.setdefault(sid, (flags[0], flags[1]))
            if known != tuple(flags):
                raise OptionError(f"pass option 'sg_set_scope' id {sid} was set with flags {known}, now with "
                                  f"{tuple(flags)}; all ops sharing a scope id must use the same flags",
                                  code="option-value")
        self._stack[-1].pass_.update({k: getattr(opts, k) for k in d if k in PassOptions.model_fields})
        return opts

    def current(self) -> MergedOptions:
        runtime: dict[str, object] = {}
        pass_: dict[str, object] = {}
        for frame in self._stack:  # outer to inner: inner values override
            runtime.update(frame.runtime)
            pass_.update(frame.pass_)
        top = self._stack[-1]
        # Values were validated when set, so copying them in without re-validation is safe.
        return MergedOptions(top.kind, top.name, RuntimeOptions().model_copy(update=runtime),
                             PassOptions().model_copy(update=pass_))
