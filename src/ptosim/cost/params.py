"""The cost model's coefficients, read from the ``cost:`` section of a platform profile.

Every number lives in ``patterns/platforms/<name>.yaml`` (with a comment citing where it comes
from); the defaults below only fill keys a profile leaves out and equal the a2a3 values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..platform import Profile

__all__ = ["CostParams"]

_DEFAULT_LEVEL1: dict[str, tuple[float, float]] = {
    "COPY_IN": (2.613, 0.00240884),
    "COPY_OUT": (3.2883, 0.00195),
    "MUL": (1.63706, 0.01419),
    "CAST": (0.9125, 0.015687),
}


@dataclass(frozen=True, eq=False)
class CostParams:
    cycles_per_us: float = 1800.0
    freq_trans: int = 2000
    gm_read_cycles: int = 1400
    gm_write_cycles: int = 300
    ratio_one: Mapping[str, frozenset[str]] = field(default_factory=dict)
    level1: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(_DEFAULT_LEVEL1))
    level0_default: int = 10
    level0_bytes_per_repeat: int = 256
    level0_cycles_per_repeat: int = 2
    issue_gap: int = 2
    task_tail: int = 1
    lowering: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    vec_ub_limit: int = 438272
    vec_merge_min_tasks: int = 8
    vec_split_min_consumer_n: int = 1024
    l2_enabled: bool = True
    l2_size: int = 20 * 1024 * 1024
    l2_line: int = 512
    l2_hit_latency: int = 50
    l2_miss_extra: int = 150
    aicpu_count: int = 6
    completion_cycles: int = 240
    resolve_cycles: int = 390
    scheduler_cycles: int = 200
    device_task_switch_cycles: int = 200
    fair_extra_cycles: int = 40
    l1_bytes: int = 524288
    ub_bytes: int = 196608

    @classmethod
    def from_profile(cls, profile: Profile, overrides: Mapping[str, Any] | None = None) -> "CostParams":
        """Parameters of ``profile`` (its ``cost:`` section), optionally with some fields replaced."""
        raw: Mapping[str, Any] = profile.raw.get("cost", {}) or {}
        lat = raw.get("latency", {}) or {}
        lv0 = lat.get("level0", {}) or {}
        l2 = raw.get("l2", {}) or {}
        sched = raw.get("sched", {}) or {}
        kw: dict[str, Any] = dict(
            cycles_per_us=float(raw.get("cycles_per_us", 1800)),
            freq_trans=int(lat.get("freq_trans", 2000)),
            gm_read_cycles=int(lat.get("gm_read_cycles", 1400)),
            gm_write_cycles=int(lat.get("gm_write_cycles", 300)),
            ratio_one={str(k).upper(): frozenset(str(o) for o in v) for k, v in (lat.get("ratio_one") or {}).items()},
            level1={str(k): (float(v[0]), float(v[1])) for k, v in (lat.get("level1") or _DEFAULT_LEVEL1).items()},
            level0_default=int(lv0.get("default_cycles", 10)),
            level0_bytes_per_repeat=int(lv0.get("bytes_per_repeat", 256)),
            level0_cycles_per_repeat=int(lv0.get("cycles_per_repeat", 2)),
            issue_gap=int(raw.get("issue_gap_cycles", 2)),
            task_tail=int(raw.get("task_tail_cycles", 1)),
            lowering={str(k): tuple(str(o) for o in v) for k, v in (raw.get("lowering") or {}).items()},
            vec_ub_limit=int(raw.get("vec_subgraph_ub_limit_bytes", 2.23 * profile.buffers.get("UB", 196608))),
            vec_merge_min_tasks=int(raw.get("vec_merge_min_tasks", 8)),
            vec_split_min_consumer_n=int(raw.get("vec_split_min_consumer_n", 1024)),
            l2_enabled=bool(l2.get("enabled", True)),
            l2_size=int(l2.get("size_bytes", 20 * 1024 * 1024)),
            l2_line=int(l2.get("line_bytes", 512)),
            l2_hit_latency=int(l2.get("hit_latency", 50)),
            l2_miss_extra=int(l2.get("miss_extra_latency", 150)),
            aicpu_count=int(sched.get("aicpu_count", 6)),
            completion_cycles=int(sched.get("completion_cycles", 240)),
            resolve_cycles=int(sched.get("resolve_cycles", 390)),
            scheduler_cycles=int(sched.get("scheduler_cycles", 200)),
            device_task_switch_cycles=int(sched.get("device_task_switch_cycles", 200)),
            fair_extra_cycles=int(sched.get("fair_extra_cycles", 40)),
            l1_bytes=int(profile.buffers.get("L1", 524288)),
            ub_bytes=int(profile.buffers.get("UB", 196608)),
        )
        if overrides:
            unknown = set(overrides) - set(kw)
            if unknown:
                raise KeyError(f"unknown cost parameter(s): {', '.join(sorted(unknown))}")
            kw.update(overrides)
        return cls(**kw)

    def us(self, cycles: float) -> float:
        return cycles / self.cycles_per_us
