"""The cost model and timeline: PyPTO-0.2 latencies, a valid Chrome trace, and every
option moving the estimate the way PyPTO 0.2.0's SIM cost model does (the measured directions and
the calibration: benchmarks/costmodel_vs_pypto.py and benchmarks/data/).
"""


import heapq
import json
from collections import Counter

import ml_dtypes
import numpy as np
import pytest

import ptosim as pypto
from ptosim.cost import CostParams, estimate
from ptosim.cost.latency import tileop_cycles
from ptosim.errors import PlatformError
from ptosim.platform import load_platform

BF16, FP32 = pypto.DT_BF16, pypto.DT_FP32
CUBE = ([16, 16], [256, 512], [128, 256])


def at10(K, N, u, rows, *, runtime=None, passes=None, nc=False, cube=CUBE, labels=("rmsnorm", "linear")):
    """The AT-10 kernel of the calibration (RMSNorm + linear), with the options under test."""
    runtime = {"stitch_function_max_num": 128, **(runtime or {})}

    @pypto.frontend.jit(runtime_options=runtime, pass_options=passes)
    def at10_cost(x: pypto.Tensor[[pypto.DYNAMIC, K], BF16], gamma: pypto.Tensor[[K], BF16],
                  weight: pypto.Tensor[[N, K], BF16], y: pypto.Tensor[[pypto.DYNAMIC, N], BF16]):
        pypto.experimental.set_operation_options(combine_axis=True)
        if nc:
            weight.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
        pypto.set_vec_tile_shapes(1, K)
        gf = pypto.cast(pypto.reshape(gamma, [1, K]), FP32)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[u]):
            xt = pypto.view(x, [tile, K], [off, 0])
            pypto.set_semantic_label(labels[0])
            pypto.set_vec_tile_shapes(rows, K)
            xf = pypto.cast(xt, FP32)
            s = pypto.sum(pypto.mul(xf, xf), dim=-1, keepdim=True)
            r = pypto.rsqrt(pypto.add(pypto.mul(s, 1.0 / K), 1e-6))
            nb = pypto.cast(pypto.mul(pypto.mul(xf, r), gf), BF16)
            pypto.set_semantic_label(labels[1])
            pypto.set_cube_tile_shapes(*[list(v) for v in cube])
            pypto.assemble(pypto.matmul(nb, weight, BF16, b_trans=True), [off, 0], y)

    return at10_cost


def record(K=1024, N=512, T=64, u=16, rows=16, **kw):
    rng = np.random.default_rng(0)
    kernel = at10(K, N, u, rows, **kw)
    bf = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    kernel(bf(T, K), bf(K), bf(N, K) * 0.1, np.zeros((T, N), ml_dtypes.bfloat16))
    return kernel.last_record


def kinds(est) -> Counter:
    return Counter(t.kind for t in est.tasks)


# --- latency and task durations: PyPTO 0.2.0's numbers ------------------------------------------


@pytest.mark.parametrize("op, shapes, dtype, nbytes, cycles", [
    ("COPY_IN", [(1536, 4096), (128, 512)], "BF16", 2, 2775),   # weight block DDR -> L1
    ("COPY_IN", [(16, 4096), (16, 512)], "BF16", 2, 1577),
    ("MUL", [(4, 4096), (4, 4096), (4, 4096)], "FP32", 4, 458),
    ("MUL", [(4, 4096), (4, 8), (4, 4096)], "FP32", 4, 30),      # by a BRCB'd [4, 1]
    ("CAST", [(4, 4096), (4, 4096)], "FP32", 4, 271),
    ("SQRT", [(4, 1), (4, 1)], "FP32", 4, 45),
    ("DIV", [(4, 1), (4, 1), (4, 1)], "FP32", 4, 50),
    ("A_MUL_B", [(16, 256), (256, 128), (16, 128)], "BF16", 2, 86),
    ("L1_TO_L0Bt", [(128, 512), (256, 128)], "BF16", 2, 520),
    ("COPY_OUT", [(16, 128), (16, 128)], "FP32", 4, 412),
    ("ROWSUM_SINGLE", [(4, 4096), (4, 1), (4, 2048)], "FP32", 4, 11),  # level-0 fallback
])
def test_tileop_latency_is_pyptos_level1_fit(op, shapes, dtype, nbytes, cycles):
    params = CostParams.from_profile(load_platform("a2a3"))
    assert tileop_cycles(op, shapes, dtype, nbytes, params) == cycles


def test_task_durations_match_pypto_swimlane():
    """K=4096 RMSNorm + linear: the AIC task is 36396 cycles, the two AIV parts 5029 and 3105, as in
    PyPTO's pipe swimlane (without the L2 model, which PyPTO's SIM does not run)."""
    est = estimate(record(K=4096, N=1536, T=16, u=16, rows=4), params={"l2": {"enabled": False}})
    durations = Counter((t.kind, t.duration) for t in est.tasks if t.kind != "HUB")
    assert durations == {("AIC", 36396): 12, ("AIV", 5029): 4, ("AIV", 3105): 4, ("AIV", 2082): 1}


# --- summary, report, trace ------------------------------------------------------------------------


def test_summary_and_report():
    est = estimate(record())
    s = est.summary()
    assert s["platform"] == "a2a3" and isinstance(s["e2e_us"], float) and s["e2e_us"] > 0
    assert s["tasks"] == s["tasks_by_kind"]["AIC"] + s["tasks_by_kind"]["AIV"] > 0
    assert set(s["utilization"]) >= {"cube", "vector", "mte_in", "mte1", "mte_out"}
    assert all(0.0 <= v <= 1.0 for v in s["utilization"].values())
    assert {"rmsnorm", "linear"} <= set(s["per_label_us"])
    assert s["device_tasks"] == 1 and isinstance(s["notes"], list)
    text = est.report()
    assert "µs end to end" in text and "MTE_IN" in text and "rmsnorm" in text


def test_trace_is_valid_chrome_trace_json(tmp_path):
    path = tmp_path / "trace.json"
    est = pypto.cost.write_trace(record(), path)
    data = json.loads(path.read_text())
    assert isinstance(data, dict) and isinstance(data["traceEvents"], list) and data["displayTimeUnit"] in ("ms", "ns")
    events = data["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    names = set(lanes.values())
    assert {f"AIC_{i}" for i in range(1, 25)} <= names and {f"AIV_{i}" for i in range(25, 73)} <= names
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == len(est.tasks)
    for e in xs:
        assert {"name", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["tid"] in lanes and e["dur"] > 0 and e["name"].endswith(")")
    work = [e for e in xs if not lanes[e["tid"]].startswith("HUB")]
    assert all(lanes[e["tid"]][:3] in ("AIC", "AIV") for e in work)
    aiv = next(e for e in work if e["args"]["label"] == "rmsnorm")
    assert aiv["args"]["ioperand-hint"][0]["name"] == "x" and aiv["args"]["ioperand-hint"][0]["bytes"] > 0
    assert aiv["args"]["loop"][0][0] == "TOK_LOOP" and aiv["args"]["ops"]
    starts = {e["id"] for e in events if e["ph"] == "s"}
    assert starts and starts == {e["id"] for e in events if e["ph"] == "f"}


def test_e2e_is_last_end_minus_first_start(tmp_path):
    path = tmp_path / "t.json"
    est = pypto.cost.write_trace(record(T=48), path)
    xs = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X" and e["cat"] != "sync"]
    span = max(e["ts"] + e["dur"] for e in xs) - min(e["ts"] for e in xs)
    assert est.summary()["e2e_us"] == pytest.approx(span, abs=2e-3)
    work = est.work_tasks
    assert est.e2e_cycles == max(t.end for t in work) - min(t.start for t in work)


def test_other_platform_uses_its_profile(tmp_path):
    est = pypto.cost.write_trace(record(), tmp_path / "t.json", profile="ascend950")
    assert est.summary()["platform"] == "ascend950"
    lanes = {e["args"]["name"] for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "AIC_28" in lanes and "AIV_84" in lanes and "AIC_29" not in lanes


# --- options: each moves the estimate the way PyPTO's cost model does -----------------------------


def test_vec_nbuffer_merges_tiny_vector_tasks():
    """64 one-row RMSNorm tiles per root: merging 4 is faster (fewer dispatches); merging so many that
    few tasks remain is slower again (PyPTO: 43.7 / 25.6 / 31.2 us for unset / {-1:4} / {-1:8})."""
    base = estimate(record(K=512, T=128, u=64, rows=1))
    four = estimate(record(K=512, T=128, u=64, rows=1, passes={"vec_nbuffer_setting": {-1: 4}}))
    many = estimate(record(K=512, T=128, u=64, rows=1, passes={"vec_nbuffer_setting": {-1: 32}}))
    assert kinds(base)["AIV"] == 129 and kinds(four)["AIV"] == 33 and kinds(many)["AIV"] < kinds(four)["AIV"]
    assert four.e2e_us < base.e2e_us
    assert many.e2e_us > four.e2e_us
    merged = next(t for t in four.tasks if t.kind == "AIV" and t.merge)
    assert "vecMergeInfo" in merged.merge and len(merged.instances) == 4


def test_vec_nbuffer_leaves_few_tasks_alone():
    """With 4 tiles per root PyPTO does not merge ({0:2} and {-1:4} had no effect)."""
    a = estimate(record(T=32, u=16, rows=4))
    b = estimate(record(T=32, u=16, rows=4, passes={"vec_nbuffer_setting": {-1: 4}}))
    assert kinds(a) == kinds(b) and a.e2e_cycles == b.e2e_cycles


def test_cube_nbuffer_trades_dispatches_for_parallelism():
    """PyPTO K=4096: {-1:2} 90.7 us, {-1:4} 82.7 us (faster), {-1:8} 129.8 us (too few tasks)."""
    kw = dict(K=4096, N=1536, T=64, u=16, rows=4)
    none = estimate(record(**kw))
    two = estimate(record(**kw, passes={"cube_nbuffer_setting": {-1: 2}}))
    twelve = estimate(record(**kw, passes={"cube_nbuffer_setting": {-1: 12}}))
    assert kinds(none)["AIC"] == 48 and kinds(two)["AIC"] == 24 and kinds(twelve)["AIC"] == 4
    assert two.e2e_us < none.e2e_us
    assert twelve.e2e_us > two.e2e_us


def test_cube_l1_reuse_saves_copy_ins():
    """Four 16-row m-tiles share each weight block: {-1:2} merges pairs and loads shared blocks once."""
    kw = dict(T=64, u=64, rows=16)
    off = estimate(record(**kw, passes={"cube_l1_reuse_setting": {-1: 1}}))
    on = estimate(record(**kw, passes={"cube_l1_reuse_setting": {-1: 2}}))
    copies = lambda e: sum(op.name == "COPY_IN" for t in e.tasks if t.kind == "AIC" for op in t.ops)  # noqa: E731
    assert kinds(on)["AIC"] == kinds(off)["AIC"] // 2
    assert copies(on) < copies(off)
    assert any("l1ReuseInfo" in t.merge for t in on.tasks)


def test_cube_l1_reuse_merges_by_itself_when_unset():
    """PyPTO 0.2.0 with no cube_l1_reuse_setting (l1_copy_reuse.cpp; SIM on single-pass attention over
    16384 keys: 64 tasks at T=1): a matmul's 256 output tiles merge floor(256 / (2 x 24 AIC)) = 5 at a
    time along their shared A block, then cube_nbuffer {-1: 2} pairs the 51 groups of 5 (25 tasks of
    10, one of 5) and leaves the last tile, a class of its own, alone: 27 AIC tasks. {-1: 1} turns it off."""
    S, D = 16384, 64

    def run(passes):
        @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128}, pass_options=passes)
        def qk(q: pypto.Tensor[[pypto.DYNAMIC, D], BF16], k: pypto.Tensor[[S, D], BF16],
               s: pypto.Tensor[[pypto.DYNAMIC, S], FP32]):
            for off, tile in pypto.loop_unroll(0, q.shape[0], 1, name="Q_LOOP", idx_name="off", unroll_list=[1]):
                pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64])
                pypto.assemble(pypto.matmul(pypto.view(q, [tile, D], [off, 0]), k, FP32, b_trans=True), [off, 0], s)

        rng = np.random.default_rng(0)
        qk(rng.uniform(-1, 1, (1, D)).astype(ml_dtypes.bfloat16), rng.uniform(-1, 1, (S, D)).astype(ml_dtypes.bfloat16),
           np.zeros((1, S), np.float32))
        return estimate(qk.last_record)

    auto = run({"cube_nbuffer_setting": {-1: 2}})
    sizes = Counter(len(t.instances) for t in auto.tasks if t.kind == "AIC")
    assert sizes == {10: 25, 5: 1, 1: 1} and "l1-reuse-auto" in auto.rules_fired
    off = run({"cube_nbuffer_setting": {-1: 2}, "cube_l1_reuse_setting": {-1: 1}})
    assert kinds(off)["AIC"] == 128


