"""PyPTO runtime and pass options: typed, validated, scoped.

Keys, defaults, ranges and strict types (an int is no bool and a bool no int, as in PyPTO's C++
config manager) follow the digest ``pypto-api.md`` §0-§2; where it is silent we follow pypto's
``config.py``. The values PyPTO parses by hand (merge settings, ``sg_set_scope``, ``run_mode``...)
are in option_values.py and re-exported here.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import OptionError, PtoSimError, warn
from .option_values import (
    INT32_MAX,
    MergeSetting,
    RunMode,
    SgScope,
    option_error,
    parse_merge_setting,
    pre_parse,
)

__all__ = [
    "RunMode", "SgScope", "MergeSetting", "RuntimeOptions", "PassOptions", "MergedOptions",
    "OptionScope", "RUNTIME_KEYS", "PASS_KEYS", "SET_OPTIONS_PASS_KEYS", "CV_MIX_ONLY",
    "parse_merge_setting", "validate_runtime_options", "validate_pass_options", "no_effect_warnings",
]

class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, arbitrary_types_allowed=True,
                              use_attribute_docstrings=True)

    @model_validator(mode="before")
    @classmethod
    def _hand_checks(cls, data: Any) -> Any:
        return pre_parse(data) if isinstance(data, Mapping) else data


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
    d = pre_parse(d)
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
            raise option_error("option-value", what, f"must be in {lo}..{hi}, got {value!r}") from None
        if e["type"] == "literal_error" and isinstance(value, str):
            expected = e["ctx"]["expected"]
            raise option_error("option-value", what, f"must be one of {expected}; got {value!r}") from None
        expected = _TYPE_WORDS.get(e["type"], e["msg"])  # strict: True is no int, 1 is no bool
        raise option_error("option-type", what, f"must be {expected}, got {type(value).__name__} {value!r}") from None


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
