"""The cost model's coefficients, read from the ``cost:`` section of a platform profile.

Every number lives in ``patterns/platforms/<name>.yaml`` (with a comment citing where it comes
from); the field defaults below, the only place they are written, fill the keys a profile leaves
out and equal the a2a3 values. The section's keys and bounds are ``profile_schema.CostSection``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from ..platform import Profile
from ..profile_schema import L2Cache, Latency, Level0, Sched, validate_cost_section

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
    task_start_steps: int = 64
    l1_bytes: int = 524288
    ub_bytes: int = 196608

    @classmethod
    def from_profile(cls, profile: Profile, overrides: Mapping[str, Any] | None = None) -> "CostParams":
        """Parameters of ``profile`` (its ``cost:`` section), optionally with some fields replaced.

        A key the section leaves out takes the field's default above; a misspelt key is a
        PlatformError (``profile_schema.CostSection`` forbids unknown keys)."""
        c = validate_cost_section(profile.raw.get("cost"), profile.name)
        lat = c.latency or Latency()
        lv0 = lat.level0 or Level0()
        l2 = c.l2 or L2Cache()
        sched = c.sched or Sched()
        ub = profile.buffers.get("UB")
        given: dict[str, Any] = dict(
            cycles_per_us=c.cycles_per_us,
            freq_trans=lat.freq_trans,
            gm_read_cycles=lat.gm_read_cycles,
            gm_write_cycles=lat.gm_write_cycles,
            ratio_one=None if lat.ratio_one is None else {k: frozenset(v) for k, v in lat.ratio_one.items()},
            level1={k: (float(a), float(b)) for k, (a, b) in lat.level1.items()} if lat.level1 else None,
            level0_default=lv0.default_cycles,
            level0_bytes_per_repeat=lv0.bytes_per_repeat,
            level0_cycles_per_repeat=lv0.cycles_per_repeat,
            issue_gap=c.issue_gap_cycles,
            task_tail=c.task_tail_cycles,
            lowering=None if c.lowering is None else {k: tuple(v) for k, v in c.lowering.items()},
            # left out: the a2a3 fit (2.23 x UB) scaled to this profile's UB
            vec_ub_limit=c.vec_subgraph_ub_limit_bytes
            if c.vec_subgraph_ub_limit_bytes is not None or ub is None else int(2.23 * ub),
            vec_merge_min_tasks=c.vec_merge_min_tasks,
            vec_split_min_consumer_n=c.vec_split_min_consumer_n,
            l2_enabled=l2.enabled,
            l2_size=l2.size_bytes,
            l2_line=l2.line_bytes,
            l2_hit_latency=l2.hit_latency,
            l2_miss_extra=l2.miss_extra_latency,
            aicpu_count=sched.aicpu_count,
            completion_cycles=sched.completion_cycles,
            resolve_cycles=sched.resolve_cycles,
            scheduler_cycles=sched.scheduler_cycles,
            device_task_switch_cycles=sched.device_task_switch_cycles,
            fair_extra_cycles=sched.fair_extra_cycles,
            task_start_steps=sched.task_start_steps,
            l1_bytes=profile.buffers.get("L1"),
            ub_bytes=ub,
        )
        kw = {name: value for name, value in given.items() if value is not None}
        if overrides:
            unknown = set(overrides) - {f.name for f in fields(cls)}
            if unknown:
                raise KeyError(f"unknown cost parameter(s): {', '.join(sorted(unknown))}")
            kw.update(overrides)
        return cls(**kw)

    def us(self, cycles: float) -> float:
        return cycles / self.cycles_per_us
