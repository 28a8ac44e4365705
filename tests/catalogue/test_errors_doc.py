"""``docs/errors.md`` documents exactly the codes of ``pattern_gen.vocab.errors.ERROR_CODES``
(the docs/code parity check pydantic runs for its own error codes)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pattern_gen.vocab.errors import (
    ERROR_CODES,
    PatternGenError,
    Problem,
    closest,
    did_you_mean,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
SECTION = re.compile(r"^## (?P<title>.+?) \{#(?P<code>[a-z0-9-]+)\}\s*$", re.MULTILINE)


def _sections() -> list[tuple[str, str, str]]:
    """(code, title, body) per section, in order."""
    text = DOC.read_text(encoding="utf-8")
    matches = list(SECTION.finditer(text))
    out = []
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        out.append((m["code"], m["title"], text[m.end() : end]))
    return out


def test_docs_and_code_have_the_same_codes():
    documented = [code for code, _, _ in _sections()]
    assert len(documented) == len(set(documented)), "a code is documented twice"
    missing = set(ERROR_CODES) - set(documented)
    stale = set(documented) - set(ERROR_CODES)
    assert not missing, f"codes without a section in docs/errors.md: {sorted(missing)}"
    assert not stale, f"sections for codes that no longer exist: {sorted(stale)}"


@pytest.mark.parametrize("code, title, body", _sections(), ids=lambda v: v if isinstance(v, str) and "\n" not in v else "")
def test_each_section_has_a_meaning_and_an_example(code, title, body):
    prose = body.split("```")[0].strip()
    assert prose, f"{code}: no one-sentence meaning"
    # one line: the docs site (pattern_gen.docs) takes the first line after the heading as the meaning
    assert "\n" not in prose, f"{code}: write the meaning on one line"
    assert body.count("```") >= 2, f"{code}: no example message"
    example = body.split("```")[1]
    assert f"[{code}]" in example, f"{code}: the example message does not end with [{code}]"


def test_every_section_heading_is_a_section():
    """A heading with a typo in its anchor would silently drop out of the parity check."""
    headings = [ln for ln in DOC.read_text(encoding="utf-8").splitlines() if ln.startswith("## ")]
    assert len(headings) == len(_sections())


# --- errors.py itself -----------------------------------------------------------------------------------


def test_problem_formatting():
    assert str(Problem("card-schema", "bad", "a.yaml", 3, 7)) == "a.yaml:3:7: bad [card-schema]"
    assert str(Problem("card-schema", "bad", "a.yaml", 3)) == "a.yaml:3: bad [card-schema]"
    assert str(Problem("bad-path", "bad", "a.yaml")) == "a.yaml: bad [bad-path]"
    assert str(Problem("unknown-card", "bad")) == "bad [unknown-card]"


def test_error_sorts_problems_by_place_and_keeps_all():
    err = PatternGenError([Problem("card-schema", "b", "b.yaml", 1), Problem("card-schema", "a", "a.yaml", 9), Problem("card-schema", "c", "a.yaml", 2)])
    assert [(p.file, p.line) for p in err.problems] == [("a.yaml", 2), ("a.yaml", 9), ("b.yaml", 1)]
    assert err.code == "card-schema"
    assert str(err).count("\n") == 2


def test_error_needs_a_problem():
    with pytest.raises(ValueError):
        PatternGenError([])


def test_did_you_mean():
    assert closest("rsqrtt", ["rsqrt", "sqrt_div"]) == "rsqrt"
    assert did_you_mean("keepdims", ["dim", "keepdim"]) == "; did you mean 'keepdim'?"
    assert did_you_mean("zzzz", ["dim", "keepdim"]) == ""
    assert did_you_mean("dim", ["dim"]) == ""
