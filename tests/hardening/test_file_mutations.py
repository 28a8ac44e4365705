"""Property tests: a damaged platform profile, manifest or instance.json never makes pattern-gen
crash or hang — the outcome is success or ``PatternGenError`` with well-formed problems.

(The card mutations are ``tests/catalogue/test_mutations.py``.) Each example damages one shipped
file — delete a key, insert a key, replace a scalar by another type (NaN, huge, negative, text),
truncate the text, duplicate a line — and runs what reads it: the catalogue loader, the checks (every
atom and SK-03) and
a resolve + render of a small SK-03 request (profiles); ``load_manifest`` and a resolve of every
entry (manifest); ``read_instance`` and a run at T=1 (instance.json).

``PATTERN_GEN_FUZZ_EXAMPLES`` raises the number of examples for a longer local run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from hang_guard import HANG_LIMIT_S, time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.checks import check_catalogue
from pattern_gen.output.instances import instance_request, read_instance, render_plan, run_instance
from pattern_gen.plan.kernel_plan import Request
from pattern_gen.plan.manifest import load_manifest, to_request
from pattern_gen.plan.resolver import resolve
from pattern_gen.vocab.errors import ERROR_CODES, PatternGenError
from pattern_gen.vocab.resources import package_patterns_dir

SHIPPED = package_patterns_dir()
REPO = Path(__file__).resolve().parents[2]
PROFILE = SHIPPED / "platforms" / "a2a3.yaml"
MANIFEST = SHIPPED / "manifest.yaml"
INSTANCE = next(p for p in sorted((REPO / "generated").glob("sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3-K256-N128")))

EXAMPLES = int(os.environ.get("PATTERN_GEN_FUZZ_EXAMPLES", "30"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _well_formed(exc: PatternGenError) -> None:
    for p in exc.problems:
        assert p.code in ERROR_CODES, p
        assert p.message.strip(), p
        assert "Traceback" not in p.message and ".py:" not in p.message, p  # never an internal location
        assert len(p.message) < 2000, p.message[:200]  # a value is quoted, not dumped


# --- mutations -------------------------------------------------------------------------------------


def _nodes(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _nodes(v, path + (i,))


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


scalars = st.one_of(
    st.integers(-(2**40), 2**40),
    st.sampled_from([0, -1, 1, 3, 2**31, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=10),
    st.sampled_from(["BF16", "FP32", "INT8", "T", "K/0", "1e999", "abc", "", "a2a3", "vector", "cube"]),
)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=6), scalars, max_size=2))


def data_mutation(data: Any, dump: Callable[[Any], str]) -> st.SearchStrategy[str]:
    @st.composite
    def mutate(draw: st.DrawFn) -> str:
        copy = json.loads(json.dumps(data))
        kind = draw(st.sampled_from(["delete", "insert", "replace"]))
        if kind == "delete":
            keys = [(path, k) for path, node in _nodes(copy) if isinstance(node, dict) for k in node]
            path, key = draw(st.sampled_from(keys))
            del _get(copy, path)[key]
        elif kind == "insert":
            maps = [path for path, node in _nodes(copy) if isinstance(node, dict)]
            _get(copy, draw(st.sampled_from(maps)))[draw(st.text(min_size=1, max_size=8))] = draw(values)
        else:
            leaves = [path for path, node in _nodes(copy) if path and not isinstance(node, (dict, list))]
            path = draw(st.sampled_from(leaves))
            _get(copy, path[:-1])[path[-1]] = draw(values)
        return dump(copy)

    return mutate()


def text_mutation(text: str) -> st.SearchStrategy[str]:
    @st.composite
    def mutate(draw: st.DrawFn) -> str:
        lines = text.splitlines(keepends=True)
        kind = draw(st.sampled_from(["truncate", "duplicate", "swap"]))
        if kind == "truncate":
            return text[: draw(st.integers(0, len(text)))]
        i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
        if kind == "duplicate":
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines)

    return mutate()


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


PROFILE_TEXT = PROFILE.read_text(encoding="utf-8")
PROFILE_DATA = yaml.safe_load(PROFILE_TEXT)
MANIFEST_TEXT = MANIFEST.read_text(encoding="utf-8")
MANIFEST_DATA = yaml.safe_load(MANIFEST_TEXT)
INSTANCE_TEXT = (INSTANCE / "instance.json").read_text(encoding="utf-8")
INSTANCE_DATA = json.loads(INSTANCE_TEXT)


# --- what reads each file ---------------------------------------------------------------------------


def _profile_fuzz_ignore(folder: str, names: list[str]) -> set[str]:
    """Every atom and SK-03 only: the checks expand each card on every platform, and the other
    skeletons' 4 000 expansions (12 s a run) would re-read the same profile fields the atoms read,
    thirty times per case, minutes of the slow lane for no new path."""
    drop = {"manifest.yaml"}
    if Path(folder).name == "skeletons":
        drop |= {n for n in names if not n.startswith("SK-03-")}
    return drop


def _exercise_profile(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "patterns"
        shutil.copytree(SHIPPED, root, ignore=_profile_fuzz_ignore)
        (root / "platforms" / "a2a3.yaml").write_text(text, encoding="utf-8")
        with time_limit(HANG_LIMIT_S):
            try:
                cat = load_catalogue(base=root)
                for p in check_catalogue(cat):
                    assert p.code in ERROR_CODES, p
                plan = resolve(cat, Request(skeleton="SK-03", atoms=("AT-10",), dims={"K": 256, "N": 128}))
                render_plan(cat, plan)
            except PatternGenError as exc:
                _well_formed(exc)


def _exercise_manifest(text: str) -> None:
    cat = load_catalogue([])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "manifest.yaml"
        path.write_text(text, encoding="utf-8")
        with time_limit(HANG_LIMIT_S):
            try:
                manifest = load_manifest(path)
            except PatternGenError as exc:
                _well_formed(exc)
                return
            for entry in manifest.instances[:12]:
                try:
                    resolve(cat, to_request(entry))
                except PatternGenError as exc:
                    _well_formed(exc)


def _exercise_instance(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / INSTANCE.name
        shutil.copytree(INSTANCE, folder)
        (folder / "instance.json").write_text(text, encoding="utf-8")
        with time_limit(HANG_LIMIT_S):
            try:
                meta = read_instance(folder)
                if isinstance(meta.get("request"), dict):  # what tune INSTANCE rebuilds
                    resolve(load_catalogue([]), instance_request(meta, str(folder)))
                result = run_instance(folder, T=1, estimate=False)
                assert isinstance(result.passed, bool)
            except PatternGenError as exc:
                _well_formed(exc)


CASES: dict[str, tuple[Callable[[str], None], Callable[[], st.SearchStrategy[str]]]] = {
    "profile-data": (_exercise_profile, lambda: data_mutation(PROFILE_DATA, _yaml)),
    "profile-text": (_exercise_profile, lambda: text_mutation(PROFILE_TEXT)),
    "manifest-data": (_exercise_manifest, lambda: data_mutation(MANIFEST_DATA, _yaml)),
    "manifest-text": (_exercise_manifest, lambda: text_mutation(MANIFEST_TEXT)),
    "instance-data": (_exercise_instance, lambda: data_mutation(INSTANCE_DATA, lambda d: json.dumps(d, indent=2))),
    "instance-text": (_exercise_instance, lambda: text_mutation(INSTANCE_TEXT)),
}


def test_unmutated_files_pass_the_harness() -> None:
    _exercise_profile(PROFILE_TEXT)
    _exercise_manifest(MANIFEST_TEXT)
    _exercise_instance(INSTANCE_TEXT)


@pytest.mark.parametrize("case", list(CASES))
def test_mutated_file_never_crashes(case: str) -> None:
    exercise, strategy = CASES[case]

    @FUZZ
    @given(strategy())
    def check(text: str) -> None:
        exercise(text)

    check()
