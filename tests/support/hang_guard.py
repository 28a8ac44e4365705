"""``time_limit(seconds)``: fail an example that runs too long instead of hanging the suite (a
hypothesis deadline only reports after the example ends). Shared by the mutation and fuzz suites."""

from __future__ import annotations

import contextlib
import signal
from typing import Any, Iterator

__all__ = ["HANG_LIMIT_S", "time_limit"]

#: a hang runs forever; a slow example on a loaded 2-core CI machine runs for seconds. The fuzz suites set no
#: hypothesis deadline (a deadline is a timing test: an example over it on the first run and under it on the
#: replay is reported as a FlakyFailure) and bound each example by this instead.
HANG_LIMIT_S = 120


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:  # pragma: no cover - only on a hang
        raise TimeoutError(f"ran for more than {seconds} s")

    if not hasattr(signal, "SIGALRM"):  # pragma: no cover - Windows
        yield
        return
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
