"""ptosim's cost model: a PyPTO-0.2-style estimate of a kernel run, and its timeline.

    est = ptosim.cost.estimate(kernel.last_record)      # profile: the record's platform
    est.summary()   # {"e2e_us", "tasks", "utilization", "per_label_us", "platform", "device_tasks", "notes", ...}
    print(est.report())
    ptosim.cost.write_trace(kernel.last_record, "trace.json")   # Chrome Trace Event JSON (Perfetto)

How it works (SPEC §4.5; details in the modules): the recorded ops are grouped per root (loop-body
instance) into PyPTO-like tasks (``graph``), lowered to tile ops (``lower``) priced by PyPTO's
level-1 latency fit (``latency``), run on a per-pipe core model with an L2 cache (``core``) and
scheduled on the profile's cores by a model of PyPTO's AICPU schedulers (``schedule``). Every
coefficient is data in the profile's ``cost:`` section (``params``).
"""

from __future__ import annotations

from typing import Any

from .model import Estimate, estimate
from .params import CostParams

__all__ = ["estimate", "Estimate", "CostParams", "write_trace", "trace_events"]

# The two wrappers import ``ptosim.trace`` at the call: it imports this package's modules.


def write_trace(record: Any, path: Any, profile: Any = None) -> Any:
    """Write the Chrome Trace Event JSON of ``record``'s estimate to ``path``; returns the Estimate."""
    from ..trace import write_trace as _write

    return _write(record, path, profile)


def trace_events(record_or_estimate: Any, profile: Any = None) -> dict[str, Any]:
    """The trace as a dict (``{"traceEvents": [...], "displayTimeUnit": "ns", ...}``)."""
    from ..trace import trace_events as _events

    return _events(record_or_estimate, profile)
