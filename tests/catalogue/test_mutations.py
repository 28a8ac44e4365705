"""Property tests: a mutated shipped card never makes the compiler crash or hang.

Each example takes one shipped card, damages it (delete a key, insert a key, replace a scalar by
another type or a random string, truncate the text, swap two lines, duplicate a line), writes it
into a fresh catalogue folder together with the cards it builds on, and runs the loader and the
cross-card checks (and, when the catalogue still loads, what ``show`` renders). The only
acceptable outcomes are success or ``PatternGenError`` with well-formed problems — never another
exception, never a hang.

``PATTERN_GEN_FUZZ_EXAMPLES`` raises the number of examples for a longer local run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from hang_guard import HANG_LIMIT_S, time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pattern_gen.catalogue.catalogue import Catalogue, card_files, load_catalogue
from pattern_gen.checks import check_catalogue
from pattern_gen.docs.describe import card_detail, pseudo_code
from pattern_gen.vocab.errors import ERROR_CODES, PatternGenError
from pattern_gen.vocab.resources import package_patterns_dir

SHIPPED = package_patterns_dir()
CARD_FILES = {p.stem.split("-")[0] + "-" + p.stem.split("-")[1]: p for p in card_files(SHIPPED)}
CARD_IDS = sorted(CARD_FILES)

EXAMPLES = int(os.environ.get("PATTERN_GEN_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,  # SK-04's checks take ~6 s idle, more when loaded: the hang guard bounds an example instead
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)


def _deps(card_id: str) -> set[str]:
    """The shipped cards ``card_id`` builds on (so the mutated card is checked in context)."""
    out: set[str] = set()
    todo = [card_id]
    while todo:
        data = yaml.safe_load(CARD_FILES[todo.pop()].read_text(encoding="utf-8"))
        for dep in data.get("depends_on", []):
            if dep in CARD_FILES and dep not in out:
                out.add(dep)
                todo.append(dep)
    return out


DEPS = {cid: _deps(cid) for cid in CARD_IDS}
TEXTS = {cid: CARD_FILES[cid].read_text(encoding="utf-8") for cid in CARD_IDS}
DATA = {cid: yaml.safe_load(TEXTS[cid]) for cid in CARD_IDS}

# words the cards use: mutations that reuse them reach deeper than random text
VOCAB = sorted(
    {
        *("op", "in", "out", "when", "call", "use", "slot", "as", "bind", "params", "unit", "label", "ops"),
        *("hoist", "merge", "cases", "shape", "dtype", "role", "default", "choices", "type", "any", "all", "not"),
        *("V", "C", "BF16", "FP16", "FP32", "INT8", "INT32", "FP8E4M3", "FP8E8M0", "T", "K", "N", "M", "D"),
        *("tile", "t_off", "1/D", "K/32", "NH*D", "-1", "x", "y", "gamma", "weight", "rstd", "acc_f"),
        *("has_gamma", "rsqrt_mode", "quant_mode", "out_dtype", "has_bias", "weight_layout", "eps", "unroll"),
        *("cast", "mul", "add", "sum", "amax", "matmul", "scaled_mm", "view", "assemble", "reshape", "buffer", "full"),
        *CARD_IDS,
        "AT-99",
    }
)


# --- running one example --------------------------------------------------------------------------------


def _exercise(card_id: str, text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for cid in DEPS[card_id]:
            (root / CARD_FILES[cid].name).write_text(TEXTS[cid], encoding="utf-8")
        (root / CARD_FILES[card_id].name).write_text(text, encoding="utf-8")
        with time_limit(HANG_LIMIT_S):
            try:
                cat = load_catalogue(base=root)
                problems = check_catalogue(cat)
                _render(cat)
            except PatternGenError as exc:
                problems = exc.problems
        for p in problems:
            assert p.code in ERROR_CODES, p
            assert p.message.strip(), p
            assert "Traceback" not in p.message


def _render(cat: Catalogue) -> None:
    """What ``list``/``show`` print must not crash on any loadable card either."""
    for card in cat.sorted_cards():
        card_detail(cat, card)
        if card.kind == "atom":
            pseudo_code(cat, card)


# --- mutations of the data ---------------------------------------------------------------------------------


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


def _copy(cid: str) -> Any:
    return yaml.safe_load(TEXTS[cid])


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


scalars = st.one_of(
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.sampled_from(VOCAB),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.sampled_from(VOCAB) | st.text(max_size=6), scalars, max_size=2),
)


@st.composite
def delete_key(draw: st.DrawFn) -> tuple[str, str]:
    cid = draw(st.sampled_from(CARD_IDS))
    data = _copy(cid)
    keys = [(path, k) for path, node in _nodes(data) if isinstance(node, dict) for k in node]
    path, key = draw(st.sampled_from(keys))
    del _get(data, path)[key]
    return cid, _dump(data)


@st.composite
def insert_key(draw: st.DrawFn) -> tuple[str, str]:
    cid = draw(st.sampled_from(CARD_IDS))
    data = _copy(cid)
    maps = [path for path, node in _nodes(data) if isinstance(node, dict)]
    path = draw(st.sampled_from(maps))
    key = draw(st.sampled_from(VOCAB) | st.text(min_size=1, max_size=8))
    _get(data, path)[key] = draw(values)
    return cid, _dump(data)


@st.composite
def replace_scalar(draw: st.DrawFn) -> tuple[str, str]:
    cid = draw(st.sampled_from(CARD_IDS))
    data = _copy(cid)
    leaves = [path for path, node in _nodes(data) if path and not isinstance(node, (dict, list))]
    path = draw(st.sampled_from(leaves))
    _get(data, path[:-1])[path[-1]] = draw(values)
    return cid, _dump(data)


# --- mutations of the text ------------------------------------------------------------------------------------


@st.composite
def truncate(draw: st.DrawFn) -> tuple[str, str]:
    cid = draw(st.sampled_from(CARD_IDS))
    text = TEXTS[cid]
    return cid, text[: draw(st.integers(0, len(text)))]


@st.composite
def swap_lines(draw: st.DrawFn) -> tuple[str, str]:
    cid = draw(st.sampled_from(CARD_IDS))
    lines = TEXTS[cid].splitlines(keepends=True)
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    return cid, "".join(lines)


@st.composite
def duplicate_line(draw: st.DrawFn) -> tuple[str, str]:
    cid = draw(st.sampled_from(CARD_IDS))
    lines = TEXTS[cid].splitlines(keepends=True)
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines)))
    lines.insert(j, lines[i])
    return cid, "".join(lines)


MUTATIONS: dict[str, Callable[[], st.SearchStrategy[tuple[str, str]]]] = {
    "delete_key": delete_key,
    "insert_key": insert_key,
    "replace_scalar": replace_scalar,
    "truncate": truncate,
    "swap_lines": swap_lines,
    "duplicate_line": duplicate_line,
}


def test_unmutated_cards_pass_the_harness():
    for cid in CARD_IDS:
        _exercise(cid, TEXTS[cid])


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_mutated_card_never_crashes(mutation: str) -> None:
    @FUZZ
    @given(MUTATIONS[mutation]())
    def check(example: tuple[str, str]) -> None:
        _exercise(*example)

    check()
