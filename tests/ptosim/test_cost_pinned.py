"""The cost estimate, pinned: end-to-end cycles, task count and a digest of the whole summary
(µs, tasks by kind and label, L2, utilisation) for an AT-10 kernel and the paged attention at several
token counts (issue #31 item 6).

The estimate is being made faster without changing it; any speed work on ptosim/cost must leave
these figures bit for bit (``benchmarks/cost_speed.py --against REV`` checks the same on the generated
skeletons at long T). A deliberate change of a cost rule or of a2a3's coefficients changes them: then
replace the table with the one the failure prints.
"""

from __future__ import annotations

import gc
import hashlib
import json

import pytest

from ptosim.cost import estimate

from . import paged_attention_kernel as pa
from .test_cost import record

#: case -> (cycles, tasks, digest of the summary); measured on commit d86d358
PINNED: dict[str, tuple[int, int, str]] = {
    "at10 u=1 T=1": (19365, 3, "bb4c6ef2950e4a7f"),
    "at10 u=4 T=1": (19365, 3, "bb4c6ef2950e4a7f"),
    "at10 u=1 T=3": (21524, 7, "8e1b2e70c394386f"),
    "at10 u=4 T=3": (21524, 7, "8e1b2e70c394386f"),
    "at10 u=1 T=16": (30300, 33, "f77139f7eae53dd3"),
    "at10 u=4 T=16": (21962, 9, "9c343b29d9460483"),
    "at10 u=1 T=37": (35764, 75, "8a2e583a1e3a0c49"),
    "at10 u=4 T=37": (29197, 21, "6857cfadc1c0da4c"),
    "paged [1, 1]": (30200, 16, "049c6194b4082cfb"),
    "paged [40, 3]": (46084, 22, "f904f72674cb19c6"),
    "paged [100, 40]": (101792, 44, "2b4987c5ef3fc69e"),
    "paged [128, 77]": (101412, 52, "4331a04dcd485632"),
}

_KEYS = ("e2e_us", "cycles", "tasks", "tasks_by_kind", "device_tasks", "roots", "per_label_us", "per_label_tasks",
         "per_path_us", "l2", "utilization")


def _fingerprint(est) -> tuple[int, int, str]:
    s = est.summary()
    keep = {k: s[k] for k in _KEYS}
    return s["cycles"], s["tasks"], hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _case(name: str):
    if name.startswith("at10"):
        u, T = (int(part.split("=")[1]) for part in name.split()[1:])
        return record(K=256, N=128, T=T, u=u, rows=u)
    pa.paged_attention(*pa.inputs(json.loads(name.split(" ", 1)[1])))
    return pa.paged_attention.last_record


def test_estimates_are_the_pinned_ones():
    got = {name: _fingerprint(estimate(_case(name))) for name in PINNED}
    table = "\n".join(f'    "{k}": ({c}, {n}, "{h}"),' for k, (c, n, h) in got.items())
    assert got == PINNED, "the estimates changed; if meant, the new table is:\n" + table


@pytest.mark.parametrize("name", ["at10 u=1 T=16", "paged [100, 40]"])
def test_a_second_estimate_of_the_same_record_is_the_same(name):
    """Nothing cached across builds (the per-op grid cache, the shared op times) leaks into the next one."""
    rec = _case(name)
    first = _fingerprint(estimate(rec))
    assert _fingerprint(estimate(rec, params={})) == first == PINNED[name]


def test_the_collector_is_left_as_it_was():
    """An estimate pauses the cyclic garbage collector while it builds (the build's objects all live
    to its end): it puts it back as it found it, and the figures do not depend on it."""
    rec = _case("at10 u=4 T=16")
    gc.disable()
    try:
        off = _fingerprint(estimate(rec, params={}))  # params: not the estimate cached for the record
        assert not gc.isenabled()
    finally:
        gc.enable()
    on = _fingerprint(estimate(rec, params={}))
    assert gc.isenabled()
    assert off == on == PINNED["at10 u=4 T=16"]


def test_a_build_ends_in_the_oldest_generation():
    """The build's objects go to the oldest generation when it ends (a young collection walking them
    all cost seconds at long T), not to the permanent one: a cycle the build left is collected at the
    next full collection, not kept for good."""
    import weakref

    from ptosim.cost import model

    class Left:  # a cycle like the ones a build leaves (a closure that holds its own frame)
        pass

    with model._gc_paused():
        left = Left()
        left.me = left
        probe = weakref.ref(left)
        del left
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert any(o is probe() for o in gc.get_objects(generation=2)), "the build's objects are not in the oldest generation"
    gc.collect(1)
    assert probe() is not None, "a young collection walked the build's objects"
    gc.collect()
    assert probe() is None, "a cycle the build left outlived a full collection"
