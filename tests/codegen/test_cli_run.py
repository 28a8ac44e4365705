"""The runner and the CLI: ``run INSTANCE [--T] [--json]``, ``explain NAME [--json]``,
the manifest's refusals, and the command line as a real subprocess.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pattern_gen.output.instances import rules_lines, run_instance
from pattern_gen.output.writer import finalize
from pattern_gen.vocab.errors import PatternGenError


@pytest.fixture(autouse=True)
def _fast_estimate(stub_estimate):
    """Runs here use the stub cost estimate (conftest)."""


@pytest.fixture
def sk03_copy(instance_factory, small, tmp_path) -> Path:
    """A private copy of the small SK-03 instance, to tamper with."""
    folder = instance_factory("SK-03", "AT-10", dims=small["SK-03"])
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    return copy


def test_run_json(cli, sk03_copy):
    run = cli("run", str(sk03_copy), "--json")
    run.assert_ok()
    data = json.loads(run.stdout)
    assert data["passed"] is True and data["name"] == sk03_copy.name and data["seed"] == 0
    assert data["T"] == 256, "default T: the test's first T (2 x unroll)"
    y = data["outputs"]["y"]
    for key in ("passed", "numel", "wrong", "allowed", "ratio", "max_abs_error", "bad_rows"):
        assert key in y, key
    assert y["numel"] == 256 * 128 and y["wrong"] <= y["allowed"] and y["bad_rows"] == []
    if importlib.util.find_spec("ptosim.cost") is not None:
        interpretation = data["estimate"].pop("interpretation")
        assert data["estimate"] == {"e2e_us": 12.5, "tasks": 3, "utilization": {"cube": 0.5, "vector": 0.25}}
        assert interpretation.startswith("scheduling-bound"), interpretation  # no pipe near the (absent) AI-core time
    text = cli("run", str(sk03_copy))
    text.assert_ok()
    if data["estimate"]:
        assert "12.50 µs end to end, 3 tasks" in text.stdout and "cube 50%" in text.stdout


def test_run_rules_lists_the_cost_rules_applied(cli, sk03_copy):
    """``run --rules``: each rule the estimate applied (the stub's two), with its statement; in --json too."""
    pytest.importorskip("ptosim.cost.rules")
    from ptosim.cost.rules import BY_ID

    text = cli("run", str(sk03_copy), "--T", "3", "--rules")
    text.assert_ok()
    assert "cost rules applied (2; behaviours of PyPTO 0.2.0" in text.stdout
    assert "vec-task-per-row-block: " + BY_ID["vec-task-per-row-block"].statement[:40] in " ".join(text.stdout.split())
    data = json.loads(cli("run", str(sk03_copy), "--T", "3", "--rules", "--json").stdout)
    assert data["rules_fired"] == ["vec-task-per-row-block", "cube-task-per-output-tile"]
    assert "rules_fired" not in json.loads(cli("run", str(sk03_copy), "--T", "3", "--json").stdout)
    assert rules_lines(()) == ["cost rules applied: none (no cost estimate)"]


def test_run_profile_writes_a_timeline(cli, sk03_copy, tmp_path):
    pytest.importorskip("ptosim.trace", reason="the timeline writer (issue 5) is not in ptosim yet")
    trace = tmp_path / "trace.json"
    run = cli("run", str(sk03_copy), "--T", "3", "--profile", str(trace))
    run.assert_ok()
    assert trace.is_file() and json.loads(trace.read_text(encoding="utf-8"))


def test_run_profile_refuses_what_is_not_a_timeline_file(cli, sk03_copy, tmp_path):
    """A FIFO would hang the write, a device swallow it, a loop crash it, a user's file be lost."""
    import os

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    mine = tmp_path / "notes.json"
    mine.write_text('{"mine": 1}', encoding="utf-8")
    for target, says in [(fifo, "not a regular file"), ("/dev/null", "not a regular file"),
                         (loop, "cannot follow"), (mine, "is not a timeline")]:
        run = cli("run", str(sk03_copy), "--T", "3", "--profile", str(target))
        run.assert_bad_input("bad-path")
        assert says in run.stderr, run.stderr
    assert mine.read_text(encoding="utf-8") == '{"mine": 1}'
    trace = tmp_path / "t.json"
    for _ in range(2):  # an earlier timeline is replaced, whole
        cli("run", str(sk03_copy), "--T", "3", "--profile", str(trace)).assert_ok()
    assert json.loads(trace.read_text(encoding="utf-8"))["traceEvents"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".trace-")) == []