def test_stitch_function_max_num():
    """One root per device task serialises them (PyPTO: 298 vs 115 us); 16 = 128 here."""
    one = estimate(record(T=64, runtime={"stitch_function_max_num": 1}))
    many = estimate(record(T=64, runtime={"stitch_function_max_num": 128}))
    assert one.summary()["device_tasks"] == 5 and many.summary()["device_tasks"] == 1
    assert one.e2e_us > 1.5 * many.e2e_us
    assert any("device tasks" in n for n in one.notes)


def test_device_sched_mode():
    """2 (fair) costs extra per dispatch; the mode is reported (PyPTO's SIM showed no effect)."""
    base = estimate(record(T=64))
    fair = estimate(record(T=64, runtime={"device_sched_mode": 2}))
    both = estimate(record(T=64, runtime={"device_sched_mode": 3}))
    assert fair.e2e_cycles > base.e2e_cycles and both.e2e_cycles > base.e2e_cycles
    assert any("device_sched_mode=2" in n for n in fair.notes)


def test_cacheable_weight_is_reread_from_l2():
    """Four roots read the same weight blocks: cacheable, roots 2-4 hit L2; NONE_CACHEABLE always misses."""
    l2 = {"l2": {"enabled": True}}  # the a2a3 profile leaves L2 out, as PyPTO's SIM does
    cached = estimate(record(T=64), params=l2)
    bypass = estimate(record(T=64, nc=True), params=l2)
    hits = lambda e: sum(t.l2_hits for t in e.tasks if t.kind == "AIC")  # noqa: E731
    assert hits(cached) > hits(bypass)
    assert cached.e2e_cycles < bypass.e2e_cycles
    assert any("NONE_CACHEABLE" in n for n in bypass.notes)


def test_none_cacheable_does_not_evict_other_tensors():
    """A weight larger than L2 streamed every root evicts everything else; marked NONE_CACHEABLE it
    occupies no L2, so the other (small, re-read) tensors keep hitting. L2 is shrunk to 256 KiB so the
    kernel stays small."""
    K, N1, N2 = 512, 1024, 128

    def kernel(nc):
        @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
        def two_weights(x: pypto.Tensor[[pypto.DYNAMIC, K], BF16], w1: pypto.Tensor[[N1, K], BF16],
                        w2: pypto.Tensor[[N2, K], BF16], y1: pypto.Tensor[[pypto.DYNAMIC, N1], BF16],
                        y2: pypto.Tensor[[pypto.DYNAMIC, N2], BF16]):
            if nc:
                w1.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
            for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="L", idx_name="off", unroll_list=[16]):
                xt = pypto.view(x, [tile, K], [off, 0])
                pypto.set_cube_tile_shapes([16, 16], [256, 512], [128, 256])
                pypto.set_semantic_label("big")
                pypto.assemble(pypto.matmul(xt, w1, BF16, b_trans=True), [off, 0], y1)
                pypto.set_semantic_label("small")
                pypto.assemble(pypto.matmul(xt, w2, BF16, b_trans=True), [off, 0], y2)

        rng = np.random.default_rng(1)
        bf = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
        T = 48
        two_weights(bf(T, K), bf(N1, K), bf(N2, K), np.zeros((T, N1), ml_dtypes.bfloat16),
                    np.zeros((T, N2), ml_dtypes.bfloat16))
        return estimate(two_weights.last_record, params={"l2": {"enabled": True, "size_bytes": 256 * 1024}})

    small_hits = lambda e: sum(t.l2_hits for t in e.tasks if t.label == "small")  # noqa: E731
    cached, bypass = kernel(False), kernel(True)
    assert small_hits(bypass) > small_hits(cached)


def test_unroll_factor_changes_task_granularity():
    """u=16 gives 4 roots of 16 rows, u=64 one root of 64 rows: fewer, bigger tasks (PyPTO: 96 -> 48 AIC
    tasks at T=128, with cube_l1_reuse {-1:2})."""
    small = estimate(record(T=64, u=16, passes={"cube_l1_reuse_setting": {-1: 2}}))
    big = estimate(record(T=64, u=64, passes={"cube_l1_reuse_setting": {-1: 2}}))
    assert small.summary()["roots"] == 5 and big.summary()["roots"] == 2
    assert kinds(big)["AIC"] < kinds(small)["AIC"]
    assert max(t.duration for t in big.tasks if t.kind == "AIC") > max(t.duration for t in small.tasks if t.kind == "AIC")
    assert big.e2e_us != small.e2e_us


@pytest.mark.parametrize("option", [{"auto_mix_partition": 1}, {"sg_set_ooo_scope": 5}])
def test_cv_mix_only_options_have_no_effect_on_a2a3(option):
    plain = estimate(record(T=32))
    with pytest.warns(pypto.PtoSimWarning, match="no effect"):
        mixed = estimate(record(T=32, passes=option))
    assert mixed.e2e_cycles == plain.e2e_cycles
    assert any("no effect on a2a3" in n and next(iter(option)) in n for n in mixed.summary()["notes"])


def test_cost_coefficients_are_profile_data():
    c = CostParams.from_profile(load_platform("a2a3")).cost
    assert (c.sched.resolve_cycles, c.sched.completion_cycles, c.sched.scheduler_cycles, c.sched.aicpu_count) == (390, 240, 200, 6)
    assert c.latency.level1["A_MULACC_B"] == (3.90376, 0.0103) and c.cycles_per_us == 1800
    assert CostParams.from_profile(load_platform("ascend950")).cost.latency.freq_trans == 1600


def test_a_misspelt_override_names_the_closest_key():
    with pytest.raises(PlatformError) as info:
        CostParams.from_profile(load_platform("a2a3"), {"sched": {"task_start_step": 1}})
    assert "sched: unknown key 'task_start_step' (did you mean 'task_start_steps'?)" in str(info.value)
    with pytest.raises(PlatformError):
        estimate(record(T=4), params={"no_such_coefficient": 1})


