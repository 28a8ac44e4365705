"""``validate CARD.yaml`` checks a card in the context of the shipped catalogue (an explicit file
replaces the card with the same id); ``--catalogue DIR`` / ``PATTERN_GEN_CATALOGUE`` add a folder of
the user's own cards, whose ids must be new."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.checks import check_catalogue
from pattern_gen.vocab.resources import package_patterns_dir

AT10 = "atoms/AT-10-norm-linear.yaml"
_SHIPPED = package_patterns_dir()
N_ATOMS = len(list(_SHIPPED.glob("atoms/AT-*.yaml")))
N_SKELETONS = len(list(_SHIPPED.glob("skeletons/SK-*.yaml")))
N_CARDS = N_ATOMS + N_SKELETONS


def _copy(shipped: Path, rel: str, dest: Path, replace: tuple[str, str] | None = None) -> Path:
    text = (shipped / rel).read_text(encoding="utf-8")
    if replace is not None:
        assert replace[0] in text, f"{replace[0]!r} not in {rel}: the shipped card changed"
        text = text.replace(replace[0], replace[1], 1)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text, encoding="utf-8")
    return dest


# --- single card files ------------------------------------------------------------------------------


def test_unchanged_copy_of_a_card_validates(cli, shipped, tmp_path):
    card = _copy(shipped, AT10, tmp_path / "AT-10-mine.yaml")
    run = cli("validate", str(card))
    assert run.exit_code == 0, run.stderr


def test_explicit_file_replaces_the_card_with_the_same_id(shipped, tmp_path):
    card = _copy(shipped, AT10, tmp_path / "AT-10-mine.yaml", ("title: RMSNorm + Linear (Fused)", "title: My AT-10"))
    cat = load_catalogue(files=[card])
    assert cat.file_of("AT-10") == str(card)
    assert cat.cards["AT-10"].title == "My AT-10"
    assert len(cat.cards) == N_CARDS
    assert check_catalogue(cat) == []


def test_edited_copy_is_checked_in_context(cli, shipped, tmp_path):
    """A flow mismatch in the copy is reported against the copy, not the shipped card."""
    card = _copy(shipped, AT10, tmp_path / "AT-10-mine.yaml", ("flow: [V, C]", "flow: [C]"))
    run = cli("validate", str(card))
    run.assert_bad_input()
    assert run.codes() == ["flow-mismatch"], run.stderr
    assert run.problems[0][0].startswith(f"{card}:9:")


def test_edited_copy_breaking_a_skeleton_is_reported(cli, shipped, tmp_path):
    """With other tags, AT-10 no longer fits the skeletons' slot: the checks see the copy."""
    card = _copy(shipped, AT10, tmp_path / "AT-10-mine.yaml", ("tags: [norm-linear-fused]", "tags: [norm]"))
    run = cli("validate", str(card))
    run.assert_bad_input()
    assert "slot-mismatch" in run.codes(), run.stderr


def test_edited_copy_with_a_schema_error(cli, shipped, tmp_path):
    card = _copy(shipped, AT10, tmp_path / "AT-10-mine.yaml", ("examples: [", "exampels: ["))
    run = cli("validate", str(card))
    run.assert_bad_input()
    assert run.codes() == ["card-schema"]
    assert run.problems[0][0].startswith(f"{card}:") and "did you mean 'examples'" in run.problems[0][0]


def test_two_files_at_once(cli, shipped, tmp_path):
    a = _copy(shipped, AT10, tmp_path / "AT-10-mine.yaml", ("flow: [V, C]", "flow: [V]"))
    b = _copy(shipped, "atoms/AT-05-int8-quant.yaml", tmp_path / "AT-05-mine.yaml", ("tags: [quant]", "tags: [quant"))
    run = cli("validate", str(a), str(b))
    run.assert_bad_input()
    # the YAML error stops the run before the cross-card checks; it names the second file
    assert run.codes() == ["yaml-syntax"]
    assert run.problems[0][0].startswith(f"{b}:")


def test_new_card_file_validated_in_context(cli, shipped, tmp_path):
    card = _copy(shipped, "atoms/AT-05-int8-quant.yaml", tmp_path / "AT-21-my-quant.yaml", ("id: AT-05", "id: AT-21"))
    run = cli("validate", str(card))
    assert run.exit_code == 0, run.stderr
    assert f"{N_ATOMS + 1} atoms" in run.stdout


def test_card_file_with_a_name_that_does_not_match_its_id(cli, shipped, tmp_path):
    card = _copy(shipped, AT10, tmp_path / "my-card.yaml")
    run = cli("validate", str(card))
    run.assert_bad_input()
    assert run.codes() == ["card-id"]
    assert run.problems[0][0].startswith(f"{card}:1:")


def test_missing_card_file(cli, tmp_path):
    run = cli("validate", str(tmp_path / "AT-10-nope.yaml"))
    run.assert_bad_input()
    assert run.codes() == ["bad-path"]


# --- user folders ---------------------------------------------------------------------------------------