def test_run_with_T(cli, sk03_copy):
    run = cli("run", str(sk03_copy), "--T", "37", "--json")
    run.assert_ok()
    data = json.loads(run.stdout)
    assert data["T"] == 37 and data["passed"] and data["outputs"]["y"]["numel"] == 37 * 128
    text = cli("run", str(sk03_copy), "--T", "37")
    text.assert_ok()
    assert "T=37" in text.stdout and "pass" in text.stdout


def test_run_fails_when_an_output_is_wrong(cli, sk03_copy):
    golden = sk03_copy / "golden.py"
    text = golden.read_text(encoding="utf-8")
    assert '"eps": 1e-06' in text
    golden.write_text(text.replace('"eps": 1e-06', '"eps": 0.5', 1), encoding="utf-8")
    run = cli("run", str(sk03_copy), "--T", "5", "--json")
    assert run.exit_code == 1, (run.stdout, run.stderr)
    data = json.loads(run.stdout)
    assert data["passed"] is False
    y = data["outputs"]["y"]
    assert y["passed"] is False and y["wrong"] > y["allowed"] and y["bad_rows"]
    human = cli("run", str(sk03_copy), "--T", "5")
    assert human.exit_code == 1 and "FAIL" in human.stdout


def test_run_applies_the_instance_tolerances(sk03_copy):
    """run uses instance.json's (atol, rtol, ratio, differ): BF16 defaults pass, zero tolerance fails
    (the kernel's output is within one BF16 rounding of the golden, not bit-identical)."""
    meta_path = sk03_copy / "instance.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    assert meta["tolerances"]["y"] == [1e-4, 2.0**-7, 0.005, 0.05]
    result = run_instance(sk03_copy, T=256)
    assert result.passed and 0 < result.outputs["y"]["max_abs_error"]
    meta["tolerances"]["y"] = [0.0, 0.0, 0.0]
    meta_path.write_text(json.dumps(meta), encoding="utf-8")  # a hand edit: its content hash no longer holds
    with pytest.raises(PatternGenError, match="edited by hand"):
        run_instance(sk03_copy, T=256)
    meta.pop("content_hash")
    meta_path.write_text(finalize("instance.json", json.dumps(meta), "b"), encoding="utf-8")  # as a generator would write it
    tight = run_instance(sk03_copy, T=256)
    assert not tight.passed and tight.outputs["y"]["allowed"] == 0 and tight.outputs["y"]["wrong"] > 0


def test_run_bad_input(cli, sk03_copy, tmp_path):
    cli("run", str(tmp_path / "nope")).assert_bad_input("bad-path")
    cli("run", str(tmp_path)).assert_bad_input("instance")
    cli("run", str(sk03_copy), "--T", "0").assert_bad_input("instance")
    cli("run", str(sk03_copy), "--seed", "-1").assert_bad_input("instance")
    cli("run", str(sk03_copy), "--profile", str(tmp_path / "no" / "such" / "t.json")).assert_bad_input("bad-path")


@pytest.mark.parametrize(
    ("file", "edit", "needle"),
    [
        ("kernel.py", lambda t: t + "\ndef (:\n", "SyntaxError"),
        ("kernel.py", lambda t: t.replace("def run(", "def run_renamed("), "defines no function run()"),
        ("kernel.py", lambda t: t + "\nraise RuntimeError('broken on import')\n", "RuntimeError: broken on import"),
        ("golden.py", lambda t: t + "\n\ndef make_inputs(*a, **k):\n    raise ValueError('bad inputs')\n", "make_inputs() failed: ValueError"),
        ("instance.json", lambda t: "{}", "not a pattern-gen plan"),
        ("instance.json", lambda t: "[]", "not a pattern-gen plan"),
    ],
)
def test_run_on_a_broken_instance_names_the_file(cli, sk03_copy, file, edit, needle):
    """A hand-edited or truncated instance is bad input: one message naming the file, exit 2, no traceback."""
    path = sk03_copy / file
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    run = cli("run", str(sk03_copy), "--T", "3")
    run.assert_bad_input("instance")
    assert needle in run.stderr and file in run.stderr, run.stderr


def test_explain_text_and_json(cli):
    name = "sk04-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-kn-u8-a2a3-H256-eps1em05-kv_norm.nogamma"
    text = cli("explain", name)
    text.assert_ok()
    for word in ("SK-04", "AT-10", "has_gamma", "weight_layout", "kn", "unroll", "dim H", "256", "kv_norm.has_gamma", "eps", "1e-05"):
        assert word in text.stdout, word
    data = json.loads(cli("explain", name, "--json").stdout)
    assert data == {
        "skeleton": "SK-04",
        "atom": "AT-10",
        "params": {
            "has_gamma": True,
            "rsqrt_mode": "rsqrt",
            "quant_mode": "none",
            "out_dtype": "BF16",
            "has_bias": False,
            "output_rstd": False,
            "weight_layout": "kn",
            "eps": 1e-05,
        },
        "dims": {"H": 256},
        "stage_params": {"kv_norm": {"has_gamma": False}},
        "unroll": [8, 1],
        "platform": "a2a3",
    }
    # a folder path works too (the last component is the name)
    assert json.loads(cli("explain", f"generated/{name}/", "--json").stdout) == data


