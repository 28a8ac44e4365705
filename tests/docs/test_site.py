"""The catalogue site in a real headless browser (Debian chromium driven by playwright).

Every card and instance page loads without console errors and shows the card's real content;
internal links resolve; the search finds a card by tag; the SVG diagrams render with a size.
Screenshots land in test-artifacts/docs/.
"""

from __future__ import annotations

import re
import urllib.request
from urllib.parse import urljoin, urlparse

import pytest

from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.docs.describe import param_rows

CAT = load_catalogue()
CARDS = [c.id for c in CAT.sorted_cards()]


def _open(page, url):
    response = page.goto(url)
    page.wait_for_load_state("networkidle")
    assert response is not None and response.status == 200, url
    return response


@pytest.mark.parametrize("card_id", CARDS)
def test_card_page(page, server, artifacts, card_id):
    card = CAT.cards[card_id]
    _open(page, f"{server}/cards/{card_id}.html")
    heading = page.locator("h1").first.inner_text()
    assert card_id in heading and card.title.split(" (")[0] in heading
    text = page.locator("article").inner_text()
    for row in param_rows(CAT, card):
        assert row["name"] in text, f"parameter {row['name']} missing on {card_id}"
        default = str(row["default"]).lower() if isinstance(row["default"], bool) else str(row["default"])
        assert default in text
    for name in card.inputs:
        assert name in text
    svg = page.locator(f'img[src$="{card_id}-flow.svg"]')
    box = svg.bounding_box()
    assert box is not None and box["width"] > 50 and box["height"] > 20
    assert page.evaluate("(el) => el.naturalWidth", svg.element_handle()) > 0
    page.screenshot(path=str(artifacts / f"{card_id}.png"), full_page=True)
    assert page.errors == [], page.errors


#: the instance pages are checked in this many tests (a page takes ~1 s in the browser and there are
#: ~70: one test was the slow lane's longest, the tail one xdist worker ran alone)
INSTANCE_PARTS = 4


@pytest.mark.parametrize("part", range(INSTANCE_PARTS))
def test_instance_pages(page, server, site, artifacts, part):
    names = sorted(p.stem for p in (site / "instances").glob("*.html") if p.stem != "index")
    assert len(names) >= 30
    for i, name in enumerate(names[part::INSTANCE_PARTS]):
        _open(page, f"{server}/instances/{name}.html")
        assert name in page.locator("h1").first.inner_text()
        text = page.locator("article").inner_text()
        assert "pattern-gen new --skeleton" in text and "def run(" in text and "def golden(" in text
        if i == 0 and part == 0:
            page.screenshot(path=str(artifacts / "instance.png"), full_page=False)
    assert page.errors == [], page.errors


def test_internal_links_resolve(page, server):
    seen, broken = set(), []
    for start in ["index.html", "instances/index.html"] + [f"cards/{c}.html" for c in CARDS]:
        _open(page, f"{server}/{start}")
        hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
        for href in hrefs:
            url = urlparse(href)
            if url.netloc != urlparse(server).netloc:
                continue
            target = urljoin(href, url.path)
            if target in seen:
                continue
            seen.add(target)
            try:
                with urllib.request.urlopen(target) as r:
                    if r.status != 200:
                        broken.append(target)
            except Exception:
                broken.append(target)
    assert len(seen) > 50
    assert broken == []


def test_search_finds_card_by_tag(page, server, artifacts):
    _open(page, f"{server}/index.html")
    page.locator("input.md-search__input").click()
    page.keyboard.type("norm-linear-fused", delay=20)  # material listens to key events, not fill()
    page.wait_for_selector(".md-search-result__item", timeout=15000)
    results = page.locator(".md-search-result__item").all_inner_texts()
    page.screenshot(path=str(artifacts / "search.png"))
    assert any("AT-10" in r for r in results), results


def test_index_lists_every_card(page, server):
    _open(page, f"{server}/index.html")
    text = page.locator("article").inner_text()
    for card_id in CARDS:
        assert card_id in text
        for tag in CAT.cards[card_id].tags:
            assert tag in text
    assert page.errors == []


def test_name_decoder(page, server):
    _open(page, f"{server}/names.html")
    page.fill("#pg-name", "sk04-at11-nogamma-sqrtdiv-qint8-ofp32-bias-rstd-kn-u4-a2a3-H256")
    decoded = page.locator("#pg-decoded").inner_text()
    assert re.search(r"quant_mode\s+int8_w8a8", decoded)
    assert re.search(r"unroll_list\s+\[4, 1\]", decoded) and "dim H" in decoded
    page.fill("#pg-name", "sk04-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-kn-u8_4_2-a2a3")
    assert re.search(r"unroll_list\s+\[8, 4, 2, 1\]", page.locator("#pg-decoded").inner_text())
    assert page.errors == []
