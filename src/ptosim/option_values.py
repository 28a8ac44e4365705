"""Option values PyPTO parses by hand, and the checks pydantic cannot express: ``run_mode``,
``ready_on_host_tensors``, ``sg_set_scope``, ``sg_set_ooo_scope`` and the merge settings
(``vec_nbuffer_setting``, ``cube_l1_reuse_setting``, ``cube_nbuffer_setting``) with their
int / ``func<M>_<O>`` / ``DEFAULT`` / label keys. The option models are in options.py.

A func key is exactly ``func[0-9]+_[0-9]+`` (so ``"Func8_0"`` and ``"func8_x"`` are label keys), a
``(count, side)`` side is case-insensitive with count < 1,000,000 (PyPTO packs ``side * 1e6 +
count`` into one int), and ``sg_set_scope`` takes a tuple or a list.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, NamedTuple

from .errors import OptionError, PtoSimError, warn

__all__ = [
    "INT32_MAX", "L1_REUSE_SIDE_BASE", "L1_SIDES", "DEFAULT_KEY", "FUNC_KEY", "FUNC_LOOKALIKE",
    "RunMode", "SgScope", "MergeValue", "MergeSetting", "parse_merge_setting",
    "option_error", "is_strict_int", "PRE_PARSE", "pre_parse",
]

INT32_MAX = 2**31 - 1
L1_REUSE_SIDE_BASE = 1_000_000  # PyPTO packs (count, side) as side * 1e6 + count
L1_SIDES = ("left", "right", "auto")
DEFAULT_KEY = "DEFAULT"
FUNC_KEY = re.compile(r"func([0-9]+)_([0-9]+)")
# Strings a user most likely meant as a func/DEFAULT key; PyPTO reads them as labels, we warn.
FUNC_LOOKALIKE = re.compile(r"func[0-9]*_[0-9a-z]*|default", re.IGNORECASE)


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


def option_error(code: Literal["option-value", "option-type"], what: str, msg: str) -> OptionError:
    return OptionError(f"{what} {msg}", code=code)


def is_strict_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _merge_value(name: str, key: object, v: object) -> MergeValue:
    what = f"pass option '{name}'[{key!r}]"
    if name == "cube_l1_reuse_setting" and isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise option_error("option-value", what, f"must be (count, side), got a sequence of length {len(v)}")
        count, side = v
        if not is_strict_int(count):
            raise option_error("option-type", what, f"count must be an int, got {type(count).__name__}")
        if not 1 <= count < L1_REUSE_SIDE_BASE:
            raise option_error("option-value", what, f"count must be in 1..{L1_REUSE_SIDE_BASE - 1}, got {count}")
        if not isinstance(side, str) or side.lower() not in L1_SIDES:
            raise option_error("option-value" if isinstance(side, str) else "option-type", what,
                       f"side must be one of {', '.join(L1_SIDES)}; got {side!r}")
        # "auto" packs to the bare count in PyPTO, so (n, "auto") reads back as n.
        return count if side.lower() == "auto" else (count, side.lower())
    if not is_strict_int(v):
        form = "an int or a (count, side) tuple" if name == "cube_l1_reuse_setting" else "an int"
        raise option_error("option-type", what, f"must be {form}, got {type(v).__name__} {v!r}")
    if key == -2:
        if v not in (0, 1):
            raise option_error("option-value", what, f"(multi-in/out merge) must be 0 or 1, got {v}")
        return v
    if not 1 <= v <= INT32_MAX:
        raise option_error("option-value", what, f"must be in 1..{INT32_MAX}, got {v}")
    return v


def parse_merge_setting(name: str, d: object) -> MergeSetting:
    """Read a vec_nbuffer / cube_l1_reuse / cube_nbuffer dict by PyPTO's key rules (digest §2b)."""
    if isinstance(d, MergeSetting):
        return d
    if not isinstance(d, Mapping):
        raise option_error("option-type", f"pass option '{name}'", f"must be a dict, got {type(d).__name__}")
    by_int: dict[int, MergeValue] = {}
    by_func: dict[str, MergeValue] = {}
    by_label: dict[str, MergeValue] = {}
    for key, v in d.items():
        what = f"pass option '{name}' key {key!r}"
        if is_strict_int(key):
            lo = -2 if name == "vec_nbuffer_setting" else -1  # -2 (multi-in/out) is vec only
            if not lo <= key <= INT32_MAX:
                raise option_error("option-value", what, f"is not valid: integer keys must be in {lo}..{INT32_MAX}"
                           " (-1 default group, k >= 0 the group with hashOrder k"
                           + (", -2 multi-in/out merge)" if lo == -2 else ")"))
            by_int[key] = _merge_value(name, key, v)
        elif isinstance(key, str):
            m = FUNC_KEY.fullmatch(key)
            if m or key == DEFAULT_KEY:
                canon = f"func{int(m[1])}_{int(m[2])}" if m else key  # "func08_0" is group func8_0
                by_func[canon] = _merge_value(name, key, v)
            else:
                if FUNC_LOOKALIKE.fullmatch(key):
                    warn(f"pass option '{name}' key {key!r} is read as a semantic label, not as a "
                         "function key (those are spelt exactly func<magic>_<order> or DEFAULT)")
                by_label[key] = _merge_value(name, key, v)
        else:
            raise option_error("option-type", what, "must be an int, 'func<M>_<O>', 'DEFAULT' or a label string")
    if by_int and by_func:
        raise option_error("option-value", f"pass option '{name}'",
                   "cannot mix integer keys with func/DEFAULT keys; use either all integer keys or "
                   f"all func/DEFAULT keys (label keys may sit with either); got keys {list(d)}")
    return MergeSetting(by_int, by_func, by_label)


