"""The docs site's cost-rules page lists exactly ptosim's cost rules (``ptosim.cost.rules.RULES``),
and the site has it in its Reference section (the parity check docs/errors.md has with the codes)."""

from __future__ import annotations

import re

from ptosim.cost.rules import RULES

from pattern_gen.docs.reference_pages import cost_rules_page, index_page
from pattern_gen.docs.site import render_pages
from pattern_gen.catalogue.catalogue import load_catalogue

SECTION = re.compile(r"^## `(?P<id>[a-z0-9-]+)` \{#(?P=id)\}$", re.MULTILINE)


def test_the_page_has_a_section_per_rule_in_the_tables_order():
    page = cost_rules_page()
    assert SECTION.findall(page) == [r.id for r in RULES]
    for r in RULES:
        section = page.split(f"{{#{r.id}}}", 1)[1].split("\n## ", 1)[0]
        assert r.test in section and r.pypto in section, r.id


def test_the_site_links_the_page(tmp_path):
    cat = load_catalogue()
    pages = render_pages(cat, [], tmp_path, {}, {}, "# Command line\n")
    assert pages["pages/cost-rules.md"] == cost_rules_page()
    assert "cost-rules.md" in pages["mkdocs.yml"] and "(cost-rules.md)" in index_page(cat)