def test_online_softmax_task_graph_is_pyptos():
    """The paged attention's tasks as PyPTO 0.2.0's SIM swimlane shows them for this very kernel
    (lens 100 and 40: 44 tasks, 56.74 µs; ptosim 56.55): per kv block q·kᵀ — the query rows, a view
    of a reshaped argument read in the same root, are no task of their own (rule copied-view-task) —
    then the first block's softmax and P·V, or a later block's rescale (with o·α), P·V and ``+ P·V``
    — the last block's ``+ P·V``, o / l and cast in one task; and a block's rescale waits for the
    previous block's o."""
    from . import paged_attention_kernel as K

    K.paged_attention(*K.inputs([100, 40]))  # 4 and 2 blocks of 32 keys, 2 kv heads each
    est = estimate(K.paged_attention.last_record)
    names = est.graph.op_names
    per_root: dict[int, list] = {}
    for t in est.work_tasks:
        per_root.setdefault(t.root, []).append((t.kind, tuple(names[i] for i in t.record_ops)))
    first = [("AIC", ("matmul",)), ("AIV", ("mul", "amax", "sub", "exp", "cast", "sum")), ("AIC", ("matmul",))]
    rescale = ("AIV", ("mul", "amax", "maximum", "sub", "exp", "cast", "sum", "sub", "exp", "mul", "add", "mul"))
    middle = [("AIC", ("matmul",)), rescale, ("AIC", ("matmul",)), ("AIV", ("add",))]
    last = middle[:-1] + [("AIV", ("add", "div", "cast"))]
    blocks = [4, 4, 2, 2]  # per (sequence, kv head)
    expect = [b for n in blocks for b in [first] + [middle] * (n - 2) + [last]]
    assert [per_root[r] for r in sorted(per_root)] == expect
    assert len(est.work_tasks) == 44  # PyPTO 0.2.0 SIM: 44 AIC + AIV tasks
    # the rescale of block j + 1 reads m and l only, yet waits for block j's o update
    tasks = {t.id: t for t in est.tasks}

    def ancestors(t, seen=None):
        seen = set() if seen is None else seen
        for p in t.preds:
            if p not in seen:
                seen.add(p)
                ancestors(tasks[p], seen)
        return seen

    roots = sorted(per_root)
    upd = next(t for t in est.work_tasks if t.root == roots[1] and t.kind == "AIV" and len(t.record_ops) == 1
               and names[t.record_ops[0]] == "add")
    nxt = next(t for t in est.work_tasks if t.root == roots[2] and names[t.record_ops[0]] == "mul")
    assert upd.id in ancestors(nxt)
    assert upd.end <= nxt.start


def test_l1_reuse_merges_along_n_when_rows_are_static():
    """q·kᵀ with 2 query rows and 128 keys in 64-wide n tiles: one row tile even at compile time, so
    cube_l1_reuse 2 merges the two n tiles (they share the q block) — PyPTO 0.2.0 ran SK-05's
    phase-2 q·kᵀ as 16 tasks at T=1 with the setting and 32 without it."""

    def run(l1):
        @pypto.frontend.jit(pass_options={"cube_l1_reuse_setting": {-1: l1}})
        def qk(q: pypto.Tensor[[2, 64], pypto.DT_BF16], k: pypto.Tensor[[128, 64], pypto.DT_BF16],
               s: pypto.Tensor[[2, 128], pypto.DT_FP32]):
            for _ in pypto.loop(1, name="L"):
                pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64])
                pypto.assemble(pypto.matmul(q, k, pypto.DT_FP32, b_trans=True), [0, 0], s)

        bf = ml_dtypes.bfloat16
        qk(np.ones((2, 64), bf), np.ones((128, 64), bf), np.zeros((2, 128), np.float32))
        return kinds(estimate(qk.last_record))["AIC"]

    assert run(1) == 2
    assert run(2) == 1


