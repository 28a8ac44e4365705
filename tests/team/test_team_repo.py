"""A kernel team's own repository (issue 15): project config, init, new-card, goldens of new
cards, and the CLI frictions of a first hour — run in folders outside this checkout."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SMALL = ["--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128"]


@pytest.fixture
def team(tmp_path, monkeypatch, cli):
    """``pattern-gen init team`` in a fresh folder; the working directory is the team's."""
    monkeypatch.delenv("PATTERN_GEN_CATALOGUE", raising=False)
    monkeypatch.chdir(tmp_path)
    cli("init", "team").assert_ok()
    monkeypatch.chdir(tmp_path / "team")
    return tmp_path / "team"


def test_init_scaffolds_a_team_repository(team, cli):
    for rel in ("pattern-gen.toml", "manifest.yaml", ".gitignore", ".pre-commit-config.yaml", ".github/workflows/pattern-gen.yml", "cards/golden/AT-50.py"):
        assert (team / rel).is_file(), rel
    assert list((team / "cards" / "atoms").glob("AT-50-*.yaml"))
    run = cli("config")
    run.assert_ok()
    assert "pattern-gen.toml:3" in run.stdout and str(team / "cards") in run.stdout
    cli("validate").assert_ok()


def test_init_never_overwrites_and_a_rerun_changes_nothing(team, cli, monkeypatch):
    monkeypatch.chdir(team.parent)
    before = {p: p.read_bytes() for p in team.rglob("*") if p.is_file() and ".git" not in p.parts}
    (team / "manifest.yaml").write_text("instances: []  # the team's own\n")
    run = cli("init", "team")
    run.assert_ok()
    assert "wrote" not in run.stdout
    assert f"kept {Path('team') / 'manifest.yaml'}: exists; left as it is" in run.stdout
    assert (team / "manifest.yaml").read_text() == "instances: []  # the team's own\n"
    after = {p: p.read_bytes() for p in team.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert {p for p in after if after[p] != before.get(p)} == {team / "manifest.yaml"}


def test_init_adopts_an_existing_repository(tmp_path, monkeypatch, cli):
    """A team adopting the tool has a README and a .gitignore: both survive, the .gitignore gets
    only the lines it lacks, and the report says what was kept."""
    monkeypatch.delenv("PATTERN_GEN_CATALOGUE", raising=False)
    (tmp_path / "README.md").write_text("# our kernels\n")
    (tmp_path / ".gitignore").write_text("*.pyc\nkernels/\n")
    monkeypatch.chdir(tmp_path)
    run = cli("init", ".")
    run.assert_ok()
    assert (tmp_path / "README.md").read_text() == "# our kernels\n"
    assert "kept README.md: exists; left as it is" in run.stdout
    ignore = (tmp_path / ".gitignore").read_text().splitlines()
    assert ignore[:2] == ["*.pyc", "kernels/"] and ignore.count("kernels/") == 1 and "build/" in ignore
    assert (tmp_path / "cards" / "golden" / "AT-50.py").is_file()
    cli("validate").assert_ok()


def test_init_finishes_an_interrupted_init(tmp_path, monkeypatch, cli):
    monkeypatch.delenv("PATTERN_GEN_CATALOGUE", raising=False)
    monkeypatch.chdir(tmp_path)
    cli("init", "team").assert_ok()
    (tmp_path / "team" / ".pre-commit-config.yaml").unlink()
    (tmp_path / "team" / "cards" / "golden" / "AT-50.py").unlink()  # a card without its golden: kept as is
    run = cli("init", "team")
    run.assert_ok()
    assert f"wrote {Path('team') / '.pre-commit-config.yaml'}" in run.stdout
    assert (tmp_path / "team" / ".pre-commit-config.yaml").is_file()


def test_ci_installs_the_tool_from_where_the_team_pins_it(tmp_path, monkeypatch, cli):
    """Never by the index name ``pattern-gen`` (an unrelated 2013 project on PyPI)."""
    monkeypatch.delenv("PATTERN_GEN_CATALOGUE", raising=False)
    monkeypatch.chdir(tmp_path)
    pin = "pypto-pattern-gen @ git+https://git.example.org/team/pattern-gen@v0.1.0"
    cli("init", "pinned", "--tool-source", pin).assert_ok()
    workflow = (tmp_path / "pinned" / ".github" / "workflows" / "pattern-gen.yml").read_text()
    assert "pip install -r requirements-pattern-gen.txt" in workflow
    assert "pip install pattern-gen" not in workflow
    assert (tmp_path / "pinned" / "requirements-pattern-gen.txt").read_text().splitlines()[-1] == pin
    run = cli("init", "unpinned")  # an editable checkout: nothing CI can reach, so no line is guessed
    run.assert_ok()
    text = (tmp_path / "unpinned" / "requirements-pattern-gen.txt").read_text()
    assert all(line.startswith("#") for line in text.splitlines()) and "warning:" in run.stderr
    bad = cli("init", "other", "--tool-source", "x\ny")
    bad.assert_bad_input("bad-path")


def test_the_team_folders_are_used_and_only_they(team, cli):
    cli("new", *SMALL, "-q").assert_ok()
    assert (team / "kernels").is_dir()
    cli("generate").assert_ok()
    (instance,) = [p for p in (team / "generated").iterdir() if p.is_dir()]
    check = cli("generate", "--check")
    check.assert_ok()
    assert str(team / "generated") in check.stdout
    with open(instance / "kernel.py", "a", encoding="utf-8") as fh:
        fh.write("# a hand edit\n")
    drift = cli("generate", "--check")
    assert drift.exit_code == 1
    assert "pattern-gen generate --force" in drift.stderr
    cli("generate", "--force").assert_ok()  # the suggested command works
    cli("generate", "--check").assert_ok()


def test_a_new_atom_without_its_golden_is_refused(team, cli):
    (team / "cards" / "golden" / "AT-50.py").unlink()
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-50", "--dim", "K=256", "--dim", "N=128")
    run.assert_bad_input("missing-golden")
    assert str(team / "cards" / "golden" / "AT-50.py") in run.stderr
    assert not (team / "kernels").exists()


def test_new_card_stub_fails_until_written(team, cli):
    made = cli("new-card", "AT-51", "--from", "AT-10")
    made.assert_ok()
    stub = team / "cards" / "golden" / "AT-51.py"
    assert "def norm_linear(" in stub.read_text() and "NotImplementedError" in stub.read_text()
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-51", "--dim", "K=256", "--dim", "N=128", "--run")
    assert run.exit_code == 2 and "not written yet" in run.stderr
    assert "nothing was written" not in run.stderr  # the instance was written before the run failed
    # written by hand (here: the shipped reference, as a team would start), it passes
    from pattern_gen.emit.render import GOLDEN

    source = (GOLDEN / "atoms.py").read_text()
    stub.write_text("from atoms import *\n" + source[source.index("def norm_linear("):source.index("\ndef uniform(")])
    cli("new", "--skeleton", "SK-03", "--atoms", "AT-51", "--dim", "K=256", "--dim", "N=128", "--run", "--force").assert_ok()


def test_new_card_refuses_taken_ids_and_kinds(team, cli):
    cli("new-card", "AT-10", "--from", "AT-03").assert_bad_input("duplicate-id")
    cli("new-card", "SK-30", "--from", "AT-03").assert_bad_input("card-id")


def test_config_errors_point_at_the_line(tmp_path, monkeypatch, cli):
    (tmp_path / "pattern-gen.toml").write_text('catalogue = ["cards"]\nmanifets = "m.yaml"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = cli("config")
    run.assert_bad_input("bad-config")
    assert "pattern-gen.toml:2" in run.stderr and "did you mean 'manifest'" in run.stderr


@pytest.mark.parametrize("text, says", [
    ("a = " + "[" * 3000 + "]" * 3000, "nested too deep"),
    ('catalogue = ["a\\u0000b"]', "NUL"),
    ('catalogue = ["' + "a" * 5000 + '"]', "longer than a path may be"),
    ('kernels = "loop/k"', "cannot be followed"),
    ('catalogue = "/"', "holds no cards"),
])
def test_config_values_that_cannot_be_paths_are_one_message(tmp_path, monkeypatch, cli, text, says):
    """Issue 35: these reached open() or resolve() and ended in a RecursionError, ValueError, OSError
    or RuntimeError traceback; "/" was read as an empty catalogue."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "pattern-gen.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    run = cli("validate")
    run.assert_bad_input()
    assert says in run.stderr, run.stderr


def test_pyproject_section_is_found_walking_up(tmp_path, monkeypatch, cli):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "k"\n[tool.pattern-gen]\nkernels = "out/k"\n', encoding="utf-8")
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    run = cli("config")
    run.assert_ok()
    assert str(tmp_path / "out" / "k") in run.stdout and "pyproject.toml:4" in run.stdout


def test_quiet_json_and_names(team, cli):
    quiet = cli("new", *SMALL, "--name", "mine", "--run", "-q")
    quiet.assert_ok()
    assert quiet.stdout.splitlines()[0].endswith("kernels/mine") and len(quiet.stdout.splitlines()) == 5
    as_json = cli("new", *SMALL, "--name", "mine", "--run", "--json")
    as_json.assert_ok()
    data = json.loads(as_json.stdout)
    assert data["name"] == "mine" and all(r["passed"] for r in data["runs"]) and data["plan"]["skeleton"] == "SK-03"
    explained = cli("explain", "mine")  # a --name'd instance: read from its instance.json
    explained.assert_ok()
    assert "SK-03" in explained.stdout and "AT-10" in explained.stdout
    ran = cli("run", "mine", "--T", "5", "--profile")  # by name; the trace goes under build/
    ran.assert_ok()
    assert list((team / "build" / "traces").glob("mine-T5.json"))
    assert "bound" in ran.stdout  # the estimate is interpreted


def test_atoms_default_to_the_slot_default(team, cli):
    run = cli("new", "--skeleton", "SK-03", "--dim", "K=256", "--dim", "N=128", "--dry-run")
    run.assert_ok()
    assert "sk03-at10-" in run.stdout


def test_tile_overrides_are_checked_not_shrunk(team, cli):
    ok = cli("new", *SMALL, "--tile", "proj.rmsnorm=4x256", "--dry-run")
    ok.assert_ok()
    assert "-tiles" in ok.stdout and "from --tile" in ok.stdout
    cli("new", "--skeleton", "SK-03", "--tile", "proj.rmsnorm=64x4096", "--dry-run").assert_bad_input("tile-unfit")
    cli("new", *SMALL, "--tile", "proj.rmsnrm=4x256", "--dry-run").assert_bad_input("tile-unfit")
    cli("new", *SMALL, "--tile", "proj.linear=4x256", "--dry-run").assert_bad_input("tile-unfit")
    cli("new", *SMALL, "--tile", "proj.linear=m:32,k:1,n:1", "--dry-run").assert_bad_input("bad-param-value")


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_pre_commit_runs_the_hooks(team):
    pytest.importorskip("pre_commit", reason="pre-commit is not installed")
    env_bin = str(Path(sys.executable).parent)
    subprocess.run(["pattern-gen", "generate"], cwd=team, check=True, capture_output=True)
    subprocess.run(["git", "add", "-A"], cwd=team, check=True)
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=team, capture_output=True, text=True, timeout=300,
        env={"PATH": env_bin + ":/usr/bin:/bin", "HOME": str(team), "PRE_COMMIT_HOME": str(team / ".pc")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pattern-gen validate" in done.stdout and "Passed" in done.stdout
