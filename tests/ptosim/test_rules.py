"""The cost model's rule table (``ptosim.cost.rules``): well-formed records, each pinned by an existing
test and applied somewhere in the cost code, and an estimate that lists the rules it applied."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import ptosim as pypto
from ptosim.cost import estimate
from ptosim.cost.fired import Fired
from ptosim.cost.rules import BY_ID, RULES
from ptosim.cost.tasks import Aliases, Task, sync_tasks

from .conftest import run_ops
from .test_cost import record

ROOT = Path(__file__).resolve().parents[2]
COST = ROOT / "src" / "ptosim" / "cost"
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")
_PATTERN_GEN_IDS = re.compile(r"\b(SK|AT)-\d\d\b")  # pattern-gen's skeleton and atom ids


def test_rule_ids_are_unique_and_kebab_case():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids)) == len(BY_ID)
    assert [i for i in ids if not _ID.match(i)] == []


def test_rules_are_complete_and_speak_of_pypto_not_pattern_gen():
    for r in RULES:
        assert r.pypto == "0.2.0" and r.statement and r.read_from and r.measured and r.test, r.id
        for text in (r.statement, r.read_from, r.measured):
            assert not _PATTERN_GEN_IDS.search(text), f"{r.id} cites a pattern-gen id: {text}"


def _test_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_rule_names_an_existing_test():
    missing = []
    for r in RULES:
        path, _, name = r.test.partition("::")
        file = ROOT / path
        if not file.is_file() or name not in _test_functions(file) or not name.startswith("test_"):
            missing.append(f"{r.id}: {r.test}")
    assert missing == []


def test_every_rule_is_applied_in_the_cost_code():
    """A rule no cost module fires is dead: each id appears quoted in a module other than rules.py."""
    text = "\n".join(p.read_text() for p in sorted(COST.glob("*.py")) if p.name != "rules.py")
    assert [r.id for r in RULES if f'"{r.id}"' not in text] == []


def test_every_fired_id_is_a_rule():
    """The ids the cost code fires are all in the table (a misspelt one would be a KeyError at run time)."""
    text = "\n".join(p.read_text() for p in sorted(COST.glob("*.py")) if p.name != "rules.py")
    fired = set(re.findall(r'fire[d]?\("([a-z0-9-]+)"\)', text)) | set(re.findall(r'applied\.add\("([a-z0-9-]+)"\)', text))
    assert fired and fired <= set(BY_ID)
    with pytest.raises(KeyError):
        Fired()("no-such-rule")


def test_ptosim_cites_no_pattern_gen_skeleton():
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "src" / "ptosim").rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\bSK-\d\d\b", line)]
    assert hits == []


# --- an estimate lists the rules it applied ------------------------------------------------------------


def test_an_estimate_lists_the_rules_it_applied():
    """RMSNorm + linear, K=4096 N=1536, T=16: the norm is split for the UB, the matmul a task per tile."""
    est = estimate(record(K=4096, N=1536, T=16, u=16, rows=4))
    fired = est.rules_fired
    assert {"tileop-level1-latency", "vec-task-per-row-block", "cube-task-per-output-tile", "vec-split-over-ub",
            "vec-fuse-same-grid-and-stage", "resolve-end-is-a-step"} <= set(fired)
    assert "cube-nbuffer-merge" not in fired and "vec-nbuffer-merge" not in fired
    order = [r.id for r in RULES]
    assert list(fired) == sorted(fired, key=order.index)  # the table's order, each once


def test_an_option_fires_its_rule():
    kw = dict(K=4096, N=1536, T=64, u=16, rows=4)
    assert "cube-nbuffer-merge" in estimate(record(**kw, passes={"cube_nbuffer_setting": {-1: 2}})).rules_fired
    assert "device-task-stitch" in estimate(record(T=64, runtime={"stitch_function_max_num": 1})).rules_fired


def test_a_vector_kernel_fires_no_cube_rule():
    run_ops(lambda a: pypto.mul(pypto.add(a, 1.0), 2.0), np.ones((16, 64), np.float32))
    fired = estimate(run_ops.last_kernel.last_record).rules_fired
    assert "vec-task-per-row-block" in fired and "vec-fuse-same-grid-and-stage" in fired
    assert not [r for r in fired if r.startswith(("cube-", "l1-"))]


# --- the sync-task rules no other test pins -----------------------------------------------------------


def _root(views: bool = False, assembles: bool = False) -> dict:
    return {"views": views, "assembles": assembles, "loops": [], "made": set()}


@pytest.mark.parametrize("producers, hubs", [(3, 1), (2, 0)])
def test_a_join_of_three_goes_through_a_sync_task(producers, hubs):
    """Two tasks of a group waiting for the same 3 tasks wait for one sync task; for 2, on both directly."""
    tasks = [Task(i, "AIV", "p", 0, i) for i in range(producers)]
    consumers = [Task(producers + j, "AIV", "c", 0, 99, preds=set(range(producers))) for j in range(2)]
    tasks += consumers
    fire = Fired()
    sync_tasks(tasks, [_root()], Aliases([], {}), fire=fire)
    made = [t for t in tasks if t.kind == "HUB"]
    assert len(made) == hubs
    if hubs:
        assert made[0].preds == set(range(producers)) and all(c.preds == {made[0].id} for c in consumers)
        assert fire.ids() == ("sync-join-from-three",)
    else:
        assert all(c.preds == set(range(producers)) for c in consumers) and fire.ids() == ()


def test_the_writers_of_a_roots_assembles_feed_an_end_sync_task():
    aliases = Aliases([], {})
    aliases.write[7].append((8, 0, 0))  # tensor 7 is assembled into 8
    box = (0, 1, 0, 64)
    writers = [Task(i, "AIV", "w", 0, i, writes=[(7, box)]) for i in range(2)]
    other = Task(2, "AIV", "x", 0, 2, writes=[(9, box)])
    tasks = writers + [other]
    fire = Fired()
    sync_tasks(tasks, [_root(assembles=True)], aliases, fire=fire)
    hub = next(t for t in tasks if t.kind == "HUB")
    assert hub.preds == {0, 1} and fire.ids() == ("root-end-sync",)


def test_a_loop_submitted_before_starts_a_device_task():
    """Root 1 opens a loop with submit_before_loop=True: roots 0 and 1 go to two device tasks."""
    from ptosim.cost.tasks import device_tasks
    from ptosim.options import RuntimeOptions

    roots = [{"outer": 1, "submit_before_loop": False}, {"outer": 2, "submit_before_loop": True},
             {"outer": 2, "submit_before_loop": True}]
    tasks = [Task(i, "AIV", "x", i, i) for i in range(3)]
    fire = Fired()
    assert device_tasks(tasks, roots, RuntimeOptions(), fire) == [[0], [1, 2]]
    assert fire.ids() == ("submit-before-loop-device-task",)
    assert device_tasks(tasks, [dict(r, submit_before_loop=False) for r in roots], RuntimeOptions()) == [[0, 1, 2]]


def test_sync_tasks_take_no_time():
    from . import paged_attention_kernel as K

    K.paged_attention(*K.inputs([40, 3]))
    est = estimate(K.paged_attention.last_record)
    hubs = [t for t in est.tasks if t.kind == "HUB"]
    assert hubs and all(t.start == t.end for t in hubs)
    assert "sync-task-costs-nothing" in est.rules_fired




def test_ready_tasks_enter_in_task_id_order():
    """Single-pass attention over a reshaped q, T=4, 8 kv heads: the reshape root's sync task waits for
    nothing and precedes every q·kᵀ, as each root's start sync task does. PyPTO submits ready tasks in
    task-id order, so it processes the reshape root's first and each per-root one then releases its 8
    q·kᵀ tasks at once: PyPTO 0.2.0's SIM dispatched all 256 q·kᵀ tasks before the first P·V. Processed
    last, the reshape root's sync task would release them one resolve apart, and P·V would overtake."""
    from . import single_pass_attention_kernel as K

    K.attention(*K.inputs(4))
    est = estimate(K.attention.last_record)
    qks = [t for t in est.work_tasks if t.label == "qk"]
    pvs = [t for t in est.work_tasks if t.label == "pv"]
    lead = [t for t in est.tasks if t.kind == "HUB" and not t.preds and {q.id for q in qks} <= set(t.succs)]
    assert len(qks) == 256 and len(pvs) == 32 and len(lead) == 1
    assert lead[0].root < min(q.root for q in qks)  # the reshape root's own sync task
    first_pv = min(p.start for p in pvs)
    assert sum(q.start > first_pv for q in qks) <= 2  # PyPTO: none; processed last, 177 of 256
    assert "ready-in-task-id-order" in est.rules_fired
