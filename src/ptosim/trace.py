"""Chrome Trace Event JSON of a cost estimate: kept importable as ``ptosim.trace``.

The writer lives in ``ptosim.cost.trace`` (part of the cost model package, which re-exports
``write_trace`` and ``trace_events``); this module only re-exports it.
"""

from __future__ import annotations

from .cost.trace import PID, lane_names, trace_events, write_trace

__all__ = ["trace_events", "write_trace", "lane_names", "PID"]