@pytest.mark.parametrize("K", [256, 1024, 4096])
@pytest.mark.parametrize("a_from_vector, tasks", [(False, 2), (True, 4)])
def test_l1_reuse_along_n_needs_an_a_read_from_gm(K, a_from_vector, tasks):
    """One static token row times a [512, K] weight in 128-wide n tiles, cube_l1_reuse 2: PyPTO 0.2.0
    ran RMSNorm + linear at unroll 1 as 4 matmul tasks on the norm's result (K=256: 11.61 us) and
    as 2 on the token row x itself (3.84 us), at K = 1024, 4096 and 16384 too (no L1 limit); the MoE
    block at unroll 1 likewise ran each expert's down projection on the activation's result as 2
    tasks, one per n tile."""

    @pypto.frontend.jit(pass_options={"cube_l1_reuse_setting": {-1: 2}})
    def proj(x: pypto.Tensor[[1, K], BF16], w: pypto.Tensor[[512, K], BF16], y: pypto.Tensor[[1, 512], BF16]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_vec_tile_shapes(1, K)
            a = pypto.cast(pypto.mul(pypto.cast(x, pypto.DT_FP32), 2.0), BF16) if a_from_vector else x
            pypto.set_cube_tile_shapes([32, 32], [256, 512], [128, 256])
            pypto.assemble(pypto.matmul(a, w, BF16, b_trans=True), [0, 0], y)

    bf = ml_dtypes.bfloat16
    proj(np.ones((1, K), bf), np.ones((512, K), bf), np.zeros((1, 512), bf))
    assert kinds(estimate(proj.last_record))["AIC"] == tasks


def test_rope_pairs_task_graph_is_pyptos():
    """RoPE on interleaved pairs as AT-04 variant B writes it: PyPTO 0.2.0 runs each product of a
    strided view (x1·cos, x2·sin, x2·cos, x1·sin) as a task of its own, then one task for both halves
    assembled into the pairs (SK-04 at T=4: 4 + 1 tasks per root and rotation)."""

    @pypto.frontend.jit()
    def rope(x: pypto.Tensor[[4, 4, 32], pypto.DT_FP32], c: pypto.Tensor[[4, 1, 16, 2], pypto.DT_FP32],
             s: pypto.Tensor[[4, 1, 16, 2], pypto.DT_FP32], out: pypto.Tensor[[4, 4, 32], pypto.DT_BF16]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_vec_tile_shapes(4, 4, 16, 2)
            x4 = pypto.reshape(pypto.mul(x, 1.0), [4, 4, 16, 2])
            half = [4, 4, 16, 1]
            x1, x2 = pypto.view(x4, half, [0, 0, 0, 0]), pypto.view(x4, half, [0, 0, 0, 1])
            c1, c2 = pypto.view(c, [4, 1, 16, 1], [0, 0, 0, 0]), pypto.view(c, [4, 1, 16, 1], [0, 0, 0, 1])
            s1, s2 = pypto.view(s, [4, 1, 16, 1], [0, 0, 0, 0]), pypto.view(s, [4, 1, 16, 1], [0, 0, 0, 1])
            o1 = pypto.sub(pypto.mul(x1, c1), pypto.mul(x2, s1))
            o2 = pypto.add(pypto.mul(x2, c2), pypto.mul(x1, s2))
            pairs = pypto.Tensor([4, 4, 16, 2], pypto.DT_BF16, "pairs")
            pypto.assemble(pypto.cast(o1, pypto.DT_BF16), [0, 0, 0, 0], pairs)
            pypto.assemble(pypto.cast(o2, pypto.DT_BF16), [0, 0, 0, 1], pairs)
            pypto.assemble(pypto.reshape(pairs, [4, 4, 32], inplace=True), [0, 0, 0], out)

    rng = np.random.default_rng(0)
    f32 = np.float32
    rope(rng.standard_normal((4, 4, 32)).astype(f32), rng.standard_normal((4, 1, 16, 2)).astype(f32),
         rng.standard_normal((4, 1, 16, 2)).astype(f32), np.zeros((4, 4, 32), ml_dtypes.bfloat16))
    est = estimate(rope.last_record)
    names = est.graph.op_names
    ops = sorted(tuple(names[i] for i in t.record_ops) for t in est.work_tasks)
    assert ops == sorted([("mul",)] * 5 + [("sub", "add", "cast", "cast")])
    # the last task holds the sub (before x2·cos and x1·sin in program order) and the add (after them):
    # it waits for all four products, as PyPTO 0.2.0's task topology has it (SK-05's K RoPE at T=16)
    last = next(t for t in est.work_tasks if len(t.record_ops) > 1)
    products = {t.id for t in est.work_tasks if len(t.record_ops) == 1 and t.record_ops[0] > min(last.record_ops) - 4}
    assert len(products) == 4 and products <= last.preds


@pytest.mark.parametrize("rows, reshape_tasks", [(8, 2), (16, 0)])
def test_reshapes_of_a_multi_block_result_are_tasks(rows, reshape_tasks):
    """SK-04 at T=16 in PyPTO 0.2.0: the heads' [T*NH, D] -> [T, NH, D] reshape and the copying
    reshape of their rotated part into pairs each run as a task when the norm making them ran in two
    row blocks; in one row block (T=4) the norm's task does both."""

    @pypto.frontend.jit()
    def heads(x: pypto.Tensor[[16, 64], pypto.DT_FP32], out: pypto.Tensor[[4, 4, 16, 2], pypto.DT_FP32]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_vec_tile_shapes(rows, 64)
            y = pypto.reshape(pypto.mul(x, 2.0), [4, 4, 64], inplace=True)
            part = pypto.view(y, [4, 4, 32], [0, 0, 32])
            pypto.set_vec_tile_shapes(4, 4, 16, 2)
            pairs = pypto.reshape(part, [4, 4, 16, 2])
            pypto.assemble(pypto.mul(pairs, 3.0), [0, 0, 0, 0], out)

    heads(np.ones((16, 64), np.float32), np.zeros((4, 4, 16, 2), np.float32))
    est = estimate(heads.last_record)
    names = est.graph.op_names
    assert sum(all(names[i] == "reshape" for i in t.record_ops) for t in est.work_tasks) == reshape_tasks


def test_row_offsets_of_nd_boxes_flatten_the_leading_dims():
    from ptosim.cost.lower import row_offset as _row_offset

    assert _row_offset((3, 2, 0), (8, 16, 128)) == 3 * 16 + 2
    assert _row_offset((5, 0), (64, 128)) == 5
    assert _row_offset((1, 2, 3, 0), (4, 5, 6, 7)) == (1 * 5 + 2) * 6 + 3
    assert _row_offset((0,), (9,)) == 0


def test_a_read_waits_for_writes_through_nested_assembles():
    """A head's rows assembled into a named buffer that is assembled into the output (SK-05's q via
    q_tmp): a later loop reading the output waits for the writer (it did not, and SK-05's phase 2
    started at 0 µs)."""

    @pypto.frontend.jit()
    def two_phase(x: pypto.Tensor[[4, 2, 64], pypto.DT_FP32], y: pypto.Tensor[[4, 2, 64], pypto.DT_FP32],
                  z: pypto.Tensor[[8, 64], pypto.DT_FP32]):
        for t in pypto.loop(4, name="P1", idx_name="t"):
            pypto.set_vec_tile_shapes(1, 2, 64)
            part = pypto.view(x, [1, 2, 64], [t, 0, 0])
            buf = pypto.Tensor([1, 2, 64], pypto.DT_FP32, "buf")
            pypto.assemble(pypto.mul(part, 2.0), [0, 0, 0], buf)
            pypto.assemble(buf, [t, 0, 0], y)
        y2 = pypto.reshape(y, [8, 64], inplace=True)
        for r in pypto.loop(2, name="P2", idx_name="r"):
            pypto.set_vec_tile_shapes(4, 64)
            pypto.assemble(pypto.add(pypto.view(y2, [4, 64], [r * 4, 0]), 1.0), [r * 4, 0], z)

    two_phase(np.ones((4, 2, 64), np.float32), np.zeros((4, 2, 64), np.float32), np.zeros((8, 64), np.float32))
    est = estimate(two_phase.last_record)
    names = est.graph.op_names
    tasks = {t.id: t for t in est.tasks}

    def ancestors(t):
        seen, todo = set(), list(t.preds)
        while todo:
            p = todo.pop()
            if p not in seen:
                seen.add(p)
                todo.extend(tasks[p].preds)
        return seen

    writers = [t for t in est.work_tasks if any(names[i] == "mul" for i in t.record_ops)]
    readers = [t for t in est.work_tasks if any(names[i] == "add" for i in t.record_ops)]
    assert len(writers) == 4 and len(readers) == 2
    # rows 0-3 of z read tokens 0 and 1 of y, rows 4-7 tokens 2 and 3
    assert {w.root for w in writers if w.id in ancestors(readers[0])} == {writers[0].root, writers[1].root}
    assert {w.root for w in writers if w.id in ancestors(readers[1])} == {writers[2].root, writers[3].root}


def _chains(*durations_us: tuple[float, ...]):
    """Independent chains of tasks (kinds AIV/AIC alternate as given), scheduled on the a2a3 profile;
    returns each task's start in us from the first start."""
    from ptosim.cost.schedule import schedule
    from ptosim.cost.tasks import Task
    prof = load_platform("a2a3")
    cp = CostParams.from_profile(prof)
    tasks: list[Task] = []
    for chain in durations_us:
        prev = None
        for kind, us in chain:
            t = Task(len(tasks), kind, "x", 0, len(tasks))
            t.duration = round(us * 1800)
            t.op_times = [(t.duration * i // 8, t.duration * (i + 1) // 8) for i in range(8)]  # tile-op steps
            if prev is not None:
                t.preds.add(prev.id)
                prev.succs.append(t.id)
            tasks.append(t)
            prev = t
    schedule(tasks, [[t.id for t in tasks]], prof.aic, prof.aiv, cp)
    t0 = min(t.start for t in tasks)
    return [round(cp.us(t.start - t0), 2) for t in tasks]


def test_a_resolve_end_is_a_scheduler_step():
    """PyPTO asks for a step when a poll's first resolve ends: with no core busy, the ready task reaches
    the global queue there, and the next scheduler to dispatch takes it. Four AIV -> AIC pairs
    (SK-03 norm -> matmul at T=4); PyPTO 0.2.0's SIM started the matmuls at 3.20, 4.51, 4.62, 4.73 us."""
    starts = _chains(*[(("AIV", 1.155), ("AIC", 2.518))] * 4)
    assert starts[1::2] == pytest.approx([3.20, 4.51, 4.62, 4.73], abs=0.02)


def test_a_step_asked_for_at_a_poll_is_lost_to_an_earlier_one():
    """PyPTO keeps one "next cycle": a step in between (another scheduler's dispatch) cancels the one the
    resolve asked for, and the ready task waits for the next step. SK-03 T=1 (gamma prep -> norm ->
    matmul); PyPTO 0.2.0's SIM started them at 0, 3.20 and 8.33 us."""
    starts = _chains((("AIV", 0.984), ("AIV", 1.792), ("AIC", 2.518)))
    assert starts == pytest.approx([0.0, 3.20, 8.33], abs=0.02)


def test_a_consumer_on_whole_blocks_of_its_producer_shares_its_task():
    """RMSNorm tiled [4, K] feeding a per-row scale tiled [8, K]: PyPTO 0.2.0 runs two norm tiles and the
    scale tile that reads them as one task (SK-03 INT8 at T=128: 16 such tasks, not 32 + 16); inside
    it the norm still runs per 4-row tile, and the scale waits for both."""
    K, N = 256, 128

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
    def nested(x: pypto.Tensor[[pypto.DYNAMIC, K], BF16], weight: pypto.Tensor[[N, K], BF16],
               y: pypto.Tensor[[pypto.DYNAMIC, N], BF16]):
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[32]):
            xt = pypto.view(x, [tile, K], [off, 0])
            pypto.set_semantic_label("norm")
            pypto.set_vec_tile_shapes(4, K)
            xf = pypto.cast(xt, FP32)
            r = pypto.rsqrt(pypto.add(pypto.mul(pypto.sum(pypto.mul(xf, xf), dim=-1, keepdim=True), 1.0 / K), 1e-6))
            normed = pypto.mul(xf, r)
            pypto.set_semantic_label("scale")
            pypto.set_vec_tile_shapes(8, K)
            h = pypto.cast(pypto.mul(normed, pypto.amax(pypto.abs(normed), -1, keepdim=True)), BF16)
            pypto.set_semantic_label("linear")
            pypto.set_cube_tile_shapes(*[list(v) for v in CUBE])
            pypto.assemble(pypto.matmul(h, weight, BF16, b_trans=True), [off, 0], y)

    rng = np.random.default_rng(0)
    bf = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    nested(bf(32, K), bf(N, K), np.zeros((32, N), ml_dtypes.bfloat16))
    est = estimate(nested.last_record)
    vec = [t for t in est.tasks if t.kind == "AIV"]
    assert len(vec) == 32 // 8
    task = vec[0]
    assert [op.shape for op in task.ops if op.name == "SQRT"] == [(4, 1), (4, 1)]  # the norm per 4-row tile
    assert [op.shape for op in task.ops if op.name == "ROWMAX_SINGLE"] == [(8, 1)]  # the scale per 8 rows
    muls = [i for i, op in enumerate(task.ops) if op.name == "MUL" and op.shape == (4, K)]
    first_on_8 = next(op for op in task.ops if op.name == "ABS")
    assert first_on_8.shape == (8, K) and set(muls[-2:]) <= set(first_on_8.deps)  # it waits for both norm tiles


def test_a_root_of_reshapes_only_is_a_sync_task_ahead_of_its_readers():
    """PyPTO 0.2.0 gives a root with no task of its own (SK-01's per-sequence reshape of q) a sync task
    whose successors are the tasks that read what it made: 16 "sequence" HUBs of 2 query copies each
    at T=16. The paged attention's reshape of q before its loops: one HUB ahead of every q·kᵀ, which
    reads a view of it (PyPTO 0.2.0's topology for this kernel: task 0, a HUB, whose 12 successors
    are the first task of each kv block's root)."""
    from . import paged_attention_kernel as K

    K.paged_attention(*K.inputs([100, 40]))
    est = estimate(K.paged_attention.last_record)
    first = {}
    for t in est.work_tasks:
        first.setdefault(t.root, t)
    qks = [t for t in first.values() if t.kind == "AIC"]
    hubs = [t for t in est.tasks if t.kind == "HUB" and {q.id for q in qks} <= set(t.succs)]
    assert len(qks) == 12 and len(hubs) == 1 and not hubs[0].preds and len(hubs[0].succs) == 12
    assert all(q.start >= hubs[0].end for q in qks)


def _norm_linear_epilogue(setting, scale_per_row=False, rows=4):
    """RMSNorm [rows, K] -> matmul -> epilogue [8, N] at T = 128: SK-03 with a bias, or (scale_per_row)
    with a per-row scale from the norm stage as INT8's dequant has."""
    K, N = 256, 128

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128},
                        pass_options={"vec_nbuffer_setting": setting})
    def nle(x: pypto.Tensor[[pypto.DYNAMIC, K], BF16], weight: pypto.Tensor[[N, K], BF16],
            bias: pypto.Tensor[[N], BF16], y: pypto.Tensor[[pypto.DYNAMIC, N], BF16]):
        pypto.set_vec_tile_shapes(1, N)
        bf = pypto.cast(pypto.reshape(bias, [1, N]), FP32)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[128]):
            xt = pypto.view(x, [tile, K], [off, 0])
            pypto.set_semantic_label("norm")
            pypto.set_vec_tile_shapes(rows, K)
            xf = pypto.cast(xt, FP32)
            ss = pypto.sum(pypto.mul(xf, xf), dim=-1, keepdim=True)
            h = pypto.cast(pypto.mul(xf, pypto.rsqrt(pypto.add(pypto.mul(ss, 1.0 / K), 1e-6))), BF16)
            pypto.set_semantic_label("linear")
            pypto.set_cube_tile_shapes(*[list(v) for v in CUBE])
            acc = pypto.matmul(h, weight, FP32, b_trans=True)
            pypto.set_semantic_label("epilogue")
            pypto.set_vec_tile_shapes(8, N)
            out = pypto.add(acc, bf)
            if scale_per_row:
                out = pypto.mul(out, ss)
            pypto.assemble(pypto.cast(out, BF16), [off, 0], y)

    rng = np.random.default_rng(0)
    b = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    nle(b(128, K), b(N, K), b(N), np.zeros((128, N), ml_dtypes.bfloat16))
    return Counter(t.label for t in estimate(nle.last_record).work_tasks)


def test_vec_nbuffer_hash_orders_count_from_the_end_of_the_root():
    """PyPTO 0.2.0 on SK-03 with a bias at T=128: {0: 2} merges the epilogue (8 tasks, the norm 32),
    {1: 2} the norm (16 tasks, the epilogue 16)."""
    first = _norm_linear_epilogue({0: 2})
    second = _norm_linear_epilogue({1: 2})
    assert (first["norm"], first["epilogue"]) == (32, 8)
    assert (second["norm"], second["epilogue"]) == (16, 16)


def test_vec_nbuffer_leaves_tasks_fed_by_their_own_vector_task_alone():
    """SK-03 INT8 at T=128 (8-row norm + quant tiles, 16-row matmul tiles): {0: 2}, {1: 2} and {2: 2}
    left all 35 tasks as they were. A norm row block feeds its m tile and its own epilogue block (24
    consumers for 16 instances, no producer: the input map, one instance an entry); an epilogue block
    reads its m tile and its own norm block (24 producers, no consumer: the output map)."""
    for setting in ({0: 2}, {1: 2}, {2: 2}):
        got = _norm_linear_epilogue(setting, scale_per_row=True, rows=8)
        assert (got["norm"], got["epilogue"]) == (16, 16)


def _ffn_int8_tasks(T: int = 128) -> Counter:
    """The INT8 FFN (W8A8, H=256, I=512, unroll 128) with SK-06's options, tasks per label at T."""
    H, I = 256, 512
    INT8, INT32, FP16 = pypto.DT_INT8, pypto.DT_INT32, pypto.DT_FP16

    def quant(xf, tile):  # per-row symmetric INT8: the values and the dequant scale
        qs = pypto.div(pypto.full([tile, 1], 127.0, FP32), pypto.amax(pypto.abs(xf), -1, keepdim=True))
        xi = pypto.cast(pypto.mul(xf, qs), INT32, mode=pypto.CastMode.CAST_RINT)
        q = pypto.cast(pypto.cast(xi, FP16, mode=pypto.CastMode.CAST_ROUND), INT8, mode=pypto.CastMode.CAST_TRUNC,
                       satmode=pypto.SaturationMode.ON)
        return q, pypto.div(pypto.full([tile, 1], 1.0, FP32), qs)

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128, "device_sched_mode": 3},
                        pass_options={"vec_nbuffer_setting": {-1: 2, 0: 4}, "cube_l1_reuse_setting": {-1: 2}})
    def ffn(x: pypto.Tensor[[pypto.DYNAMIC, H], BF16], wg: pypto.Tensor[[I, H], INT8], sg: pypto.Tensor[[I], FP32],
            wu: pypto.Tensor[[I, H], INT8], su: pypto.Tensor[[I], FP32], wd: pypto.Tensor[[H, I], INT8],
            sd: pypto.Tensor[[H], FP32], y: pypto.Tensor[[pypto.DYNAMIC, H], BF16]):
        sg2, su2, sd2 = pypto.reshape(sg, [1, I], inplace=True), pypto.reshape(su, [1, I], inplace=True), \
            pypto.reshape(sd, [1, H], inplace=True)
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="FFN_LOOP", idx_name="off", unroll_list=[128, 32, 8, 1]):
            pypto.set_semantic_label("act_quant")
            pypto.set_vec_tile_shapes(8, 256)
            xq, xs = quant(pypto.cast(pypto.view(x, [tile, H], [off, 0]), FP32), tile)
            pypto.set_semantic_label("gate_up")
            pypto.set_cube_tile_shapes([128, 128], [128, 256], [128, 128])
            gi, ui = pypto.matmul(xq, wg, INT32, b_trans=True), pypto.matmul(xq, wu, INT32, b_trans=True)
            pypto.set_semantic_label("dequant")
            pypto.set_vec_tile_shapes(8, 512)
            g = pypto.mul(pypto.mul(pypto.cast(gi, FP32), xs), sg2)
            u = pypto.mul(pypto.mul(pypto.cast(ui, FP32), xs), su2)
            pypto.set_semantic_label("act")
            pypto.set_vec_tile_shapes(64, 128)
            a = pypto.mul(pypto.div(g, pypto.add(pypto.exp(pypto.neg(g)), 1.0)), u)
            pypto.set_semantic_label("down_quant")
            pypto.set_vec_tile_shapes(8, 512)
            aq, as_ = quant(a, tile)
            pypto.set_semantic_label("down")
            yi = pypto.matmul(aq, wd, INT32, b_trans=True)
            pypto.set_semantic_label("epilogue")
            pypto.set_vec_tile_shapes(8, 256)
            pypto.assemble(pypto.cast(pypto.mul(pypto.mul(pypto.cast(yi, FP32), as_), sd2), BF16), [off, 0], y)

    rng = np.random.default_rng(0)
    w = lambda *s: rng.integers(-127, 128, s).astype(np.int8)  # noqa: E731
    sc = lambda n: rng.uniform(1e-3, 2e-3, n).astype(np.float32)  # noqa: E731
    ffn(rng.uniform(-1, 1, (T, H)).astype(ml_dtypes.bfloat16), w(I, H), sc(I), w(I, H), sc(I), w(H, I), sc(H),
        np.zeros((T, H), ml_dtypes.bfloat16))
    est = estimate(ffn.last_record)
    return Counter(t.label for t in est.work_tasks), est