def _user_card(shipped: Path, folder: Path) -> Path:
    return _copy(shipped, "atoms/AT-05-int8-quant.yaml", folder / "AT-20-my-quant.yaml", ("id: AT-05", "id: AT-20"))


def test_user_folder_card_is_listed_and_shown(cli, shipped, tmp_path):
    user = tmp_path / "mine"
    _user_card(shipped, user)
    run = cli("--catalogue", str(user), "list", "--json")
    assert run.exit_code == 0, run.stderr
    ids = [r["id"] for r in json.loads(run.stdout)]
    assert "AT-20" in ids and len(ids) == N_CARDS + 1
    run = cli("--catalogue", str(user), "show", "AT-20", "--json")
    assert run.exit_code == 0, run.stderr
    assert json.loads(run.stdout)["file"] == str(user / "AT-20-my-quant.yaml")
    run = cli("--catalogue", str(user), "validate")
    assert run.exit_code == 0, run.stderr
    assert f"{N_ATOMS + 1} atoms" in run.stdout


def test_validate_of_a_user_folder_checks_it_on_top_of_the_shipped_catalogue(cli, shipped, tmp_path):
    """A folder without platforms/ is the user's own cards, not a whole catalogue: its cards may use
    the shipped atoms, and a problem in it is still reported with its file."""
    user = tmp_path / "mine"
    _user_card(shipped, user)
    run = cli("validate", str(user))
    assert run.exit_code == 0, run.stderr
    assert f"{N_ATOMS + 1} atoms, {N_SKELETONS} skeletons" in run.stdout
    _copy(shipped, "atoms/AT-05-int8-quant.yaml", user / "AT-21-broken.yaml", ("id: AT-05", "id: AT-21\nbogus_key: 1"))
    run = cli("validate", str(user))
    assert run.exit_code == 2 and "AT-21-broken.yaml" in run.stderr and "bogus_key" in run.stderr, run.stderr


def test_user_folder_from_the_environment(cli, shipped, tmp_path):
    user = tmp_path / "mine"
    _user_card(shipped, user)
    run = cli("list", "--json", "--kind", "atom", env={"PATTERN_GEN_CATALOGUE": str(user)})
    assert run.exit_code == 0, run.stderr
    assert "AT-20" in [r["id"] for r in json.loads(run.stdout)]


def test_user_folders_from_the_environment_are_pathsep_separated(shipped, tmp_path, monkeypatch):
    one, two = tmp_path / "one", tmp_path / "two"
    _user_card(shipped, one)
    _copy(shipped, "atoms/AT-06-int8-dequant.yaml", two / "AT-92-my-dequant.yaml", ("id: AT-06", "id: AT-92"))
    monkeypatch.setenv("PATTERN_GEN_CATALOGUE", os.pathsep.join([str(one), str(two)]))
    cat = load_catalogue()
    assert {"AT-20", "AT-92"} <= set(cat.cards)


def test_user_folder_with_atoms_subfolder(cli, shipped, tmp_path):
    user = tmp_path / "mine"
    _user_card(shipped, user / "atoms")
    run = cli("--catalogue", str(user), "list", "--json")
    assert run.exit_code == 0, run.stderr
    assert "AT-20" in [r["id"] for r in json.loads(run.stdout)]


def test_user_card_reusing_a_shipped_id_is_a_duplicate(cli, shipped, tmp_path):
    user = tmp_path / "mine"
    user.mkdir()
    shutil.copy(shipped / "atoms" / "AT-05-int8-quant.yaml", user / "AT-05-int8-quant.yaml")
    for args in (["validate"], ["list"]):
        run = cli("--catalogue", str(user), *args)
        run.assert_bad_input()
        assert run.codes() == ["duplicate-id"], run.stderr
        text = run.problems[0][0]
        assert text.startswith(f"{user / 'AT-05-int8-quant.yaml'}:1:")
        assert str(shipped / "atoms" / "AT-05-int8-quant.yaml") in text


def test_user_card_with_a_problem_is_reported_with_its_file(cli, shipped, tmp_path):
    user = tmp_path / "mine"
    _copy(shipped, "atoms/AT-05-int8-quant.yaml", user / "AT-20-my-quant.yaml", ("id: AT-05", "id: AT-20"))
    (user / "AT-20-my-quant.yaml").write_text(
        (user / "AT-20-my-quant.yaml").read_text().replace("{op: abs, in: xf, out: ax}", "{op: abs, in: xff, out: ax}")
    )
    run = cli("--catalogue", str(user), "validate")
    run.assert_bad_input()
    assert run.codes() == ["undefined-name"]
    assert run.problems[0][0].startswith(f"{user / 'AT-20-my-quant.yaml'}:")


def test_missing_user_folder(cli, tmp_path):
    run = cli("--catalogue", str(tmp_path / "nope"), "list")
    run.assert_bad_input()
    assert run.codes() == ["bad-path"]


