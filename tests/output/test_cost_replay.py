"""ptosim.cost's replayed task bodies (template.py) and neighbours shared by roots of one shape
(nbuffer.py) give the estimate the full build gives, bit for bit, across skeletons and token counts
(issue #31 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pattern_gen.output.instances import _kernel_attr, call_instance, load_instance_module
from ptosim import cost
from ptosim.cost import nbuffer, template
from ptosim.cost.params import CostParams
from ptosim.platform import load_platform

#: (skeleton, atoms, small dims): cheap instances of the skeletons whose roots repeat
CASES = [
    ("SK-01", "AT-01", {"NQ": 4, "NKV": 2, "D": 64, "NB": 16, "BS": 32, "MB": 4}),
    ("SK-03", "AT-10", {"K": 256, "N": 128}),
    ("SK-05", "AT-10", {"H": 256, "NQ": 4, "NKV": 2, "D": 64, "NB": 16, "BS": 32, "MB": 4}),
    ("SK-07", "", {"H": 256, "I": 128, "E": 16, "G": 4, "KG": 2, "K": 4, "IS": 128}),
]


def _record(folder: Path, T: int):
    kernel, golden = load_instance_module(folder, "kernel"), load_instance_module(folder, "golden")
    call_instance(kernel, "run", call_instance(golden, "make_inputs", T, seed=0))
    return getattr(kernel, _kernel_attr(kernel)).last_record


def _fingerprint(est: cost.Estimate) -> tuple:
    """The summary and every task's edges, cost and place in the schedule."""
    tasks = tuple((t.kind, t.label, t.root, tuple(sorted(t.preds)), tuple(t.succs), t.device, t.duration,
                   t.start, t.end, t.core, t.l2_hits, t.l2_misses, t.record_ops, t.instances) for t in est.tasks)
    return est.summary(), est.rules_fired, tasks


def _estimate(record, replay: bool, monkeypatch: pytest.MonkeyPatch) -> cost.Estimate:
    monkeypatch.setattr(template, "REPLAY", replay)
    monkeypatch.setattr(nbuffer, "SHARE_BY_SHAPE", replay)
    prof = load_platform(record.platform)
    return cost.estimate(record, params=CostParams.from_profile(prof))  # params: no cached estimate


@pytest.mark.parametrize("skeleton,atoms,dims", CASES, ids=[c[0] for c in CASES])
def test_replayed_estimate_is_the_full_build(skeleton, atoms, dims, cli, tmp_path, monkeypatch):
    args = ["new", "--skeleton", skeleton, "--out", tmp_path, "--name", "k", "-q", "--force"]
    args += ["--atoms", atoms] if atoms else []
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    cli(*args).assert_ok()
    replayed: list[object] = []
    real = template.replay
    monkeypatch.setattr(template, "replay", lambda *a: replayed.append(body := real(*a)) or body)
    asked, worked = [0], [0]  # roots whose neighbours were asked for, and worked out
    near, work_out = nbuffer.RootNeighbours._near, nbuffer.RootNeighbours._work_out
    monkeypatch.setattr(nbuffer.RootNeighbours, "_near", lambda self, r: asked.__setitem__(0, asked[0] + (r not in self.done)) or near(self, r))
    monkeypatch.setattr(nbuffer.RootNeighbours, "_work_out", lambda *a: worked.__setitem__(0, worked[0] + 1) or work_out(*a))
    shared = False
    for T in (1, 5, 16, 37):
        record = _record(tmp_path / "k", T)
        full = _fingerprint(_estimate(record, False, monkeypatch))
        asked[0] = worked[0] = 0
        fast = _fingerprint(_estimate(record, True, monkeypatch))
        assert fast == full, f"{skeleton} at T={T}"
        shared = shared or worked[0] < asked[0]
    assert any(b is not None for b in replayed), "no task body was replayed: the test compares nothing"
    assert shared, "no root took the neighbours of an earlier root of its shape"


def test_replay_falls_back_when_the_answers_differ_in_pattern():
    """A body whose blocks coincide where the template's did not is lowered, not replayed."""
    from ptosim.cost.lower import Body, TileOp

    tpl = template.Template(calls=[(0, 0, (0, 1, 0, 4), None), (0, 1, (0, 1, 0, 4), None)],
                            answers=[(10, (0, 1, 0, 4), False, True), (11, (0, 1, 0, 4), False, True)],
                            ops=[TileOp("COPY_IN", "MTE_IN", 1, (), (1, 4), 8, (10, (0, 1, 0, 4), True)),
                                 TileOp("COPY_IN", "MTE_IN", 1, (), (1, 4), 8, (11, (0, 1, 0, 4), True))],
                            gm_ops=[0, 1], reads=[(10, (0, 1, 0, 4), False), (11, (0, 1, 0, 4), False)],
                            writes_uid=[], record_ops=[0])

    class Same:  # both tensors resolve to one block: lowering would copy it in once
        def resolve(self, uid, box, shape=None):
            return (99, box, False, True)

        def canon(self, uid, box, shape):
            return box

    labels = template.Labels([20, 21], {20: 0, 21: 1}, 5)
    assert template.replay(tpl, labels, Same()) is None

    class Apart(Same):
        def resolve(self, uid, box, shape=None):
            return (uid + 100, box, True, True)

    body = template.replay(tpl, labels, Apart())
    assert isinstance(body, Body)
    assert [op.gm for op in body.ops] == [(120, (0, 1, 0, 4), True), (121, (0, 1, 0, 4), True)]
    assert body.reads == [(120, (0, 1, 0, 4), True), (121, (0, 1, 0, 4), True)]
    assert body.record_ops == [5]


@pytest.mark.parametrize("skeleton,atoms,dims", CASES[2:3], ids=[CASES[2][0]])
def test_one_step_event_per_cycle_is_the_full_schedule(skeleton, atoms, dims, cli, tmp_path, monkeypatch):
    """The scheduler queues one plain device step per cycle (a second one there finds the step done):
    the schedule is the one with every step a running task asks for queued."""
    from ptosim.cost import schedule

    args = ["new", "--skeleton", skeleton, "--out", tmp_path, "--name", "k", "-q", "--force", "--atoms", atoms]
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    cli(*args).assert_ok()
    for T in (1, 5, 37):
        record = _record(tmp_path / "k", T)
        monkeypatch.setattr(schedule, "ONE_STEP_EVENT", False)
        every = _fingerprint(_estimate(record, True, monkeypatch))
        monkeypatch.setattr(schedule, "ONE_STEP_EVENT", True)
        assert _fingerprint(_estimate(record, True, monkeypatch)) == every, f"{skeleton} at T={T}"