def test_vec_nbuffer_merges_only_instances_sharing_a_neighbour():
    """PyPTO 0.2.0's SIM on the INT8 FFN at T=128 with {-1: 2, 0: 4}: the dequant row blocks (fed by the
    quant task of their rows and by the gate/up tiles, feeding the act tasks of their 64 rows) merge
    pairwise among those of one act task, 32 -> 16; act 8 -> 4 (each feeds the down-quant rows of its
    block), down-quant 16 -> 8; act_quant (no producer subgraph: x from GM) and the epilogue (order 0,
    count 4, but no consumer subgraph) stay 16 each: 70 tasks."""
    got, _ = _ffn_int8_tasks()
    assert got == {"act_quant": 16, "gate_up": 8, "dequant": 16, "act": 4, "down_quant": 8, "down": 2, "epilogue": 16}
    assert sum(got.values()) == 70


def test_a_join_waits_through_one_sync_task_for_what_a_group_shares():
    """PyPTO 0.2.0's SIM on the INT8 FFN at T=128: one sync task between the 16 quant tasks and the 8
    gate/up tiles (two matmuls), one between those tiles and the dequant tasks, each of which still
    waits for its own rows' quant task directly."""
    _, est = _ffn_int8_tasks()
    tasks = est.tasks
    by_label = lambda lab: [t for t in tasks if t.label == lab]  # noqa: E731
    hubs = {p for t in by_label("gate_up") for p in t.preds}
    assert len(hubs) == 1 and tasks[hubs.pop()].kind == "HUB"
    for t in by_label("dequant"):
        kinds_of = sorted(tasks[p].label or tasks[p].kind for p in t.preds)
        assert kinds_of.count("act_quant") == 1 and "gate_up" not in kinds_of


def _experts(setting, E: int = 8) -> Counter:
    """A statically unrolled expert loop at T=16 (one row block per expert): each expert's vector task
    reads its own up-projection and a per-row value every expert shares, and feeds its own down
    projection and the shared combine; tasks per label."""
    H, N = 64, 64

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128}, pass_options={"vec_nbuffer_setting": setting})
    def moe(x: pypto.Tensor[[pypto.DYNAMIC, H], BF16], w1: pypto.Tensor[[E * N, H], BF16],
            w2: pypto.Tensor[[E * H, N], BF16], y: pypto.Tensor[[pypto.DYNAMIC, H], BF16]):
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[16]):
            xt = pypto.view(x, [tile, H], [off, 0])
            pypto.set_vec_tile_shapes(16, H)
            pypto.set_cube_tile_shapes([16, 16], [64, 64], [64, 64])
            pypto.set_semantic_label("scale")
            xs = pypto.amax(pypto.abs(pypto.cast(xt, FP32)), -1, keepdim=True)
            acc = pypto.full([tile, H], 0.0, FP32)
            for e in range(E):
                pypto.set_semantic_label("up")
                h = pypto.matmul(xt, pypto.view(w1, [N, H], [e * N, 0]), FP32, b_trans=True)
                pypto.set_semantic_label("expert")
                hs = pypto.div(h, xs)
                es = pypto.amax(pypto.abs(hs), -1, keepdim=True)
                q = pypto.cast(hs, BF16)
                pypto.set_semantic_label("down")
                o = pypto.matmul(q, pypto.view(w2, [H, N], [e * H, 0]), FP32, b_trans=True)
                pypto.set_semantic_label("combine")
                acc = pypto.add(acc, pypto.mul(o, es))
            pypto.assemble(pypto.cast(acc, BF16), [off, 0], y)

    rng = np.random.default_rng(0)
    b = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    moe(b(16, H), b(E * N, H), b(E * H, N), np.zeros((16, H), ml_dtypes.bfloat16))
    est = estimate(moe.last_record)
    return Counter(t.label for t in est.work_tasks), est


def test_vec_nbuffer_merges_instances_of_one_hash_across_groups():
    """One expert's vector task per unrolled expert, each a group of one row block: alike, they are one
    hash, and {-1: 4} merges them four at a time among those sharing the per-row value (PyPTO 0.2.0's
    SIM on a MoE with INT8 experts: 16 such tasks ran as 4)."""
    alone, _ = _experts({-1: 1})
    merged, est = _experts({-1: 4})
    assert alone["expert"] == 8 and merged["expert"] == 2
    assert "vec-merge-across-same-hash" in est.rules_fired
    assert sum(merged.values()) == sum(alone.values()) - 6


