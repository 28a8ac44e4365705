"""Multi-factor unroll lists: how a request spells one, what the resolver refuses, the name, the
golden test's T values (every path taken), the kernel's ``unroll_list`` and what ``run`` says."""

from __future__ import annotations

import json

import pytest

from pattern_gen.plan.naming import explain
from pattern_gen.plan import test_points
from pattern_gen.plan.unroll import UnrollError, describe_paths, parse_unroll, path_counts

SK03 = [128, 64, 32, 16, 8, 1]
SMALL = {"K": 256, "N": 128}


@pytest.mark.parametrize(
    ("raw", "want"),
    [(128, (128, 1)), ("128,16", (128, 16, 1)), ("128,16,1", (128, 16, 1)), ([64, 8, 1], (64, 8, 1)), (1, (1,)),
     ("[128, 16]", (128, 16, 1)), (" 32 , 8 ", (32, 8, 1))],
)
def test_spellings_of_a_list(raw, want):
    assert parse_unroll(raw, SK03) == want


@pytest.mark.parametrize(
    ("raw", "says"),
    [("128,3", "3 is not one of the candidates"), ("", "the list is empty"), ([], "the list is empty"),
     ("128,128", "128 is listed twice"), ("16,128", "128 follows 16: list the factors largest first"),
     ("x", "'x' is not a factor"), (0, "0 is not a factor"), (True, "True is not a factor")],
)
def test_bad_lists_name_the_value(raw, says):
    with pytest.raises(UnrollError, match=says):
        parse_unroll(raw, SK03)


def test_a_list_whose_factors_do_not_divide_is_refused():
    # PyPTO 0.2.0 would run a pass past T (T=16 with [6, 4]: 2 x 6, then 4 at 12 — fine — but
    # T=129: a 4-pass at 126 covering rows up to 129); the resolver refuses such lists by name
    with pytest.raises(UnrollError, match="4 does not divide 6"):
        parse_unroll("6,4", [6, 4, 1])


@pytest.mark.parametrize("bad", ["128,3", "", "128,128", "16,128", "6"])
def test_cli_refuses_a_bad_list_and_writes_nothing(cli, tmp_path, bad):
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--param", f"unroll={bad}", "--out", tmp_path / "out")
    run.assert_bad_input("bad-param-value")
    assert "unroll=" in run.stderr and len(run.stderr.strip().splitlines()) == 2  # one problem line + the summary
    assert not (tmp_path / "out").exists()


def test_every_path_of_the_list_is_tested():
    for unroll in [(128, 64, 32, 16, 8, 1), (8, 4, 2, 1), (256, 64, 16, 4, 1), (128, 16, 1), (16, 1), (1,)]:
        taken = {f for T in test_points.test_values(unroll) for f, _ in path_counts(T, unroll)}
        assert taken == set(unroll), unroll
        # a remainder after a pass of the largest factor, and two passes of it
        assert any(len(path_counts(T, unroll)) > 1 for T in test_points.test_values(unroll)) or unroll == (1,)
        assert 2 * unroll[0] in test_points.test_values(unroll)
        # PyPTO's verifier runs at least one T that takes two paths
        assert unroll == (1,) or any(len(path_counts(T, unroll)) > 1 for T in test_points.verify_T(unroll)), unroll


def test_paths_read_as_pypto_runs_them():
    assert describe_paths(37, (32, 16, 8, 4, 2, 1)) == "T=37: 32 + 4 + 1"
    assert describe_paths(37, (128, 64, 32, 16, 8, 1)) == "T=37: 32 + 5×1"
    assert describe_paths(1000, (128, 64, 32, 16, 8, 1)) == "T=1000: 7×128 + 64 + 32 + 8"
    assert describe_paths(16, (128, 1)) == "T=16: 16×1"


def test_the_name_encodes_the_list_and_explain_reads_it(cat, resolve_req):
    plan = resolve_req("SK-03", "AT-10", params={"unroll": "128,16"}, dims=SMALL)
    assert plan.unroll == (128, 16, 1) and "-u128_16-" in plan.name
    assert explain(cat, plan.name)["unroll"] == [128, 16, 1]
    single = resolve_req("SK-03", "AT-10", params={"unroll": 16}, dims=SMALL)
    assert single.unroll == (16, 1) and "-u16-" in single.name  # a single factor keeps its old name
    assert resolve_req("SK-03", "AT-10", params={"unroll": "16,1"}, dims=SMALL).name == single.name


@pytest.mark.parametrize("token", ["u16_128", "u128_3", "u128_128"])
def test_explain_refuses_a_bad_list_token(cli, token):
    cli("explain", f"sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-{token}-a2a3").assert_bad_input("bad-name")


def test_the_kernel_runs_the_list_and_run_says_which_paths(cli, tmp_path):
    made = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--param", "unroll=32,16,8",
               "--out", tmp_path, "--quiet")
    made.assert_ok()
    folder = next(p for p in tmp_path.iterdir() if p.is_dir())
    kernel = (folder / "kernel.py").read_text(encoding="utf-8")
    assert "UNROLL = [32, 16, 8, 1]" in kernel and "unroll_list=UNROLL" in kernel
    meta = json.loads((folder / "instance.json").read_text(encoding="utf-8"))
    assert meta["unroll"] == [32, 16, 8, 1] and meta["test_T"] == [64, 57, 3, 1]
    run = cli("run", folder, "--T", "37", "--json")
    run.assert_ok()
    data = json.loads(run.stdout)
    assert data["passed"] and "T=37: 32 + 5×1" in data["estimate"]["interpretation"]
    # the 8 path is taken at 57 (32 + 16 + 8 + 1): the golden passes there too
    assert json.loads(cli("run", folder, "--T", "57", "--json").stdout)["passed"]


def test_each_path_is_simulated_with_its_own_factor(cat, tmp_path):
    """ptosim runs the kernel's paths as PyPTO selects them: the record's loop frames carry the
    factors of the schedule, in order."""
    from pattern_gen.output.instances import call_instance, load_instance_module, write_instance
    from pattern_gen.plan.kernel_plan import Request

    _plan, folder, _ = write_instance(cat, Request(skeleton="SK-03", atoms=("AT-10",), params={"unroll": "32,16,8"}, dims=dict(SMALL)), tmp_path)
    kernel = load_instance_module(folder, "kernel")
    inputs = call_instance(load_instance_module(folder, "golden"), "make_inputs", 57, seed=0)
    call_instance(kernel, "run", inputs)
    record = next(getattr(kernel, n).last_record for n in dir(kernel) if getattr(getattr(kernel, n), "last_record", None) is not None)
    seen = []
    for op in record.ops:
        for frame in op.loops:
            if frame.name == "TOKEN_LOOP" and (not seen or seen[-1] != (frame.index, frame.factor)):
                seen.append((frame.index, frame.factor))
    assert seen == [(0, 32), (32, 16), (48, 8), (56, 1)]
