"""``pattern-gen tune``: the space, the estimates, the search, the ranking, --apply, bad input.

The estimates are checked against a kernel written by ``pattern-gen new`` and run by itself (the
tuner must price exactly what a designer would generate); the coordinate search against the
exhaustive one on a space small enough to sweep; the winner against its golden test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.output.instances import estimate_instance, run_instance, write_instance
from pattern_gen.plan.kernel_plan import Request
from pattern_gen.plan.manifest import load_manifest, to_request
from pattern_gen.plan.resolver import resolve
from pattern_gen.tune.search import tune
from pattern_gen.tune.space import tuning_space
from pattern_gen.tune.weights import load_T_dist, parse_T_list
from pattern_gen.vocab.errors import PatternGenError

REPO = Path(__file__).resolve().parents[2]
SMALL = {"K": 256, "N": 128}


@pytest.fixture(scope="module")
def cat():
    return load_catalogue([])


def _req(**kw) -> Request:
    return Request(skeleton="SK-03", atoms=("AT-10",), dims=dict(SMALL), **kw)


def test_space_axes_come_from_the_plan(cat) -> None:
    pinned = tuning_space(resolve(cat, _req(params={"unroll": 16})), cat.card("SK-03").loop.candidates)
    assert pinned.axes[0].name == "unroll" and pinned.axes[0].choices == ((16, 1),)  # --param unroll= stays fixed
    plan = resolve(cat, _req())
    space = tuning_space(plan, cat.card("SK-03").loop.candidates)
    names = [a.name for a in space.axes]
    assert names[0] == "unroll" and space.axes[0].choices[0] == plan.unroll  # the card's default first
    # every list the candidates make, largest factor first, 1 appended as PyPTO does
    lists = space.axes[0].choices
    assert len(lists) == 32 and len(set(lists)) == 32 and {(16, 1), (1,), (128, 64, 32, 16, 8, 1), (64, 8, 1)} <= set(lists)
    assert all(u[-1] == 1 and list(u) == sorted(u, reverse=True) for u in lists)
    # tiles of the loop's stages only (weight_prep is hoisted), halving and doubling
    assert "tile:proj.rmsnorm:rows" in names and not any("weight_prep" in n for n in names)
    assert {"tile:proj.linear:m", "tile:proj.linear:k", "tile:proj.linear:n"} <= set(names)
    k_axis = space.axes[space.axis_index("tile:proj.linear:k")]
    card_k = next(s for s in plan.stages if s.label == "proj.linear").cube_tile["k"]
    assert [list(v) for v in k_axis.choices[1:]] == [[v // 2 for v in card_k], [v * 2 for v in card_k]]
    # options: the recommended one is tuned (card value or unset), the must ones never
    assert "option:vec_nbuffer_setting" in names
    assert not any(n in names for n in ("option:stitch_function_max_num", "option:cube_l1_reuse_setting", "option:combine_axis"))
    # a configuration is an ordinary request
    cfg = space.default.with_pick(space.axis_index("option:vec_nbuffer_setting"), 1).with_pick(space.axis_index("tile:proj.linear:k"), 1)
    req = space.request(cfg)
    assert req.options["vec_nbuffer_setting"] is None
    assert req.tiles["proj.linear"]["k"] == [v // 2 for v in card_k]
    tuned = resolve(cat, req)
    assert "vec_nbuffer_setting" not in tuned.pass_options
    assert "--option 'vec_nbuffer_setting='" in req.command()


def test_fixed_tiles_and_options_are_not_axes(cat) -> None:
    plan = resolve(cat, _req(tiles={"proj.rmsnorm": [2, 256]}, options={"vec_nbuffer_setting": {0: 4}}))
    names = [a.name for a in tuning_space(plan, cat.card("SK-03").loop.candidates).axes]
    assert "tile:proj.rmsnorm:rows" not in names and "option:vec_nbuffer_setting" not in names


def test_estimates_are_those_of_the_generated_kernel(cat, tmp_path: Path) -> None:
    result = tune(cat, _req(), {1: 1.0, 16: 1.0}, jobs=1, check=0)
    sample = result.ranked[:2] + result.ranked[-1:]
    for point in sample:
        _plan, folder, _ = write_instance(cat, result.space.request(point.config), tmp_path)
        for T in (1, 16):
            assert estimate_instance(folder, T)["e2e_us"] == pytest.approx(point.us[T], abs=1e-9)
        assert point.score == pytest.approx((point.us[1] + point.us[16]) / 2)


def test_ranking_winner_and_its_golden(cat) -> None:
    result = tune(cat, _req(), {1: 3.0, 16: 1.0}, jobs=2, check=3)
    assert result.weights == {1: 0.75, 16: 0.25}
    scores = [p.score for p in result.ranked]
    assert scores == sorted(scores)
    assert result.best.score <= result.default.score
    assert result.speedup(result.best) >= 1.0
    assert len(result.checked) == 3 and all(result.checked.values())
    # what was stopped early really could not win: its bound is at least the winner's score
    for p in result.pruned:
        if p.refused is None:
            assert p.lower is not None and p.lower >= result.best.score
    # a refused configuration carries the resolver's reason
    assert all("does not fit" in (p.refused or "") or p.refused is None for p in result.pruned)


def test_coordinate_search_finds_the_exhaustive_optimum(cat) -> None:
    # a space small enough to sweep: the unroll list, the norm tile and the options fixed, m x k x n
    # left (the 32 unroll lists are all estimated by the coordinate search's first step anyway)
    base = _req(params={"unroll": "64,16"}, tiles={"proj.rmsnorm": [4, 256]}, options={"vec_nbuffer_setting": {0: 2}})
    weights = {1: 1.0, 16: 1.0, 64: 1.0}
    coord = tune(cat, base, weights, jobs=2, check=0)
    full = tune(cat, base, weights, strategy="exhaustive", jobs=2, check=0)
    assert full.space.size() == 1 * 3 * 3 * 3
    assert coord.best.score == pytest.approx(full.best.score)
    assert len(coord.ranked) + len(coord.pruned) < len(full.ranked) + len(full.pruned)


def test_weights() -> None:
    assert parse_T_list("1, 16,128") == {1: 1.0, 16: 1.0, 128: 1.0}
    for bad in ("", "0", "1,x", "-3", str(1 << 20)):
        with pytest.raises(PatternGenError):
            parse_T_list(bad)


def test_T_dist_files(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("1: 0.7\n16: 0.2\n128: 0.1\n")
    assert load_T_dist(tmp_path / "m.yaml") == {1: 0.7, 16: 0.2, 128: 0.1}
    (tmp_path / "l.yaml").write_text("[1, 1, 1, 16]\n")
    assert load_T_dist(tmp_path / "l.yaml") == {1: 3.0, 16: 1.0}
    (tmp_path / "bad.yaml").write_text("1: 0.5\n16: -1\n")
    with pytest.raises(PatternGenError) as err:
        load_T_dist(tmp_path / "bad.yaml")
    assert err.value.problems[0].line == 2


def test_cli_json_and_quiet(cli) -> None:
    run = cli("tune", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--T", "1,16", "-j", "1", "--json")
    run.assert_ok()
    data = json.loads(run.stdout)
    assert data["weights"] == {"1": 0.5, "16": 0.5}
    assert data["best"]["weighted_us"] == data["ranked"][0]["weighted_us"] <= data["default"]["weighted_us"]
    assert list(data["golden_checked"].values()) == [True]
    assert data["best"]["command"].startswith("pattern-gen new --skeleton SK-03")
    quiet = cli("tune", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--T", "1,16", "-j", "1", "-q", "--check", "0")
    quiet.assert_ok()
    assert quiet.stdout.strip() == data["best"]["command"]


def test_cli_table(cli) -> None:
    run = cli("tune", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--T", "1,16", "-j", "1", "--check", "0")
    run.assert_ok()
    assert "weighted µs" in run.stdout and "speed-up" in run.stdout
    assert "best: unroll=" in run.stdout and "T=16:" in run.stdout and "-bound" in run.stdout
    assert "the winner: pattern-gen new --skeleton SK-03" in run.stdout


@pytest.mark.parametrize(
    "args, code",
    [
        (["--T", "0"], "bad-option"),
        (["--T", "1,abc"], "bad-option"),
        (["--T", "1", "--T-dist", "x.yaml"], "bad-option"),
        (["--T-dist", "/nonexistent/t.yaml"], "bad-path"),
        (["--strategy", "exhaustive"], "bad-option"),  # 972 configurations > MAX_EXHAUSTIVE
        (["--param", "unroll=7"], "bad-param-value"),
        (["--tile", "proj.linear=m:32x32,k:4096x8192,n:128x256"], "tile-unfit"),
    ],
)
def test_cli_bad_input(cli, args, code) -> None:
    base = ["tune", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "-j", "1"]
    cli(*base, *args).assert_bad_input(code)


def test_cli_needs_a_request(cli) -> None:
    cli("tune").assert_bad_input("bad-option")


def test_apply_edits_only_its_entry(cli, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.yaml"
    original = (REPO / "patterns" / "manifest.yaml").read_text(encoding="utf-8")
    manifest.write_text(original, encoding="utf-8")
    args = ["tune", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--T", "1,16", "-j", "1",
            "--check", "0", "--apply", "--manifest", manifest, "--json"]
    run = cli(*args)
    run.assert_ok()
    data = json.loads(run.stdout)
    after = manifest.read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(original.splitlines(), after.splitlines()) if a != b]
    assert len(original.splitlines()) == len(after.splitlines())
    if data["applied"]["changed"]:
        assert len(changed) == 1 and "why: defaults" in changed[0][1]
    loaded = load_manifest(manifest)
    best = data["best"]
    if data["applied"]["changed"]:
        entry = loaded.instances[[e.why for e in loaded.instances].index("defaults")]
    else:  # the winner is an entry of the manifest already (the unroll-16 one): it is named, nothing added
        assert after == original
        lines = [loaded.where("instances", i).get("line") for i in range(len(loaded.instances))]
        entry = loaded.instances[lines.index(data["applied"]["line"])]
    given = entry.params.get("unroll", [128, 32, 16, 8, 1])
    assert (list(given) if isinstance(given, list) else [given, 1]) == best["unroll"]
    assert entry.tiles == best["tiles"]
    # a second run finds the winner in place
    again = cli(*args)
    again.assert_ok()
    assert json.loads(again.stdout)["applied"]["changed"] is False
    assert manifest.read_text(encoding="utf-8") == after


def test_apply_adds_a_missing_entry_with_typed_values(cli, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("instances:\n  - {skeleton: SK-03, atoms: AT-10, dims: {K: 256, N: 128}}  # keep me\nrefused: []\n", encoding="utf-8")
    run = cli("tune", "--skeleton", "SK-03", "--atoms", "at-10", "--dim", "K=512", "--dim", "N=128", "--param", "has_gamma=false",
              "--T", "1", "-j", "1", "--check", "0", "--apply", "--manifest", manifest)
    run.assert_ok()
    text = manifest.read_text(encoding="utf-8")
    assert "# keep me" in text and text.rstrip().endswith("refused: []")
    loaded = load_manifest(manifest)
    added = loaded.instances[1]
    assert added.dims == {"K": 512, "N": 128} and added.params["has_gamma"] is False and added.atoms == "AT-10"


def test_manifest_tiles_reach_the_plan(cat) -> None:
    from pattern_gen.plan.manifest import ManifestEntry, to_request

    entry = ManifestEntry(skeleton="SK-03", atoms="AT-10", dims=SMALL, tiles={"proj.rmsnorm": [2, 256]})
    plan = resolve(cat, to_request(entry))
    assert next(s for s in plan.stages if s.label == "proj.rmsnorm").vec_tile == [2, 256]


def test_unset_option_passes_its_golden(cat, tmp_path: Path) -> None:
    _plan, folder, _ = write_instance(cat, _req(options={"vec_nbuffer_setting": None}), tmp_path)
    assert run_instance(folder, T=3).passed
    assert "vec_nbuffer_setting" not in json.loads((folder / "instance.json").read_text())["options"]["pass_options"]


def test_unroll_curves_are_the_single_runs(cat, tmp_path: Path) -> None:
    from pattern_gen.tune.curves import unroll_curves

    plan = resolve(cat, _req(params={"unroll": 16}))  # an instance's own unroll does not narrow its plot
    curves = unroll_curves(cat, plan, (1, 16), jobs=1)
    # each candidate alone (the plan's own [16, 1] among them), keyed as the list
    assert sorted(curves) == sorted(f"{c},1" if c > 1 else "1" for c in cat.card("SK-03").loop.candidates)
    for u in (128, 16, 1):
        _plan, folder, _ = write_instance(cat, _req(params={"unroll": u}), tmp_path)
        for T in (1, 16):
            assert curves[f"{u},1" if u > 1 else "1"][T] == pytest.approx(estimate_instance(folder, T)["e2e_us"], abs=1e-9)


def test_tune_an_instance_folder(cli, tmp_path: Path) -> None:
    made = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--param", "unroll=16",
               "--out", tmp_path, "-q")
    made.assert_ok()
    folder = made.stdout.strip()
    run = cli("tune", folder, "--T", "1,16", "-j", "1", "--check", "0", "--json")
    run.assert_ok()
    data = json.loads(run.stdout)
    assert "--param unroll=16" in data["request"] and data["space"]["unroll"] == ["16"]  # what the instance fixed stays
    cli("tune", folder, "--skeleton", "SK-03").assert_bad_input("bad-option")


def test_apply_refuses_a_symlinked_or_broken_manifest_before_the_sweep(cli, tmp_path: Path) -> None:
    real = tmp_path / "manifest.yaml"
    real.write_text((REPO / "patterns" / "manifest.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    link = tmp_path / "link.yaml"
    link.symlink_to(real)
    base = ["tune", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--T", "1", "-j", "1", "--apply", "--manifest"]
    run = cli(*base, link)
    run.assert_bad_input("bad-path")
    assert "symlink" in run.stderr and link.is_symlink()
    broken = tmp_path / "broken.yaml"
    broken.write_text("instances: [\n", encoding="utf-8")
    cli(*base, broken).assert_bad_input("yaml-syntax")


def test_T_dist_must_be_a_regular_file(cli, tmp_path: Path) -> None:
    fifo = tmp_path / "t.yaml"
    os.mkfifo(fifo)
    run = cli("tune", "--skeleton", "SK-03", "--T-dist", fifo)
    run.assert_bad_input("bad-path")
    assert "not a regular file" in run.stderr


@pytest.mark.parametrize("request_field", [{"skeleton": 5, "bogus": 1}, "abc", {"skeleton": "SK-03", "dims": {"K": "x"}, "params": [1]}])
def test_tune_a_corrupted_instance(cli, tmp_path: Path, request_field) -> None:
    made = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--out", tmp_path, "-q")
    folder = Path(made.stdout.strip())
    meta = json.loads((folder / "instance.json").read_text())
    meta["request"] = request_field
    (folder / "instance.json").write_text(json.dumps(meta))
    cli("tune", folder, "--T", "1", "-j", "1").assert_bad_input("instance")


def test_apply_again_updates_the_entry_it_changed(cli, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("instances:\n  - {skeleton: SK-03, atoms: AT-10, dims: {K: 256, N: 128}}\n", encoding="utf-8")
    base = ["tune", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "-j", "1", "--check", "0",
            "--apply", "--manifest", manifest, "--json", "--T"]
    first = json.loads(cli(*base, "1").stdout)
    second = json.loads(cli(*base, "16").stdout)
    assert first["best"]["configuration"] != second["best"]["configuration"]  # so the second run had to find the entry
    entries = load_manifest(manifest).instances
    assert len(entries) == 1, manifest.read_text()  # the same request: one entry, retuned in place
    assert not second["applied"]["created"] and first["applied"]["line"] == second["applied"]["line"] == 2
    assert entries[0].tiles == second["best"]["tiles"]


def test_apply_keeps_the_instance_name_when_only_tiles_change(cat, tmp_path: Path) -> None:
    """A retune must not rename the instance (git churn, broken docs URLs): a tiles-only winner
    pins the entry's name; an unroll change renames it and records the old name in ``why``."""
    from pattern_gen.tune.apply import apply_to_manifest

    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("instances:\n  - {skeleton: SK-03, atoms: AT-10, dims: {K: 256, N: 128}, why: defaults}\nrefused: []\n", encoding="utf-8")
    tuned = _req()
    before = resolve(cat, tuned).name
    tiles_only = _req(tiles={"proj.rmsnorm": [2, 256]})
    assert resolve(cat, tiles_only).name != before  # the digest would rename it
    apply_to_manifest(cat, manifest, tuned, tiles_only)
    (entry,) = load_manifest(manifest).instances
    assert entry.name == before and resolve(cat, to_request(entry)).name == before and entry.tiles == {"proj.rmsnorm": [2, 256]}
    manifest.write_text("instances:\n  - {skeleton: SK-03, atoms: AT-10, dims: {K: 256, N: 128}, why: defaults}\nrefused: []\n", encoding="utf-8")
    apply_to_manifest(cat, manifest, tuned, _req(params={"unroll": 16}))
    (entry,) = load_manifest(manifest).instances
    assert entry.name is None and f"formerly {before}" in entry.why and "-u16-" in resolve(cat, to_request(entry)).name


