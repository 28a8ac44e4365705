"""A built copy of the docs site, served on localhost, and a headless Debian chromium.

The site is built from the committed sources in generated/docs (what `pattern-gen docs build`
rendered) into a temporary folder, so the test never touches the repository.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "generated" / "docs"
ARTIFACTS = ROOT / "test-artifacts" / "docs"
#: a site already built from generated/docs as committed (.ci/run sets it to build/site after
#: `pattern-gen docs build` and its staleness check), so each xdist worker does not build it again
BUILT_SITE = "PATTERN_GEN_DOCS_SITE"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    for candidate in (os.environ.get("PATTERN_GEN_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    from pattern_gen.docs import build_site

    if not (DOCS / "mkdocs.yml").is_file():
        pytest.fail("generated/docs is missing: run `pattern-gen docs build` and commit it")
    built = os.environ.get(BUILT_SITE)
    if built:  # CI: the site `pattern-gen docs build` made (strict) from sources it found up to date
        if not (Path(built) / "index.html").is_file():
            pytest.fail(f"{BUILT_SITE}={built} holds no built site (index.html)")
        return Path(built)
    out = tmp_path_factory.mktemp("site") / "site"
    build_site(DOCS, out)
    return out


@pytest.fixture(scope="session")
def server(site: Path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="session")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    path = _chromium()
    if path is None:
        pytest.skip("Debian chromium is not installed (CI installs it: apt-get install chromium)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1600})
    pg = context.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)  # type: ignore[attr-defined]
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))  # type: ignore[attr-defined]
    yield pg
    context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
