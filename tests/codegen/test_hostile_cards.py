"""Cards are untrusted input: hostile text in every free-text field of a card cannot run code, write
outside the output folder, or put a raw tag into the docs site.

Every shipped card gets the payloads appended to each of its prose fields (title, summary, docs,
notes, reasons, examples, tags, variant names, …), the catalogue is loaded from a copy, and the
result must be either one clean refusal (exit-2 problems) or an instance whose files compile and
run with no side effect, and a site whose HTML holds no payload tag.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.output.instances import write_instance
from pattern_gen.plan.kernel_plan import Request
from pattern_gen.vocab.errors import PatternGenError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "patterns"
#: keys whose values are prose (or lists of words) a card author writes freely
PROSE = {"title", "summary", "doc", "numerics", "why", "direction", "evidence", "note", "reason", "upstream_notes", "warning"}
WORD_LISTS = {"examples", "left_out"}  # tags are checked words (test_a_hostile_tag_is_refused)

CODE_PAYLOAD = 'X" + str(__import__("os").system("touch PWNED")) + "\'\'\'"""\n\\ {{ 7*7 }} \u202e\x1b[31m ../../escape'
HTML_PAYLOAD = '<script>alert("PGX")</script> <img src=x onerror=alert("PGX")> [l](javascript:alert("PGX")) {: onclick="PGX" }'


def _poison(data: Any, payload: str) -> Any:
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            if key in PROSE and isinstance(value, str):
                out[key] = value + " " + payload
            elif key in WORD_LISTS and isinstance(value, list):
                out[key] = [*value, payload] if value else [payload]
            elif key == "variants" and isinstance(value, list):
                out[key] = [{**v, "name": f"{v.get('name', '')} {payload}"} if isinstance(v, dict) else v for v in value]
            else:
                out[key] = _poison(value, payload)
        return out
    if isinstance(data, list):
        return [_poison(v, payload) for v in data]
    return data


def _poisoned_catalogue(tmp: Path, payload: str) -> Path:
    base = tmp / "patterns"
    shutil.copytree(SHIPPED, base, ignore=shutil.ignore_patterns("manifest.yaml"))
    for path in list((base / "atoms").glob("*.yaml")) + list((base / "skeletons").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        path.write_text(yaml.safe_dump(_poison(data, payload), allow_unicode=True, sort_keys=False), encoding="utf-8")
    return base


@pytest.mark.parametrize(("skeleton", "atoms", "dims"), [
    ("SK-03", ("AT-10",), {"K": 256, "N": 128}),
    ("SK-04", ("AT-11",), {"H": 256, "Q": 128, "NH": 4, "D": 64, "DKV": 64, "R": 32}),
    ("SK-05", ("AT-10",), {"H": 256, "NQ": 4, "NKV": 2, "D": 64}),
])
def test_hostile_prose_cannot_run_code_or_escape_the_folder(tmp_path, skeleton, atoms, dims):
    base = _poisoned_catalogue(tmp_path, CODE_PAYLOAD)
    cat = load_catalogue(base=base)
    out = tmp_path / "out"
    try:
        _, folder, _ = write_instance(cat, Request(skeleton=skeleton, atoms=atoms, dims=dims), out)
    except PatternGenError as exc:  # a clean refusal is a correct answer too
        assert all(p.code for p in exc.problems)
        return
    written = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(base)]
    assert all(p.is_relative_to(folder) for p in written), written
    for py in folder.glob("*.py"):
        ast.parse(py.read_text(encoding="utf-8"), filename=str(py))
    code = (
        "import importlib.util, sys\n"
        "def load(stem):\n"
        f"    spec = importlib.util.spec_from_file_location(stem, {str(folder)!r} + '/' + stem + '.py')\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m\n"
        "k, g = load('kernel'), load('golden')\n"
        "inputs = g.make_inputs(3, seed=0); k.run(inputs); g.golden(inputs)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not list(tmp_path.rglob("PWNED")), "a card's text ran as code"


def test_hostile_prose_reaches_the_site_as_text(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    from pattern_gen.docs import build_site, render_pages

    base = _poisoned_catalogue(tmp_path, HTML_PAYLOAD)
    cat = load_catalogue(base=base)
    pages = render_pages(cat, [], tmp_path / "generated", {}, {}, "# CLI\n", {})
    docs = tmp_path / "docs"
    for rel, content in pages.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(content, encoding="utf-8")
    site = tmp_path / "site"
    build_site(docs, site)
    html = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in site.rglob("*.html"))
    assert "PGX" in html, "the payload should be on the pages, as text"
    for raw in (r'<script>alert\("PGX"\)', r"<img\b[^>]*onerror", r'href="javascript:', r'<[a-z]+\b[^>]*\sonclick="PGX"'):
        assert not re.search(raw, html), f"a raw {raw!r} in the built site"
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert not any(re.search(r"<script>alert", d.get("title", "")) for d in index["docs"])


def test_a_hostile_tag_is_refused_at_its_line(tmp_path):
    base = tmp_path / "patterns"
    shutil.copytree(SHIPPED, base, ignore=shutil.ignore_patterns("manifest.yaml"))
    card = base / "atoms" / "AT-05-int8-quant.yaml"
    card.write_text(card.read_text(encoding="utf-8").replace("tags: [quant]", 'tags: [quant, "<script>x</script>"]'), encoding="utf-8")
    with pytest.raises(PatternGenError) as info:
        load_catalogue(base=base)
    (problem,) = [p for p in info.value.problems if p.file and p.file.endswith("AT-05-int8-quant.yaml")]
    assert problem.code == "card-schema" and problem.line == 7
