"""``validate`` records a clean result and answers from the record while nothing it depends on changed."""

from __future__ import annotations

import shutil

import pytest

import pattern_gen.checks as checks
from pattern_gen.vocab.resources import package_patterns_dir


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("PATTERN_GEN_NO_CACHE", raising=False)
    monkeypatch.setenv("PATTERN_GEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _count_checks(monkeypatch) -> list[int]:
    calls = [0]
    original = checks.check_catalogue

    def counted(cat):
        calls[0] += 1
        return original(cat)

    monkeypatch.setattr(checks, "check_catalogue", counted)
    return calls


def test_an_unchanged_catalogue_is_not_checked_twice(cli, cache, monkeypatch):
    calls = _count_checks(monkeypatch)
    first, second = cli("validate"), cli("validate")
    assert first.exit_code == second.exit_code == 0 and first.stdout == second.stdout
    assert calls[0] == 1 and len(list(cache.iterdir())) == 1


def test_an_edited_card_is_checked_again_and_its_problem_reported(cli, cache, monkeypatch, tmp_path):
    mine = tmp_path / "mine"
    (mine / "atoms").mkdir(parents=True)
    card = mine / "atoms" / "AT-50.yaml"
    src = (package_patterns_dir() / "atoms" / "AT-03-rmsnorm.yaml").read_text()
    card.write_text(src.replace("id: AT-03", "id: AT-50"))
    calls = _count_checks(monkeypatch)
    assert cli("validate", mine).exit_code == 0
    card.write_text(src.replace("id: AT-03", "id: AT-50").replace("default: 1.0e-6", "default: -1.0"))
    broken = cli("validate", mine)
    assert broken.exit_code == 2 and broken.problems
    assert calls[0] >= 1
    again = cli("validate", mine)  # a failure is never recorded: the problem is reported again
    assert again.exit_code == 2 and again.problems == broken.problems


def test_no_cache_turns_it_off(cli, cache, monkeypatch):
    monkeypatch.setenv("PATTERN_GEN_NO_CACHE", "1")
    calls = _count_checks(monkeypatch)
    cli("validate"), cli("validate")
    assert calls[0] == 2 and not cache.exists()


def test_an_unwritable_cache_only_costs_time(cli, cache, monkeypatch):
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("not a folder")
    calls = _count_checks(monkeypatch)
    assert cli("validate").exit_code == 0 and cli("validate").exit_code == 0
    assert calls[0] == 2
    shutil.rmtree(cache, ignore_errors=True)