def test_show_of_a_card_that_fails_validation_does_not_crash(cli, shipped, tmp_path):
    """``show`` does not run the checks: a card with a dangling ``{param: …}`` still shows."""
    user = tmp_path / "mine"
    _copy(
        shipped,
        "atoms/AT-11-norm-quant-linear.yaml",
        user / "AT-21-odd.yaml",
        ("id: AT-11", "id: AT-21"),
    )
    card = user / "AT-21-odd.yaml"
    card.write_text(card.read_text().replace("quant_mode: {param: quant_mode}", "quant_mode: {param: quant_mod}"))
    run = cli("--catalogue", str(user), "show", "AT-21")
    assert run.exit_code == 0, run.stderr + repr(run.exception)
    assert "not available" in run.stdout
    run = cli("--catalogue", str(user), "validate")
    run.assert_bad_input()
    assert run.codes() == ["unknown-param"]


def test_same_user_folder_given_twice_is_read_once(cli, shipped, tmp_path):
    """``--catalogue`` twice, or both it and PATTERN_GEN_CATALOGUE, name one folder: no duplicate ids."""
    user = tmp_path / "mine"
    _user_card(shipped, user)
    runs = [
        cli("--catalogue", str(user), "--catalogue", str(tmp_path / "." / "mine"), "list", "--json"),
        cli("--catalogue", str(user), "list", "--json", env={"PATTERN_GEN_CATALOGUE": str(user)}),
        cli("--catalogue", str(user), "validate", str(user), env={"PATTERN_GEN_CATALOGUE": str(user)}),
    ]
    for run in runs:
        assert run.exit_code == 0, run.stderr
    ids = [r["id"] for r in json.loads(runs[0].stdout)]
    assert ids.count("AT-20") == 1 and len(ids) == N_CARDS + 1


# --- card text is shown as written ---------------------------------------------------------------------


def test_card_text_with_brackets_is_shown_literally(cli, shipped, tmp_path):
    """Titles, summaries and rules are text, not rich markup: ``[int8]`` stays, ``[/x]`` does not crash."""
    user = tmp_path / "mine"
    card = _user_card(shipped, user)
    text = card.read_text(encoding="utf-8")
    title = next(ln for ln in text.splitlines() if ln.startswith("title: "))
    text = text.replace(title, 'title: "Quant [int8] [/x] [bold]"', 1).replace("summary: >-\n", "summary: >-\n  Rows of List[int] [/x] [red]\n", 1)
    card.write_text(text, encoding="utf-8")
    run = cli("--catalogue", str(user), "show", "AT-20")
    assert run.exit_code == 0, run.stderr + repr(run.exception)
    assert "AT-20 Quant [int8] [/x] [bold]" in run.stdout
    assert "Rows of List[int] [/x] [red]" in run.stdout
    run = cli("--catalogue", str(user), "list", "--kind", "atom")
    assert run.exit_code == 0, run.stderr + repr(run.exception)
    assert "[int8]" in run.stdout and "[/x]" in run.stdout


def test_shipped_constraint_rule_keeps_its_brackets(cli):
    run = cli("show", "SK-03")
    assert run.exit_code == 0, run.stderr
    assert "List[int]" in "".join(run.stdout.split())  # the table may wrap the rule


def test_user_skeleton_with_its_own_golden_composition(cli, shipped, tmp_path, monkeypatch):
    """A skeleton of the user's folder takes its golden composition from golden/<SK>.py beside the
    cards; without one, `new` says where to write it and writes nothing."""
    from pattern_gen.emit.render import GOLDEN

    user = tmp_path / "mine"
    _copy(shipped, "skeletons/SK-03-linear-projection.yaml", user / "SK-90-my-projection.yaml", ("id: SK-03", "id: SK-90"))
    monkeypatch.chdir(tmp_path)
    args = ("--catalogue", str(user), "new", "--skeleton", "SK-90", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128")
    missing = cli(*args)
    assert missing.exit_code == 2 and str(user / "golden" / "SK-90.py") in missing.stderr, missing.stderr
    assert not (tmp_path / "kernels").exists()
    (user / "golden").mkdir()
    shutil.copy(GOLDEN / "SK-03.py", user / "golden" / "SK-90.py")
    run = cli(*args, "--run")
    assert run.exit_code == 0, run.stderr
    (folder,) = (tmp_path / "kernels").iterdir()
    assert folder.name.startswith("sk90-at10-") and "T=1: pass" in run.stdout


def test_a_card_saved_as_yml_is_reported_not_skipped(cli, shipped, tmp_path):
    user = tmp_path / "mine"
    _copy(shipped, "atoms/AT-05-int8-quant.yaml", user / "AT-21-my-quant.yml", ("id: AT-05", "id: AT-21"))
    (user / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")  # not a card: none of ours
    run = cli("--catalogue", str(user), "validate")
    assert run.exit_code == 2 and "AT-21-my-quant.yml" in run.stderr and "rename it to AT-21-my-quant.yaml" in run.stderr
    assert "mkdocs.yml" not in run.stderr
