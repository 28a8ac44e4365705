"""ptosim's cost model: a PyPTO-0.2-style estimate of a kernel run, and its timeline.

    est = ptosim.cost.estimate(kernel.last_record)      # profile: the record's platform
    est.summary()   # {"e2e_us", "tasks", "utilization", "per_label_us", "platform", "device_tasks", "notes", ...}
    print(est.report())
    ptosim.cost.write_trace(kernel.last_record, "trace.json")   # Chrome Trace Event JSON (Perfetto)

How it works (details in the modules): the recorded ops are grouped per root (loop-body
instance) into PyPTO-like tasks (``graph``, ``tasks``), lowered to tile ops (``lower``; a task shaped like an
earlier one is replayed from its ``template``) priced by PyPTO's
level-1 latency fit (``latency``), run on a per-pipe core model with an L2 cache (``core``) and
scheduled on the profile's cores by a model of PyPTO's AICPU schedulers (``schedule``). Every
coefficient is data in the profile's ``cost:`` section (``params``). ``trace`` writes the timeline
(also importable as ``ptosim.trace``).
"""

from __future__ import annotations

from .model import Estimate, estimate
from .params import CostParams
from .trace import trace_events, write_trace

__all__ = ["estimate", "Estimate", "CostParams", "write_trace", "trace_events"]
