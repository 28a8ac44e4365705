"""YAML with positions: line/col of nested keys and list items, duplicate keys, safe loading only."""

from __future__ import annotations

import pytest
import yaml

from pattern_gen.cards.yamlsrc import load_located, locate
from pattern_gen.vocab.errors import PatternGenError

TEXT = """\
id: AT-03
params:
  has_gamma:
    type: bool
    default: true
stages:
  - label: rmsnorm
    unit: V
    ops:
      - {op: cast, in: x, to: FP32, out: xf}
      - op: mul
        in: [xf, xf]
        out: sq
"""


@pytest.fixture(scope="module")
def located():
    return load_located(TEXT, "card.yaml")


def test_same_data_as_safe_load(located):
    assert located.data == yaml.safe_load(TEXT)


@pytest.mark.parametrize(
    "path, pos",
    [
        (("id",), (1, 5)),
        (("params", "has_gamma", "default"), (5, 14)),
        (("params", "has_gamma"), (4, 5)),  # the value (a block mapping) starts at its first key
        (("stages", 0), (7, 5)),
        (("stages", 0, "unit"), (8, 11)),
        (("stages", 0, "ops", 0), (10, 9)),
        (("stages", 0, "ops", 0, "to"), (10, 31)),
        (("stages", 0, "ops", 1, "in"), (12, 13)),
        (("stages", 0, "ops", 1, "in", 1), (12, 18)),
    ],
)
def test_where_points_at_the_value(located, path, pos):
    assert located.where(path) == pos


@pytest.mark.parametrize(
    "path, pos",
    [
        (("params", "has_gamma", "default"), (5, 5)),
        (("stages", 0, "ops", 0, "to"), (10, 27)),
        (("stages", 0, "ops", 1, "out"), (13, 9)),
        (("params",), (2, 1)),
    ],
)
def test_key_where_points_at_the_key(located, path, pos):
    assert located.key_where(path) == pos


def test_where_falls_back_to_the_deepest_existing_node(located):
    assert located.where(("stages", 0, "ops", 1, "nope")) == located.where(("stages", 0, "ops", 1))
    assert located.where(("stages", 7)) == located.where(("stages",))
    assert located.where(()) == (1, 1)


def test_locate_gives_problem_keywords(located):
    assert locate(located, ("stages", 0, "unit")) == {"file": "card.yaml", "line": 8, "col": 11}


def test_duplicate_key_is_reported_at_the_second_key():
    with pytest.raises(PatternGenError) as info:
        load_located("a: 1\nb:\n  c: 1\n  d: 2\n  c: 3\n", "dup.yaml")
    (problem,) = info.value.problems
    assert problem.code == "yaml-syntax"
    assert (problem.file, problem.line, problem.col) == ("dup.yaml", 5, 3)
    assert "duplicate key 'c'" in problem.message


def test_every_duplicate_key_is_reported():
    with pytest.raises(PatternGenError) as info:
        load_located("a: 1\na: 2\nb: [{x: 1, x: 2}]\n", "dup.yaml")
    assert [(p.line, p.col) for p in info.value.problems] == [(2, 1), (3, 12)]


def test_syntax_error_has_line_and_col():
    with pytest.raises(PatternGenError) as info:
        load_located("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")
    (problem,) = info.value.problems
    assert problem.code == "yaml-syntax" and problem.file == "bad.yaml"
    assert problem.line is not None and problem.line >= 2 and problem.col is not None
    assert str(problem).startswith(f"bad.yaml:{problem.line}:{problem.col}: invalid YAML")


def test_tab_indentation_is_a_syntax_error():
    with pytest.raises(PatternGenError) as info:
        load_located("a:\n\tb: 1\n", "tab.yaml")
    assert info.value.problems[0].line == 2


@pytest.mark.parametrize(
    "text",
    [
        "x: !!python/name:os.system",
        "x: !!python/object/apply:os.system ['true']",
        "x: !!python/object:builtins.dict {a: 1}",
        "x: !!set {a, b}",
        "x: !custom 3",
    ],
)
def test_only_plain_yaml_is_accepted(text):
    """safe_load semantics: no Python tags (nothing is ever executed or constructed)."""
    with pytest.raises(PatternGenError) as info:
        load_located(text, "tag.yaml")
    assert info.value.problems[0].code == "yaml-syntax"


def test_anchors_and_merge_keys_work():
    """A key next to a merge (``<<``) overrides the merged one, as in safe_load: not a duplicate."""
    text = "base: &b {unit: V, label: x}\nstage:\n  <<: *b\n  label: y\n"
    located = load_located(text, "m.yaml")
    assert located.data == yaml.safe_load(text)
    assert located.data["stage"] == {"unit": "V", "label": "y"}
    assert located.key_where(("stage", "label")) == (4, 3)


def test_merge_of_several_mappings_matches_safe_load():
    text = "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n  z: 3\n"
    assert load_located(text, "m.yaml").data == yaml.safe_load(text)


def test_duplicate_key_next_to_a_merge_is_still_reported():
    with pytest.raises(PatternGenError, match="duplicate key 'label'"):
        load_located("base: &b {unit: V}\nstage:\n  <<: *b\n  label: y\n  label: z\n", "m.yaml")


def test_alias_bomb_is_refused_quickly():
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefg", "bcdefgh"):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    with pytest.raises(PatternGenError, match="more than"):
        load_located("\n".join(lines), "bomb.yaml")


@pytest.mark.parametrize("text", ["x: " + "[" * 2000 + "]" * 2000, "x: " + "{a: " * 100 + "1" + "}" * 100])
def test_deep_nesting_is_refused(text):
    # the code and the position, not the wording: PyYAML >= 6.0.4 reports flow nesting itself
    with pytest.raises(PatternGenError) as info:
        load_located(text, "deep.yaml")
    problem = info.value.problems[0]
    assert (problem.code, problem.file, problem.line) == ("yaml-syntax", "deep.yaml", 1)


def test_empty_document():
    assert load_located("", "e.yaml").data is None
    assert load_located("# only a comment\n", "e.yaml").data is None


def test_several_documents_are_an_error():
    with pytest.raises(PatternGenError) as info:
        load_located("a: 1\n---\nb: 2\n", "two.yaml")
    assert info.value.problems[0].code == "yaml-syntax"


def test_non_scalar_key_is_an_error():
    with pytest.raises(PatternGenError, match="mapping key must be a scalar"):
        load_located("? [a, b]\n: 1\n", "key.yaml")