@pytest.mark.parametrize("name", ["sk03-at10-zzz", "at10-at10-K256", "sk03-at10-u3"])
def test_explain_bad_name(cli, name):
    cli("explain", name).assert_bad_input("bad-name")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("sk03-at10-gamma-rsqrt-qmxfp8-obf16-nobias-norstd-nk-u128-a2a3", "use --platform ascend950"),
        ("sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128-a2a3-eps0", "'eps' must be > 0"),
    ],
)
def test_explain_refuses_a_name_new_would_refuse(cli, name, why):
    run = cli("explain", name)
    run.assert_bad_input("bad-name")
    assert "refuses" in run.stderr and why in run.stderr, run.stderr


def test_explain_every_generated_instance(cat, instance_dirs):
    from pattern_gen.plan.naming import explain

    for folder in instance_dirs:
        meta = json.loads((folder / "instance.json").read_text(encoding="utf-8"))
        if meta["name"] != folder.name:
            continue
        data = explain(cat, folder.name)
        assert (data["skeleton"], data["atom"], list(data["unroll"]), data["platform"]) == (
            meta["skeleton"], meta["atoms"]["resolved"], meta["unroll"], meta["platform"]
        )
        assert data["stage_params"] == meta["stage_params"]


def test_generate_check_fails_when_a_refusal_no_longer_holds(cli, tmp_path, generated_dir):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(
        "instances:\n"
        "  - {skeleton: SK-03, atoms: AT-10, dims: {K: 256, N: 128}}\n"
        "refused:\n"
        "  - {skeleton: SK-03, atoms: AT-10, params: {quant_mode: mxfp8}, platform: ascend950, expect: composition-refused}\n"
        "  - {skeleton: SK-03, atoms: AT-05, expect: slot-mismatch}\n",
        encoding="utf-8",
    )
    out = tmp_path / "gen"
    run = cli("generate", "--manifest", str(manifest), "--out", str(out))
    assert run.exit_code == 1 and "refusal" in run.stderr and "accepted" in run.stderr, run.stderr
    check = cli("generate", "--manifest", str(manifest), "--out", str(out), "--check")
    assert check.exit_code == 1 and "refusal:" in check.stderr
    assert "AT-05" not in check.stderr, "the refusal that holds is not listed"


def test_generate_bad_manifest(cli, tmp_path):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("instances:\n  - {skeleton: SK-03, atoms: AT-10, dims: {K: 100}}\n  - {skeleton: SK-03, atom: AT-10}\n", encoding="utf-8")
    run = cli("generate", "--manifest", str(manifest), "--out", str(tmp_path / "gen"))
    run.assert_bad_input("manifest")
    assert not (tmp_path / "gen").exists()


def test_a_manifest_entry_new_would_refuse_points_at_its_line(cli, tmp_path):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(
        "instances:\n  - {skeleton: SK-03, atoms: AT-10, dims: {K: 256, N: 128}}\n  - {skeleton: SK-03, atoms: AT-10, params: {has_gama: true}}\n",
        encoding="utf-8",
    )
    run = cli("generate", "--manifest", str(manifest), "--out", str(tmp_path / "gen"))
    run.assert_bad_input("unknown-param")
    assert f"{manifest}:3:" in run.stderr and not (tmp_path / "gen").exists()


# --- the real command line --------------------------------------------------------------------------


def _pattern_gen(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pattern_gen.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_subprocess_new_run_and_refusal(tmp_path):
    done = _pattern_gen("new", "--skeleton", "SK-05", "--atoms", "AT-11", "--dim", "H=256", "--dim", "NQ=4", "--dim", "NKV=2", "--dim", "D=64", "--param", "unroll=4", "--run", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "becomes" not in done.stdout and "T=1: pass" in done.stdout
    folder = tmp_path / "kernels" / "sk05-at11-gamma-rsqrt-qint8-obf16-nobias-norstd-nk-u4-a2a3-H256-NQ4-NKV2-D64"
    assert (folder / "kernel.py").is_file()
    # the generated test runs under pytest on its own
    test = _run_pytest(folder)
    assert test.returncode == 0, test.stdout + test.stderr
    refused = _pattern_gen("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--param", "quant_mode=mxfp8", cwd=tmp_path)
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr and "[composition-refused]" in refused.stderr and "ascend950" in refused.stderr


def _run_pytest(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib", str(folder)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