def test_casts_of_two_arguments_joined_by_an_op_are_tasks_of_their_own():
    """SK-05's add_residual, x + residual cast to FP32 first: PyPTO 0.2.0 runs each cast as a task of its
    own (8 [1, 256] FP32 tasks at T=4) and the add with the norm after it as one; a norm's own chain
    (x · rstd, one argument) stays one task."""
    H = 256

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128})
    def add_norm(x: pypto.Tensor[[pypto.DYNAMIC, H], BF16], residual: pypto.Tensor[[pypto.DYNAMIC, H], BF16],
                 y: pypto.Tensor[[pypto.DYNAMIC, H], BF16]):
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[4]):
            pypto.set_vec_tile_shapes(4, H)
            pypto.set_semantic_label("add")
            s = pypto.add(pypto.cast(pypto.view(x, [tile, H], [off, 0]), FP32),
                          pypto.cast(pypto.view(residual, [tile, H], [off, 0]), FP32))
            pypto.set_semantic_label("norm")
            r = pypto.rsqrt(pypto.add(pypto.mul(pypto.sum(pypto.mul(s, s), dim=-1, keepdim=True), 1.0 / H), 1e-6))
            pypto.assemble(pypto.cast(pypto.mul(s, r), BF16), [off, 0], y)

    rng = np.random.default_rng(0)
    b = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    add_norm(b(4, H), b(4, H), np.zeros((4, H), ml_dtypes.bfloat16))
    est = estimate(add_norm.last_record)
    names = est.graph.op_names
    assert sorted(tuple(names[i] for i in t.record_ops) for t in est.work_tasks) == [
        ("add", "mul", "sum", "mul", "add", "rsqrt", "mul", "cast"), ("cast",), ("cast",)]


def test_a_root_start_sync_task_precedes_only_the_readers_nothing_else_leads_to():
    """PyPTO 0.2.0's root-start sync task has as successors only the readers of the root's views that no
    other reader leads to (SK-04 at T=1: 7, the tasks without another predecessor); an implied edge
    would cost its resolver ``resolve_cycles`` more."""
    from ptosim.cost.tasks import Aliases, Task, sync_tasks

    box = (0, 1, 0, 64)
    a, b, c = (Task(i, "AIV", "x", 0, i, reads=[(100, box, True)]) for i in range(3))
    b.preds.add(a.id)  # b reads the view and a's result
    tasks = [a, b, c]
    sync_tasks(tasks, [{"views": True, "assembles": False, "loops": [], "made": set()}], Aliases([], {}))
    hub = next(t for t in tasks if t.kind == "HUB")
    assert sorted(hub.succs) == [a.id, c.id] and b.preds == {a.id}


def test_a_task_start_steps_the_device_once_per_tile_op():
    """A core starting a task steps the simulation once per tile op on consecutive cycles as it allocates
    and issues them (PyPTO 0.2.0's ready-queue counters at SK-04 T=1: five tasks reach the global queue
    within 3 cycles of an AIC task's start, so the sync task's 7 successors start 0.11 us apart); each
    step moves a task of every scheduler's local queue to the global one."""
    from ptosim.cost.lower import TileOp
    from ptosim.cost.schedule import _DeviceRun, _owners
    from ptosim.cost.tasks import Task

    prof = load_platform("a2a3")

    def run(steps: int) -> tuple[list[int], int]:
        cp = CostParams.from_profile(prof, {"sched": {"task_start_steps": steps}})
        tasks = []
        for i in range(6):
            t = Task(i, "AIV", "x", 0, i, ops=[TileOp("COPY_IN", "MTE_IN", 100, (), (1, 64), 128)] * 9)
            t.duration, t.op_times = 9000, [(1000 * j, 1000 * (j + 1)) for j in range(9)]
            tasks.append(t)
        cpus = _owners(prof.aic, prof.aiv, cp.cost.sched.aicpu_count)
        dev = _DeviceRun(tasks, [0], cpus, cp, 0, 0)
        for i in range(1, 6):  # a backlog another scheduler resolved
            dev.enqueue(1, 0, i)
        dev.dispatch(0, 0)
        start = tasks[0].start
        while dev.steps and dev.steps[0][0] <= start + 8:  # the steps the running task asked for
            now, _s = heapq.heappop(dev.steps)
            dev.step(now)
        return sorted(t for t, _s in dev.steps if t < start + 1000), len(dev.ready["AIV"])

    assert run(0) == ([], 0)
    assert run(64)[1] == 5  # the whole backlog reached the global queue within 5 cycles of the start


@pytest.mark.parametrize("inplace, copies, cast, T", [(False, 2, False, 1), (True, 0, False, 1), (False, 2, True, 1),
                                                     (False, 2, False, 4)])
