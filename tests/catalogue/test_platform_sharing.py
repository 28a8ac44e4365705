"""The checks expand a card once for every platform that answers its questions alike.

``PlatformView`` remembers what an expansion asked of a profile; ``_Expansions.on_platforms`` gives a
later platform that answers all of it the same way the earlier outcome. These tests prove the
shortcut changes nothing the checks report: the same problems, in the same order, with the same
contexts, with and without it — on the shipped catalogue and on cards broken on one platform only,
on both, or whose skeleton predicates read the platform's name.
"""

from __future__ import annotations

import pytest

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.checks import check_catalogue, flows
from pattern_gen.flow.platform_view import PlatformView
from pattern_gen.vocab.resources import package_patterns_dir

AT03 = "atoms/AT-03-rmsnorm.yaml"
AT15 = "atoms/AT-15-expert-gating.yaml"
SK03 = "skeletons/SK-03-linear-projection.yaml"


def _checked(root, monkeypatch: pytest.MonkeyPatch, share: bool) -> tuple[list[tuple], int]:
    """The problems (code, message, file, line) and how many skeleton expansions ran."""
    calls = []
    real = flows.expand_skeleton
    monkeypatch.setattr(flows, "SHARE_ACROSS_PLATFORMS", share)
    monkeypatch.setattr(flows, "expand_skeleton", lambda *a, **k: calls.append(1) or real(*a, **k))
    problems = check_catalogue(load_catalogue(base=root))
    monkeypatch.undo()
    return [(p.code, p.message, p.where) for p in problems], len(calls)


def _same_either_way(root, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    shared, n_shared = _checked(root, monkeypatch, True)
    full, n_full = _checked(root, monkeypatch, False)
    assert shared == full
    assert n_shared < n_full, "nothing was shared"
    return shared


@pytest.fixture(scope="module")
def profiles():
    cat = load_catalogue(base=package_patterns_dir())
    return cat.platforms["a2a3"], cat.platforms["ascend950"]


def test_a_view_remembers_each_answer_and_compares_them(profiles) -> None:
    a2a3, a950 = profiles
    view = PlatformView(a2a3)
    assert view.ask("dtype", "BF16") and view.ask("cast", "BF16", "FP32")
    assert view.agrees(a950)  # both have BF16 and cast it to FP32
    assert not view.ask("cast", "BF16", "FP16")  # a2a3 goes through FP32; the 950 casts directly
    assert not view.agrees(a950) and view.agrees(a2a3)
    named = PlatformView(a2a3)
    assert named.name == "a2a3" and not named.agrees(a950)  # a message naming the platform is its own
    fp8 = PlatformView(a950)
    assert fp8.ask("dtype", "FP8E4M3") and fp8.ask("matmul_out", "FP8E4M3", "FP8E4M3", "FP32", True)
    assert not fp8.agrees(a2a3)
    assert list(fp8.answers) == [("dtype", "FP8E4M3"), ("matmul_out", "FP8E4M3", "FP8E4M3", "FP32", True)]


def test_the_shipped_catalogue_is_checked_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _same_either_way(package_patterns_dir(), monkeypatch) == []


def test_a_card_broken_on_one_platform_only(catalogue_copy, monkeypatch: pytest.MonkeyPatch) -> None:
    # BF16 -> FP16 is a direct cast on the 950 only: a2a3 reports it, the 950 builds the card
    cat = catalogue_copy
    cat.edit(AT03, "{op: cast, in: x, to: FP32, out: xf,", "{op: cast, in: x, to: FP16, out: x16}\n      - {op: cast, in: x16, to: FP32, out: xf,")
    problems = _same_either_way(cat.root, monkeypatch)
    assert problems and all("on a2a3" in message for _code, message, _where in problems), problems


def test_a_card_broken_on_both_platforms(catalogue_copy, monkeypatch: pytest.MonkeyPatch) -> None:
    cat = catalogue_copy
    cat.edit(AT15, "{op: where, in: [chosen, s, {scalar: 0.0}], out: w}", "{op: where, in: [masked, s, {scalar: 0.0}], out: w}")
    problems = _same_either_way(cat.root, monkeypatch)
    assert [code for code, _m, _w in problems] == ["dtype-illegal"]


def test_a_skeleton_that_reads_the_platform_is_expanded_on_each(catalogue_copy, monkeypatch: pytest.MonkeyPatch) -> None:
    # rstd is assembled on a2a3 only: on the 950 the output is never written. Shared by its answers
    # alone (the name read by the predicate not counted), the 950 would take a2a3's clean expansion.
    cat = catalogue_copy
    cat.edit(SK03, "into: rstd, when: {output_rstd: true}}", "into: rstd, when: {output_rstd: true, platform: a2a3}}")
    problems = _same_either_way(cat.root, monkeypatch)
    assert problems and all("never assembled" in message and "on ascend950" in message for _c, message, _w in problems), problems