def test_lists_that_take_the_same_paths_share_a_run(cat, tmp_path: Path, monkeypatch) -> None:
    """At T=16, [128, 16, 1] and [64, 16, 1] both run one pass of 16: one ptosim run for both,
    the same estimate; at T=80 they differ (64 + 16 against 5 x 16) and run apart."""
    from pattern_gen.tune import evaluate as ev_mod

    calls = []
    real = ev_mod._job
    monkeypatch.setattr(ev_mod, "_job", lambda *a: calls.append(a[1]) or real(*a))
    plan = resolve(cat, _req())
    space = tuning_space(plan, cat.card("SK-03").loop.candidates)
    picks = [space.axes[0].choices.index(u) for u in ((128, 16, 1), (64, 16, 1))]
    with ev_mod.Evaluator(cat, space, {16: 0.5, 80: 0.5}, tmp_path, jobs=1) as ev:
        a, b = ev.evaluate([space.default.with_pick(0, i) for i in picks], bound=False)
    assert sorted(calls) == [16, 80, 80]
    assert a.us[16] == b.us[16] and a.us[80] != b.us[80]


def test_the_result_knows_the_best_single_factor_at_each_T(cat) -> None:
    result = tune(cat, _req(options={"vec_nbuffer_setting": {0: 2}}, tiles={"proj.rmsnorm": [4, 256], "proj.linear": {"m": [32, 32], "k": [256, 512], "n": [128, 256]}}),
                  {1: 1.0, 37: 1.0}, jobs=1, check=0)
    for T in (1, 37):
        single = result.best_single(T)
        assert single is not None and len(result.space.unroll(single.config)) <= 2
        # the winner is no slower than the best single factor at the distribution (it is among the candidates)
    assert result.best.score <= min(p.score for p in result.ranked if len(result.space.unroll(p.config)) <= 2)
    assert result.best_single(37).us[37] >= min(p.us[37] for p in result.ranked)