def test_a_copying_reshape_assembled_into_a_buffer_is_copied_per_head(inplace, copies, cast, T):
    """SK-05's v: ``reshape(qkv[:, 2N:], [T, NKV, D])`` (not in place) assembled into ``v_tmp``. PyPTO 0.2.0
    copies it in a task per index of the middle dims, two for two KV heads whether the root has one token
    or four (0.96 us each at T=1, between the matmul and the cache write; SK-05 with unroll 4: 2 per root,
    not 8). Reshaped in place, the buffer is the matmul's result and no copy runs. A cast before the
    reshape (the FP32-output variant) runs ahead of the copies, not with the buffer's reader after them."""
    K, N, NKV, D = 128, 128, 2, 64

    @pypto.frontend.jit()
    def v_copy(x: pypto.Tensor[[T, K], BF16], w: pypto.Tensor[[2 * N, K], BF16], out: pypto.Tensor[[T, N], BF16]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_cube_tile_shapes(*[list(v) for v in CUBE])
            qkv = pypto.matmul(x, w, BF16, b_trans=True)
            v = pypto.view(qkv, [T, N], [0, N])
            if cast:
                pypto.set_vec_tile_shapes(T, N)
                v = pypto.cast(v, FP32)
            v_t = pypto.reshape(v, [T, NKV, D], inplace=inplace)
            v_tmp = pypto.Tensor([T, NKV, D], FP32 if cast else BF16, "v_tmp")
            pypto.assemble(v_t, [0, 0, 0], v_tmp)
            pypto.set_vec_tile_shapes(T, N)
            pypto.assemble(pypto.cast(pypto.mul(pypto.reshape(v_tmp, [T, N], inplace=True), 2.0), BF16), [0, 0], out)

    rng = np.random.default_rng(0)
    b = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    v_copy(b(T, K), b(2 * N, K), np.zeros((T, N), ml_dtypes.bfloat16))
    est = estimate(v_copy.last_record)
    names = est.graph.op_names
    copy = [t for t in est.work_tasks if [names[i] for i in t.record_ops] == ["assemble"]]
    v_mm = {t.id for t in est.work_tasks if t.kind == "AIC" and t.writes[0][1][2] >= N}  # v's columns
    reader = next(t for t in est.work_tasks if "mul" in [names[i] for i in t.record_ops])
    assert len(copy) == copies and len(v_mm) == 1
    if cast:
        casting = next(t for t in est.work_tasks if [names[i] for i in t.record_ops] == ["cast"])
        assert casting.preds == v_mm and all(c.preds == {casting.id} for c in copy)
    else:
        assert all(c.preds == v_mm for c in copy)
    if copies:
        assert reader.preds == {c.id for c in copy}


def _task_ops(est) -> list[tuple[str, ...]]:
    names = est.graph.op_names
    return sorted(tuple(names[i] for i in t.record_ops) for t in est.work_tasks)


@pytest.mark.parametrize("inplace", [True, False])
def test_slices_of_a_vector_result_reshaped_for_a_norm_share_its_task(inplace):
    """SK-05 with a vector epilogue on the matmul (AT-11's INT8 dequant, AT-10's bias): q and k are column
    views of its result reshaped to one row per head. PyPTO 0.2.0 runs the epilogue, q_norm and k_norm as
    one task per token (5.87 us at AT-11 T=1, 5.09 us with the bias; the same task counts at T = 1, 4, 16,
    128); ptosim ran three. A slice read by a vector op as it is still starts a task of its own."""
    K, NQ, NKV, D = 128, 2, 1, 64

    @pypto.frontend.jit()
    def qk_norm(x: pypto.Tensor[[1, K], BF16], w: pypto.Tensor[[(NQ + NKV) * D, K], BF16],
                bias: pypto.Tensor[[1, (NQ + NKV) * D], FP32], q: pypto.Tensor[[NQ, D], FP32],
                k: pypto.Tensor[[NKV, D], FP32], k_raw: pypto.Tensor[[1, NKV * D], FP32]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_cube_tile_shapes(*[list(v) for v in CUBE])
            acc = pypto.matmul(x, w, FP32, b_trans=True)
            pypto.set_vec_tile_shapes(8, (NQ + NKV) * D)
            qkv = pypto.add(acc, bias)
            q_rows = pypto.reshape(pypto.view(qkv, [1, NQ * D], [0, 0]), [NQ, D], inplace=inplace)
            k_rows = pypto.reshape(pypto.view(qkv, [1, NKV * D], [0, NQ * D]), [NKV, D], inplace=inplace)
            pypto.set_vec_tile_shapes(16, D)
            for rows, out in ((q_rows, q), (k_rows, k)):
                ss = pypto.sum(pypto.mul(rows, rows), dim=-1, keepdim=True)
                pypto.assemble(pypto.mul(rows, pypto.rsqrt(pypto.add(pypto.mul(ss, 1.0 / D), 1e-6))), [0, 0], out)
            pypto.set_vec_tile_shapes(8, NKV * D)
            pypto.assemble(pypto.mul(pypto.view(qkv, [1, NKV * D], [0, NQ * D]), 2.0), [0, 0], k_raw)

    rng = np.random.default_rng(0)
    b = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    z = lambda *s: np.zeros(s, np.float32)  # noqa: E731
    qk_norm(b(1, K), b((NQ + NKV) * D, K), rng.uniform(-1, 1, (1, (NQ + NKV) * D)).astype(np.float32),
            z(NQ, D), z(NKV, D), z(1, NKV * D))
    norm = ("mul", "sum", "mul", "add", "rsqrt", "mul")
    assert [o for o in _task_ops(estimate(qk_norm.last_record)) if o != ("matmul",)] == [
        ("add",) + norm + norm, ("mul",)]


def test_cache_scatters_of_one_slot_copy_share_a_task_and_chain_token_to_token():
    """SK-05's cache writes: K's two RoPE halves assembled into ``k_tmp`` and scattered, and v scattered,
    both at a copy of the token's slot. PyPTO 0.2.0 runs them as one task per token (6.28 us), each waiting
    for the previous token's, and the attention reading the cache waits for the last one only (its task
    topology at T=16: 3 successors per scatter task, 159 for the last). Q's halves, only assembled out,
    stay two tasks (1.79 us each). ptosim split the scatters, joined the halves, and gave the reader an
    edge from every token's scatter: 1264 to the attention's q·kᵀ at T=16, each costing its resolver."""
    T, D, NB = 4, 64, 16

    @pypto.frontend.jit()
    def cache(x: pypto.Tensor[[T, D], FP32], slots: pypto.Tensor[[T], pypto.DT_INT32],
              q: pypto.Tensor[[T, D], FP32], k_cache: pypto.Tensor[[NB, D], FP32],
              v_cache: pypto.Tensor[[NB, D], FP32], kv_sum: pypto.Tensor[[1, D], FP32]):
        for t in pypto.loop(T, name="TOK"):
            pypto.set_vec_tile_shapes(8, D // 2)
            x1, x2 = pypto.view(x, [1, D // 2], [t, 0]), pypto.view(x, [1, D // 2], [t, D // 2])
            q_tmp = pypto.Tensor([1, D], FP32, "q_tmp")
            pypto.assemble(pypto.mul(x1, 2.0), [0, 0], q_tmp)
            pypto.assemble(pypto.mul(x2, 3.0), [0, D // 2], q_tmp)
            pypto.assemble(q_tmp, [t, 0], q)
            k_tmp = pypto.Tensor([1, D], FP32, "k_tmp")
            pypto.assemble(pypto.mul(x1, 4.0), [0, 0], k_tmp)
            pypto.assemble(pypto.mul(x2, 5.0), [0, D // 2], k_tmp)
            slot = pypto.reshape(pypto.view(slots, [1], [t]), [1, 1])
            pypto.set_vec_tile_shapes(8, D)
            k_cache.move(pypto.scatter_update(k_cache, -2, slot, pypto.reshape(k_tmp, [1, D], inplace=True)))
            v_cache.move(pypto.scatter_update(v_cache, -2, slot, pypto.mul(pypto.view(x, [1, D], [t, 0]), 6.0)))
        for _ in pypto.loop(1, name="READ"):
            pypto.set_vec_tile_shapes(NB, D)
            pypto.assemble(pypto.sum(pypto.add(k_cache, v_cache), dim=0, keepdim=True), [0, 0], kv_sum)

    rng = np.random.default_rng(0)
    z = lambda *s: np.zeros(s, np.float32)  # noqa: E731
    cache(rng.standard_normal((T, D)).astype(np.float32), np.arange(T, dtype=np.int32) * 3, z(T, D),
          z(NB, D), z(NB, D), z(1, D))
    est = estimate(cache.last_record)
    names = est.graph.op_names
    ops = lambda t: tuple(names[i] for i in t.record_ops)  # noqa: E731
    per_token = Counter(ops(t) for t in est.work_tasks if t.root < T)
    assert per_token[("mul",)] == 2 * T  # Q's halves
    assert per_token[("mul", "mul", "scatter_update", "mul", "scatter_update")] == T
    scatters = sorted((t for t in est.work_tasks if "scatter_update" in ops(t)), key=lambda t: t.root)
    for prev, t in zip(scatters, scatters[1:]):
        assert prev.id in t.preds and not {s.id for s in scatters} - {prev.id} & t.preds
    reader = next(t for t in est.work_tasks if "sum" in ops(t))
    assert reader.preds & {s.id for s in scatters} == {scatters[-1].id}


def test_a_constant_joins_its_reader_after_a_matmul():
    """AT-11's activation quant after a projection (SK-04's q_norm_proj: 127 / amax with ``full``'s 127):
    a ``full`` reads nothing, so no matmul lies on its way, and PyPTO 0.2.0 fills it in its reader's task
    (19 AIV tasks at SK-04 INT8 T=1, where ptosim had two more, one per constant)."""
    K, N = 128, 128

    @pypto.frontend.jit()
    def quant(x: pypto.Tensor[[1, K], BF16], w: pypto.Tensor[[N, K], BF16], s: pypto.Tensor[[1, 1], FP32]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_cube_tile_shapes(*[list(v) for v in CUBE])
            y = pypto.matmul(x, w, FP32, b_trans=True)
            pypto.set_vec_tile_shapes(1, N)
            mx = pypto.amax(pypto.abs(y), -1, keepdim=True)
            pypto.assemble(pypto.div(pypto.full([1, 1], 127.0, FP32), mx), [0, 0], s)

    rng = np.random.default_rng(0)
    b = lambda *s: rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16)  # noqa: E731
    quant(b(1, K), b(N, K), np.zeros((1, 1), np.float32))
    assert _task_ops(estimate(quant.last_record)) == [("abs", "amax", "full", "div"), ("matmul",)]


@pytest.mark.parametrize("T, reshape_tasks", [(8, 1), (1, 0)])
def test_a_copying_reshape_of_a_slice_in_an_unrolled_root_is_a_task(T, reshape_tasks):
    """SK-04's kv pairs at T=16 with unroll 8: kv_norm makes [8, 64] in one [8, 64] tile, and PyPTO
    0.2.0 still runs the copying reshape of its rotated part as a task of its own (1.08 us; 52 tasks,
    ptosim had 50). A root of one token (T < 8: PyPTO runs the remainder one token at a time) leaves it
    to the norm's task."""

    @pypto.frontend.jit()
    def kv_pairs(x: pypto.Tensor[[pypto.DYNAMIC, 64], FP32], out: pypto.Tensor[[pypto.DYNAMIC, 16, 2], FP32]):
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK", idx_name="off", unroll_list=[8]):
            pypto.set_vec_tile_shapes(8, 64)
            y = pypto.mul(pypto.view(x, [tile, 64], [off, 0]), 2.0)
            pairs = pypto.reshape(pypto.view(y, [tile, 32], [0, 32]), [tile, 16, 2])
            pypto.set_vec_tile_shapes(8, 16, 2)
            pypto.assemble(pypto.mul(pairs, 3.0), [off, 0, 0], out)

    kv_pairs(np.ones((T, 64), np.float32), np.zeros((T, 16, 2), np.float32))
    assert _task_ops(estimate(kv_pairs.last_record)).count(("reshape",)) == reshape_tasks


def test_a_scatter_writes_the_cache_itself():
    """PyPTO 0.2.0 lowers scatter_update to INDEX_OUTCAST, which writes its rows to GM from UB: no
    COPY_OUT follows (SK-05's cache-write task, 6.28 us; ptosim's had a 0.17 us COPY_OUT per scatter,
    and at 6.45 us the per-token chain of them missed a scheduler round each link: x1.12 at T=128).
    The write still orders later readers of the cache after it."""
    D, NB = 64, 8

    @pypto.frontend.jit()
    def put(x: pypto.Tensor[[1, D], FP32], slots: pypto.Tensor[[1], pypto.DT_INT32],
            cache: pypto.Tensor[[NB, D], FP32], total: pypto.Tensor[[1, D], FP32]):
        for _ in pypto.loop(1, name="W"):
            pypto.set_vec_tile_shapes(8, D)
            slot = pypto.reshape(pypto.view(slots, [1], [0]), [1, 1])
            cache.move(pypto.scatter_update(cache, -2, slot, pypto.mul(x, 2.0)))
        for _ in pypto.loop(1, name="R"):
            pypto.set_vec_tile_shapes(NB, D)
            pypto.assemble(pypto.sum(cache, dim=0, keepdim=True), [0, 0], total)

    put(np.ones((1, D), np.float32), np.array([3], np.int32), np.zeros((NB, D), np.float32), np.zeros((1, D), np.float32))
    est = estimate(put.last_record)
    names = est.graph.op_names
    writer = next(t for t in est.work_tasks if "scatter_update" in [names[i] for i in t.record_ops])
    reader = next(t for t in est.work_tasks if "sum" in [names[i] for i in t.record_ops])
    assert [op.name for op in writer.ops][-1] == "SCATTER_UPDATE"
    assert "COPY_OUT" not in [op.name for op in writer.ops]
    assert writer.id in reader.preds


# --- read from the FFN and MoE kernels (held out until then: see the rules' read_from) -------------------


def _per_label(est) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in est.work_tasks:
        out[f"{t.label}/{t.kind}"] = out.get(f"{t.label}/{t.kind}", 0) + 1
    return out


def _gate_up(l1: int, same: bool = True, int8: bool = False):
    """x [1, 256] times two [128, 256] weights (gate, up) and a [64, 256] one (a router), under
    cube_l1_reuse_setting {-1: l1}; ``same=False`` gives up other n tiles."""
    import ml_dtypes

    BF = pypto.DT_INT8 if int8 else pypto.DT_BF16
    OUT = pypto.DT_INT32 if int8 else pypto.DT_FP32

    @pypto.frontend.jit(pass_options={"cube_l1_reuse_setting": {-1: l1}})
    def k(x: pypto.Tensor[[1, 256], BF], wg: pypto.Tensor[[128, 256], BF], wu: pypto.Tensor[[128, 256], BF],
          wr: pypto.Tensor[[64, 256], BF], g: pypto.Tensor[[1, 128], OUT], u: pypto.Tensor[[1, 128], OUT],
          r: pypto.Tensor[[1, 64], OUT]):
        for _ in pypto.loop(1, name="L"):
            pypto.set_semantic_label("gate_up")
            pypto.set_cube_tile_shapes([16, 16], [128, 256], [128, 128])
            pypto.assemble(pypto.matmul(x, wg, OUT, b_trans=True), [0, 0], g)
            if not same:
                pypto.set_cube_tile_shapes([16, 16], [128, 256], [64, 64])
            pypto.assemble(pypto.matmul(x, wu, OUT, b_trans=True), [0, 0], u)
            pypto.set_semantic_label("router")
            pypto.set_cube_tile_shapes([16, 16], [128, 256], [64, 64])
            pypto.assemble(pypto.matmul(x, wr, OUT, b_trans=True), [0, 0], r)

    bf, out = (np.int8, np.int32) if int8 else (ml_dtypes.bfloat16, np.float32)
    k(np.ones((1, 256), bf), np.ones((128, 256), bf), np.ones((128, 256), bf), np.ones((64, 256), bf),
      np.zeros((1, 128), out), np.zeros((1, 128), out), np.zeros((1, 64), out))
    return estimate(k.last_record)


def test_shared_a_matmuls_merge_across_ops():
    """Gate and up of one token row (same shapes, one A block) are one AIC task under cube_l1_reuse 2,
    as PyPTO 0.2.0 ran an FFN's gate_up (4 tasks for 8 tiles at T=1) and an MoE's per-expert gate and up
    (16 tasks for 16 experts); the router's matmul (other n tiles) stays apart, and without the setting,
    or with other tiles, nothing merges."""
    est = _gate_up(2)
    assert _per_label(est) == {"gate_up/AIC": 1, "router/AIC": 1}
    assert "l1-reuse-shared-a" in est.rules_fired
    assert _per_label(_gate_up(1)) == {"gate_up/AIC": 2, "router/AIC": 1}
    assert _per_label(_gate_up(2, int8=True)) == {"gate_up/AIC": 2, "router/AIC": 1}  # INT8: the W8A8 FFN's 8 for 8
    # up in 64-wide n tiles: no partner for gate; its own two tiles merge along n (static rows)
    other = _gate_up(2, same=False)
    assert _per_label(other) == {"gate_up/AIC": 2, "router/AIC": 1} and "l1-reuse-along-n-static-rows" in other.rules_fired


def test_column_broadcast_joins_its_producer():
    """An expert's [8, 64] output times its [8, 1] routing column, added to a sum, for 4 experts: one
    AIV task with the routing ops (PyPTO 0.2.0 ran an MoE block's 16 weighted sums and its router's
    vector ops as 1 task at T=1, 2 at T=16): the routing matrix's task, then one for the four sums, not
    one per expert."""
    x = np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32)

    def fn(x):
        route = pypto.mul(pypto.view(x, [8, 4], [0, 0]), 2.0)
        acc = pypto.full([8, 64], 0.0, pypto.DT_FP32)
        for e in range(4):
            acc = pypto.add(acc, pypto.mul(x, pypto.view(route, [8, 1], [0, e])))
        return acc

    from .conftest import run_ops

    out = run_ops(fn, x)
    want = sum(x * (2.0 * x[:, e:e + 1]) for e in range(4))
    np.testing.assert_allclose(out, want, rtol=1e-6)
    est = estimate(run_ops.last_kernel.last_record)
    assert sum(1 for t in est.work_tasks if t.kind == "AIV") == 2  # the routing columns' task, then the sums
    assert "column-broadcast-joins" in est.rules_fired


def _split_k_matmul(K: int, N: int, T: int, *, split_k: bool = True):
    """x [T, K] @ w [K, N] -> FP32 in 16-row token blocks, split-K cube tiles and n-buffer 4 (SK-03's mhc_pre)."""

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128}, pass_options={"cube_nbuffer_setting": {-1: 4}})
    def split_k_cost(x: pypto.Tensor[[pypto.DYNAMIC, K], BF16], w: pypto.Tensor[[K, N], BF16],
                     y: pypto.Tensor[[pypto.DYNAMIC, N], FP32]):
        for off, tile in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[16]):
            xt = pypto.view(x, [tile, K], [off, 0])
            pypto.set_semantic_label("linear")
            pypto.set_cube_tile_shapes([16, 16], [256, 1024], [128, 128], enable_split_k=split_k)
            pypto.assemble(pypto.matmul(xt, w, FP32), [off, 0], y)

    rng = np.random.default_rng(0)
    x, w = (rng.uniform(-1, 1, s).astype(ml_dtypes.bfloat16) for s in ((T, K), (K, N)))
    split_k_cost(x, w, np.zeros((T, N), np.float32))
    return estimate(split_k_cost.last_record)


def test_split_k_matmul_sums_its_partials_on_aiv():
    """Split K: one cube unit per kL1 chunk (28 for K = 28672), 4 a task under n-buffer 4, then one AIV task
    that copies in the 28 [16, 24] FP32 partials, adds them and copies the sum out, waiting for all 7 cube
    tasks: PyPTO 0.2.0's swimlane of the mhc_pre norm + linear at T=16 (the sum task 40229 cycles)."""
    est = _split_k_matmul(28672, 24, 16)
    aic = [t for t in est.work_tasks if t.kind == "AIC"]
    aiv = [t for t in est.work_tasks if t.kind == "AIV"]
    assert len(aic) == 7 and all(len(t.instances) == 4 for t in aic)
    assert len(aiv) == 1 and aiv[0].preds == {t.id for t in aic}
    assert Counter(op.name for op in aiv[0].ops) == {"COPY_IN": 28, "ADD": 27, "COPY_OUT": 1}
    assert aiv[0].duration == 40229
    assert Counter(op.name for op in aic[0].ops)["COPY_OUT"] == 4  # each chunk's partial to the workspace
    assert "split-k-partials-summed-on-aiv" in est.rules_fired
    # two token blocks: each its own 7 + 1; without split-K one cube task per block, the K loop inside
    assert Counter(t.kind for t in _split_k_matmul(28672, 24, 32).work_tasks) == {"AIC": 14, "AIV": 2}
    plain = _split_k_matmul(28672, 24, 16, split_k=False)
    assert [t.kind for t in plain.work_tasks] == ["AIC"] and "split-k-partials-summed-on-aiv" not in plain.rules_fired


def _column_reduce_norm(T: int, *, tile: tuple[int, int] = (8, 2048), K: int = 28672):
    """RMSNorm (no gamma) of x [T, K] in 16-row token blocks with vec tiles [8, 2048] (14 column tiles over
    K = 28672), then a cast to BF16: SK-03's mhc_pre norm, n-buffer 4."""

    @pypto.frontend.jit(runtime_options={"stitch_function_max_num": 128}, pass_options={"vec_nbuffer_setting": {-1: 4}})
    def col_norm_cost(x: pypto.Tensor[[pypto.DYNAMIC, K], BF16], y: pypto.Tensor[[pypto.DYNAMIC, K], BF16]):
        for off, rows in pypto.loop_unroll(0, x.shape[0], 1, name="TOK_LOOP", idx_name="off", unroll_list=[16, 1]):
            pypto.set_semantic_label("norm")
            pypto.set_vec_tile_shapes(*tile)
            xf = pypto.cast(pypto.view(x, [rows, K], [off, 0]), FP32)
            ss = pypto.sum(pypto.mul(xf, xf), -1, keepdim=True)
            rstd = pypto.rsqrt(pypto.add(pypto.mul(ss, 1.0 / K), 1e-6))
            pypto.assemble(pypto.cast(pypto.mul(xf, rstd), BF16), [off, 0], y)

    x = np.random.default_rng(0).uniform(-1, 1, (T, K)).astype(ml_dtypes.bfloat16)
    col_norm_cost(x, np.zeros((T, K), ml_dtypes.bfloat16))
    return estimate(col_norm_cost.last_record)


def test_column_reduce_runs_through_gm():
    """A sum over 14 column tiles is a chain of tasks through GM (PyPTO 0.2.0's swimlane of the mhc_pre norm):
    at T=1 four cast tasks (4/4/4/2 tiles, 6266 and 3366 cycles), one task of 14 squares and 12 PAIRSUMs to two
    partials (22048), one of the last PAIRSUM, the row sum and the 14 normalised tiles; at T=16 ([8, 2048]
    FP32 tiles: three fill the UB) per row block 14 cast tasks, the squares 3/3/1 a task per half, the
    PAIRSUM tasks (three inputs each) merged in pairs, and the last task."""
    one = _column_reduce_norm(1)
    one_aiv = [t for t in one.work_tasks if t.kind == "AIV"]
    shapes = [dict(Counter(op.name for op in t.ops)) for t in one_aiv]
    assert [t.duration for t in one_aiv[:4]] == [6266, 6266, 6266, 3366]
    assert shapes[4] == {"COPY_IN": 14, "MUL": 14, "PAIRSUM": 12, "COPY_OUT": 2} and one_aiv[4].duration == 22048
    assert shapes[5]["PAIRSUM"] == 1 and shapes[5]["ROWSUM_SINGLE"] == 1 and shapes[5]["CAST"] == 14
    assert one_aiv[5].preds == {t.id for t in one_aiv[:5]}
    assert "column-reduce-through-gm" in one.rules_fired
    sixteen = [dict(Counter(op.name for op in t.ops)) for t in _column_reduce_norm(16).work_tasks]
    assert len(sixteen) == 48  # per row block 14 + 6 + 2 + 1 + 1
    assert sorted(s.get("MUL", 0) for s in sixteen if set(s) == {"COPY_IN", "MUL", "COPY_OUT"}) == [1] * 4 + [3] * 8
    assert sum(s.get("PAIRSUM") == 4 for s in sixteen) == 6
    # one column tile: no chain
    assert "column-reduce-through-gm" not in _column_reduce_norm(1, tile=(8, 2048), K=2048).rules_fired
