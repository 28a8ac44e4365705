"""What the cost model reads from a platform profile: its ``cost:`` section and its buffer sizes.

The coefficients are ``profile_schema.CostSection`` itself (their defaults are written there, once);
``CostParams`` only adds the two buffer sizes and the AIC count the task merges read, the resolved UB limit, and
hashes by identity so the latency tables can cache on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..platform import Profile
from ..profile_schema import CostSection, validate_cost_section

__all__ = ["CostParams"]


@dataclass(frozen=True, eq=False)
class CostParams:
    cost: CostSection  #: the profile's ``cost:`` section, defaults filled
    l1_bytes: int  #: the profile's L1 (cube L1 reuse must fit it)
    ub_bytes: int  #: the profile's UB (merged vector tasks must fit it)
    aic: int = 0  #: the profile's AIC cores (PyPTO sizes its automatic L1-reuse merge by them)

    @property
    def vec_ub_limit(self) -> int:
        return self.cost.ub_limit(self.ub_bytes)

    @classmethod
    def from_profile(cls, profile: Profile, overrides: Mapping[str, Any] | None = None) -> "CostParams":
        """The parameters of ``profile``; ``overrides`` is a mapping shaped like the ``cost:``
        section (``{"l2": {"enabled": True}}``) merged over it key by key, and validated with it: a
        misspelt key is a PlatformError naming the closest valid one."""
        raw = _merged(dict(profile.raw.get("cost") or {}), overrides or {})
        section = validate_cost_section(raw, profile.name)
        return cls(section, int(profile.buffers.get("L1", 0)), int(profile.buffers.get("UB", 0)), int(profile.aic))

    def us(self, cycles: float) -> float:
        return self.cost.us(cycles)


def _merged(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            base[key] = _merged(dict(base[key]), value)
        else:
            base[key] = value
    return base
