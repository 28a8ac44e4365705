"""``docs build`` and ``docs serve``: the browsable catalogue (mkdocs-material)."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
from pathlib import Path
from typing import Any

import click
from rich.progress import Progress

from ..docs import build_site, instance_estimate, render_pages
from ..docs.svg import timeline_svg
from ..output.writer import sync_folder
from ..plan.manifest import load_manifest, to_request
from ..plan.resolver import resolve
from ..tune.curves import curve_ts, simulator_fingerprint, unroll_curves
from ..vocab.errors import PatternGenError, Problem
from ..vocab.resources import repo_root
from .app import main
from .paths import FsPath
from .app import main as cli_group
from .clidoc import cli_reference
from .common import catalogue, default_generated, err, handle_errors, manifest_path, out

__all__ = ["docs_group", "docs_build_cmd", "docs_serve_cmd"]


@main.group("docs")
def docs_group() -> None:
    """Build or serve the browsable catalogue (mkdocs-material)."""


def _require_mkdocs() -> None:
    """Before anything is rendered: without mkdocs-material the build would stop half-way."""
    missing = [m for m in ("mkdocs", "material") if importlib.util.find_spec(m) is None]
    if missing:
        raise PatternGenError(
            Problem("bad-path", "the docs need mkdocs-material: pip install mkdocs-material (or the project's docs extra: pip install -e '.[docs]')")
        )


#: the unroll curves of the instances, kept beside the docs sources (each costs a sweep of runs)
CURVES_CACHE = "data/unroll-curves.json"


def _unroll_curves(cat: Any, plans: list[Any], generated: Path, cache_path: Path) -> tuple[dict[str, Any], str]:
    """Each instance's ``{unroll: {T: µs}}``: from the cache when its key (the instance's content
    hash, ptosim's and the profile's fingerprint) still holds, else swept now."""
    try:
        cached = json.loads(cache_path.read_text(encoding="utf-8")) if cache_path.is_file() else {}
    except ValueError:
        cached = {}
    entries: dict[str, Any] = {}
    fingerprints: dict[str, str] = {}
    todo = []
    for plan in plans:
        if plan.platform not in fingerprints:
            fingerprints[plan.platform] = simulator_fingerprint(cat.platform(plan.platform).source)
        meta = json.loads((generated / plan.name / "instance.json").read_text(encoding="utf-8"))
        key = f"{meta.get('content_hash', '')}|{fingerprints[plan.platform]}|T={','.join(map(str, curve_ts(plan)))}"
        old = cached.get(plan.name) if isinstance(cached, dict) else None
        if isinstance(old, dict) and old.get("key") == key:
            entries[plan.name] = old
        else:
            todo.append((plan, key))
    if todo:
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task(f"unroll curves ({len(todo)} instances)", total=len(todo))
            for plan, key in todo:
                curve = unroll_curves(cat, plan)
                entries[plan.name] = {"key": key, "curves": {str(u): {str(T): round(v, 3) for T, v in c.items()} for u, c in curve.items()}}
                progress.advance(task)
    curves = {name: {int(u): {int(T): v for T, v in c.items()} for u, c in e["curves"].items()} for name, e in entries.items()}
    return curves, json.dumps(dict(sorted(entries.items())), indent=1, sort_keys=True) + "\n"


def _build_docs(ctx: click.Context, out_dir: str | None) -> Path:
    _require_mkdocs()
    cat = catalogue(ctx)
    manifest = load_manifest(manifest_path(ctx, None))
    generated = default_generated()
    # the site documents the instances on the default target (ptosim runs them for the estimates)
    plans = [resolve(cat, to_request(entry)) for entry in manifest.instances]
    missing = [p.name for p in plans if not (generated / p.name / "kernel.py").is_file()]
    if missing:
        raise PatternGenError(Problem("instance", f"{len(missing)} manifest instances are not generated (e.g. {missing[0]}); run `pattern-gen generate` first"))
    estimates, timelines = {}, {}
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("simulating instances", total=len(plans))
        for plan in plans:
            estimate, events, lanes = instance_estimate(generated / plan.name)
            estimates[plan.name] = estimate
            if events:
                timelines[plan.name] = timeline_svg(events, lanes, title=f"{plan.name} — T={estimate['T'] if estimate else '?'}")
            progress.advance(task)
    docs_dir = generated / "docs"
    curves, cache = _unroll_curves(cat, plans, generated, docs_dir / CURVES_CACHE)
    pages = render_pages(cat, plans, generated, estimates, timelines, cli_reference(cli_group), curves)
    pages[CURVES_CACHE] = cache
    written, unchanged, removed = sync_folder(docs_dir, pages)
    out.print(f"docs sources: {written} written, {unchanged} unchanged, {removed} removed -> {docs_dir}")
    site = Path(out_dir) if out_dir else (repo_root() or Path.cwd()) / "build" / "site"
    build_site(docs_dir, site.resolve())
    out.print(f"[green]site built[/green] (mkdocs --strict) -> {site}")
    return site


@docs_group.command("build")
@click.option("--out", "out_dir", type=FsPath(file_okay=False), default=None, help="Site folder (default: build/site).")
@click.pass_context
@handle_errors
def docs_build_cmd(ctx: click.Context, out_dir: str | None) -> None:
    """Render generated/docs/ (Markdown) and build the static site in strict mode."""
    _build_docs(ctx, out_dir)


def _check_port_free(port: int) -> None:
    """Fail before the (long) build when the port cannot be served."""
    try:
        with http.server.ThreadingHTTPServer(("127.0.0.1", port), http.server.BaseHTTPRequestHandler):
            pass
    except OSError as exc:
        raise PatternGenError(Problem("bad-path", f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}; pick another --port")) from None


@docs_group.command("serve")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--out", "out_dir", type=FsPath(file_okay=False), default=None)
@click.pass_context
@handle_errors
def docs_serve_cmd(ctx: click.Context, port: int, out_dir: str | None) -> None:
    """Build the site and serve it on http://127.0.0.1:PORT/ (Ctrl-C stops)."""
    _check_port_free(port)
    site = _build_docs(ctx, out_dir)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        out.print(f"serving {site} on http://127.0.0.1:{port}/ (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
