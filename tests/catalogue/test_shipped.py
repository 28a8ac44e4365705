"""The shipped catalogue: it validates, and list / show / schema show what the issue asks for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from pattern_gen.catalogue.catalogue import card_files, load_catalogue
from pattern_gen.checks import check_catalogue
from pattern_gen.vocab.resources import package_patterns_dir

_PATTERNS = package_patterns_dir()
#: the card ids the shipped files name (``AT-07-swiglu.yaml`` -> AT-07): every one must load
ATOMS = sorted(p.name[:5] for p in _PATTERNS.glob("atoms/AT-*.yaml"))
SKELETONS = sorted(p.name[:5] for p in _PATTERNS.glob("skeletons/SK-*.yaml"))
ALL = ATOMS + SKELETONS
COUNTS = f"{len(ATOMS)} atoms, {len(SKELETONS)} skeletons"


# --- validate ------------------------------------------------------------------------------------


def test_shipped_catalogue_has_no_problems():
    cat = load_catalogue()
    assert sorted(cat.cards) == ALL
    assert check_catalogue(cat) == []


def test_shipped_catalogue_has_constraints_and_platforms():
    cat = load_catalogue()
    families = {cid.split("-")[1] for cid in cat.constraints}
    assert families == {"API", "TILE", "LOOP", "DATA", "SYM"}
    assert {"a2a3", "ascend950"} <= set(cat.platforms)
    for card in cat.cards.values():
        assert set(card.constraints) <= set(cat.constraints), card.id


def test_cli_validate_ok(cli):
    run = cli("validate")
    assert run.exit_code == 0, run.stderr
    assert "ok" in run.stdout and COUNTS in run.stdout
    assert run.problems == []


def test_cli_validate_shipped_folder_explicitly(cli, shipped):
    run = cli("validate", str(shipped))
    assert run.exit_code == 0, run.stderr


def _console_script() -> str:
    found = shutil.which("pattern-gen") or str(Path(sys.executable).with_name("pattern-gen"))
    assert Path(found).exists(), "the pattern-gen console script is not installed (pip install -e '.[dev]')"
    return found


def test_console_script_validate_exit_0(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PATTERN_GEN_CATALOGUE"}
    proc = subprocess.run([_console_script(), "validate"], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert COUNTS in proc.stdout


def test_console_script_bad_card_exit_2_without_traceback(catalogue_copy, tmp_path):
    catalogue_copy.edit("atoms/AT-03-rmsnorm.yaml", "tags: [norm]", "tags: [norm\n")
    env = {k: v for k, v in os.environ.items() if k != "PATTERN_GEN_CATALOGUE"}
    proc = subprocess.run(
        [_console_script(), "validate", str(catalogue_copy.root)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "AT-03-rmsnorm.yaml:" in proc.stderr and "[yaml-syntax]" in proc.stderr


# --- list ------------------------------------------------------------------------------------------


def _list(cli, *args: str) -> list[dict]:
    run = cli("list", "--json", *args)
    assert run.exit_code == 0, run.stderr
    return json.loads(run.stdout)


def test_list_json_has_every_card(cli):
    rows = _list(cli)
    assert [r["id"] for r in rows] == ALL
    for r in rows:
        assert r["kind"] == ("atom" if r["id"].startswith("AT") else "skeleton")
        assert r["tags"] and all(isinstance(t, str) for t in r["tags"])
        # AT-17 only views the cache: no stage of its own computes
        assert (r["flow"] or r["id"] == "AT-17") and all(isinstance(u, str) for u in r["flow"])
        assert isinstance(r["params"], dict)
        for name, p in r["params"].items():
            assert {"type", "default", "from"} <= set(p), name
    by_id = {r["id"]: r for r in rows}
    assert by_id["AT-10"]["flow"] == ["V", "C"]
    assert by_id["AT-03"]["tags"] == ["norm"]
    assert {"has_gamma", "rsqrt_mode", "quant_mode", "out_dtype"} <= set(by_id["AT-10"]["params"])
    for sk in SKELETONS:
        assert "unroll" in by_id[sk]["params"]
        assert by_id[sk]["flow"][0][0] in "VC" and len(by_id[sk]["flow"][0]) > 1  # V1, C1, …


def test_list_kind_filter(cli):
    assert [r["id"] for r in _list(cli, "--kind", "atom")] == ATOMS
    assert [r["id"] for r in _list(cli, "--kind", "skeleton")] == SKELETONS


def test_list_tag_filter(cli):
    # a tag matches itself and the tags it begins (norm -> norm-linear-fused, norm-linear-quant-fused)
    assert [r["id"] for r in _list(cli, "--tag", "norm")] == ["AT-03", "AT-10", "AT-11"]
    assert [r["id"] for r in _list(cli, "--tag", "norm-linear-quant")] == ["AT-11"]
    assert [r["id"] for r in _list(cli, "--tag", "projection")] == ["SK-03", "SK-04", "SK-05"]
    assert [r["id"] for r in _list(cli, "--kind", "atom", "--tag", "quant")] == ["AT-05", "AT-08"]


def test_list_unknown_tag_exits_2_with_the_closest_tag(cli):
    run = cli("list", "--tag", "nrom")
    run.assert_bad_input()
    (text,) = [t for t, _ in run.problems]
    assert "'nrom'" in text and "did you mean 'norm'" in text


def test_list_unknown_kind_exits_2(cli):
    run = cli("list", "--kind", "atoms")
    assert run.exit_code == 2
    assert "Traceback" not in run.stderr


def test_list_human_table(cli):
    run = cli("list")
    assert run.exit_code == 0, run.stderr
    for cid in ALL:
        assert cid in run.stdout


# --- show ------------------------------------------------------------------------------------------


def test_show_at10_json_inherits_the_mission_parameters(cli):
    run = cli("show", "AT-10", "--json")
    assert run.exit_code == 0, run.stderr
    detail = json.loads(run.stdout)
    rows = {r["name"]: r for r in detail["parameters"]}
    expected = {
        "has_gamma": (True, "AT-03"),
        "rsqrt_mode": ("rsqrt", "AT-03"),
        "quant_mode": ("none", "AT-09"),
        "out_dtype": ("BF16", "AT-09"),
    }
    for name, (default, origin) in expected.items():
        assert rows[name]["default"] == default, name
        assert rows[name]["from"] == origin, name
    assert rows["rsqrt_mode"]["choices"] == ["rsqrt", "sqrt_div"]
    assert rows["quant_mode"]["choices"] == ["none", "int8_w8a8", "mxfp8", "fp8_w8a8"]
    assert rows["out_dtype"]["choices"] == ["BF16", "FP32"]
    assert rows["has_gamma"]["type"] == "bool"
    assert detail["used_by"] == ["SK-03", "SK-04", "SK-05"]
    assert detail["depends_on"] == ["AT-03", "AT-09"]
    assert detail["flow"] == ["V", "C"]
    assert [c["id"] for c in detail["constraints"]]
    assert detail["performance"]["options"]


def test_show_is_case_insensitive_and_has_a_human_table(cli):
    run = cli("show", "at-10")
    assert run.exit_code == 0, run.stderr
    for word in ("has_gamma", "rsqrt_mode", "quant_mode", "out_dtype", "AT-03", "AT-09", "SK-04"):
        assert word in run.stdout


@pytest.mark.parametrize("card_id", ALL)
def test_show_every_card(cli, card_id):
    run = cli("show", card_id)
    assert run.exit_code == 0, run.stderr
    assert run.stdout.startswith(card_id)
    assert "not available" not in run.stdout
    run = cli("show", card_id, "--json")
    assert run.exit_code == 0, run.stderr
    detail = json.loads(run.stdout)
    assert detail["id"] == card_id and isinstance(detail["parameters"], list)


def test_show_skeleton_json(cli):
    run = cli("show", "SK-04", "--json")
    assert run.exit_code == 0, run.stderr
    detail = json.loads(run.stdout)
    assert detail["kind"] == "skeleton"
    assert detail["slot"]["default"] == "AT-10"
    assert detail["used_by"] == []
    assert detail["loop"]["candidates"]


def test_used_by_is_derived(cli):
    rows = {r["id"]: r for r in _list(cli)}
    assert rows["AT-03"]["used_by"] == sorted(["AT-10", "AT-11"] + [s for s in SKELETONS if "AT-03" in rows[s]["depends_on"]])
    for cid, row in rows.items():
        for dep in row["depends_on"]:
            assert cid in rows[dep]["used_by"]


def test_show_unknown_id_exits_2_with_did_you_mean(cli):
    run = cli("show", "at-99")
    run.assert_bad_input()
    assert run.codes() == ["unknown-card"]
    assert "did you mean 'AT-09'" in run.problems[0][0]


# --- schema ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def card_schema() -> dict:
    from click.testing import CliRunner

    from pattern_gen.cli import main

    result = CliRunner().invoke(main, ["schema"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_schema_is_a_valid_draft_2020_12_schema(card_schema):
    jsonschema.Draft202012Validator.check_schema(card_schema)
    assert card_schema["$schema"].endswith("2020-12/schema")


@pytest.mark.parametrize("card", sorted(p.name for p in card_files(Path(__file__).resolve().parents[2] / "patterns")))
def test_every_shipped_card_validates_against_the_schema(card_schema, shipped, card):
    (path,) = [p for p in card_files(shipped) if p.name == card]
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(card_schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])


def test_schema_rejects_what_the_loader_rejects(card_schema, shipped):
    """The schema is not a blank cheque: unknown keys, bad enums and wrong types fail it too."""
    validator = jsonschema.Draft202012Validator(card_schema)
    base = yaml.safe_load((shipped / "atoms" / "AT-03-rmsnorm.yaml").read_text(encoding="utf-8"))

    def fails(mutate) -> bool:
        data = yaml.safe_load(yaml.safe_dump(base))
        mutate(data)
        return bool(list(validator.iter_errors(data)))

    assert fails(lambda d: d.__setitem__("flow_pattern", ["V"]))
    assert fails(lambda d: d.__setitem__("kind", "atomm"))
    assert fails(lambda d: d["stages"][1]["ops"][0].__setitem__("op", "sqrtt"))
    assert fails(lambda d: d["stages"][1]["ops"][0].__setitem__("to", "FP23"))
    assert fails(lambda d: d["stages"][1].__setitem__("unit", "X"))
    assert fails(lambda d: d["params"]["has_gamma"].__setitem__("type", "boolean"))
    assert fails(lambda d: d["stages"][1]["ops"][5].__setitem__("when", "rsqrt"))
    assert fails(lambda d: d.__setitem__("tags", "norm"))


def test_schema_when_default_is_the_card_form(card_schema):
    """``when`` defaults to ``{}`` (always) in the schema, as a card would write it."""
    when = card_schema["$defs"]["CastOp"]["properties"]["when"]
    assert when.get("default") == {}
    assert "object" in when["type"]