def _scope_before(v: object) -> SgScope:
    what = "pass option 'sg_set_scope'"
    if isinstance(v, (tuple, list)):
        if len(v) != 3:
            raise option_error("option-value", what, "must be (scope_id, allow_parallel_merge, "
                       f"allow_cross_scope_merge), got length {len(v)}")
        sid, par, cross = v
    else:
        sid, par, cross = v, False, False
    if not is_strict_int(sid):
        raise option_error("option-type", what, f"scope id must be an int, got {type(sid).__name__} {sid!r}")
    if not -1 <= sid <= INT32_MAX:
        raise option_error("option-value", what, f"scope id must be in -1..{INT32_MAX}, got {sid}")
    for flag in (par, cross):
        if not isinstance(flag, bool):
            raise option_error("option-type", what, f"flags must be bool, got {type(flag).__name__} {flag!r}")
    if sid == -1 and (par or cross):
        raise option_error("option-value", what, f"scope id -1 (no scope) needs both flags False, got {tuple(v)}")
    return SgScope(sid, par, cross)


def _run_mode_before(v: object) -> RunMode:
    if not is_strict_int(v):
        raise option_error("option-type", "runtime option 'run_mode'",
                   f"must be RunMode.NPU or RunMode.SIM, got {v!r}")
    if v not in (0, 1):
        raise option_error("option-value", "runtime option 'run_mode'",
                   f"must be RunMode.NPU or RunMode.SIM (0 or 1), got {v}")
    return RunMode(v)


def _names_before(v: object) -> object:
    if isinstance(v, (list, tuple)):  # element types are left to pydantic (strict str)
        return tuple(v)  # stored as a tuple so the options object stays hashable
    raise option_error("option-type", "runtime option 'ready_on_host_tensors'", f"must be a list of str, got {v!r}")


def _ooo_scope_before(v: object) -> int:
    if not is_strict_int(v):
        raise option_error("option-type", "pass option 'sg_set_ooo_scope'",
                   f"must be an int, got {type(v).__name__} {v!r}")
    if v != -1 and not 1 <= v <= 100_000:
        raise option_error("option-value", "pass option 'sg_set_ooo_scope'", f"must be -1 or in 1..100000, got {v}")
    return v


# Fields whose checks are hand-written (tuple forms, enums, dict keys). validate_* runs them before
# pydantic so errors and warnings point at the kernel line, not at a pydantic frame; the models
# run them again (idempotently) so direct construction, e.g. PassOptions(sg_set_scope=3), works.
PRE_PARSE: dict[str, Callable[[object], object]] = {
    "run_mode": _run_mode_before,
    "ready_on_host_tensors": _names_before,
    "sg_set_scope": _scope_before,
    "sg_set_ooo_scope": _ooo_scope_before,
    **{k: functools.partial(parse_merge_setting, k)
       for k in ("vec_nbuffer_setting", "cube_l1_reuse_setting", "cube_nbuffer_setting")},
}


def pre_parse(d: Mapping[str, object]) -> dict[str, object]:
    return {k: PRE_PARSE[k](v) if k in PRE_PARSE else v for k, v in d.items()}
