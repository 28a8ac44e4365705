"""``generate``: every manifest instance into ``generated/``, or ``--check`` that it is up to date."""

from __future__ import annotations

import fnmatch
import shutil
import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import Progress

from ..catalogue.catalogue import Catalogue
from ..vocab.errors import PatternGenError, Problem
from ..output.instances import render_plan
from ..plan.manifest import Manifest, load_manifest, to_request
from ..plan.resolver import resolve
from ..output.writer import check_writes, compare_tree, content_ok, write_files
from .app import main
from .common import catalogue, default_generated, err, handle_errors, out

__all__ = ["generate_cmd"]


def _check_refusals(cat: Catalogue, manifest: Manifest) -> list[str]:
    """The manifest's ``refused`` entries that resolve, or fail with another code than expected."""
    failures = []
    for entry in manifest.refused:
        try:
            resolve(cat, to_request(entry))
        except PatternGenError as exc:
            codes = {p.code for p in exc.problems}
            if entry.expect not in codes:
                failures.append(f"{entry.skeleton} {entry.atoms} {entry.params}: refused with {sorted(codes)}, expected {entry.expect}")
            continue
        failures.append(f"{entry.skeleton} {entry.atoms} {entry.params} {entry.dims}: accepted, but the manifest says it must be refused ({entry.expect})")
    return failures


def _is_generated(path: Path) -> bool:
    """A file pattern-gen wrote and nobody edited since (its content hash holds)."""
    try:
        return path.is_file() and content_ok(path.name, path.read_text(encoding="utf-8")) is True
    except (OSError, UnicodeDecodeError):
        return False


@main.command("generate")
@click.option("--manifest", "manifest_path", type=click.Path(dir_okay=False), default=None, help="Manifest file (default: the catalogue's manifest.yaml).")
@click.option("--check", is_flag=True, help="Render to memory and compare with the output folder; exit 1 on any drift.")
@click.option("--filter", "pattern", default=None, help="Only instances whose name matches this glob.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Output folder (default: generated/).")
@click.option("--force", is_flag=True, help="Overwrite hand-edited generated files.")
@click.option(
    "--prune/--no-prune",
    default=None,
    help="Remove instance folders the manifest no longer lists (default: only in generated/, which generate owns).",
)
@click.pass_context
@handle_errors
def generate_cmd(
    ctx: click.Context, manifest_path: str | None, check: bool, pattern: str | None, out_dir: str | None, force: bool, prune: bool | None
) -> None:
    """Generate every manifest instance into generated/ (or check that it is up to date)."""
    cat = catalogue(ctx)
    path = Path(manifest_path) if manifest_path else cat.dirs[0] / "manifest.yaml"
    manifest = load_manifest(path)
    root = Path(out_dir) if out_dir else default_generated()
    if prune is None:  # another --out may hold the user's own `new` kernels: never delete those unasked
        prune = root.resolve() == default_generated().resolve()
    plans, problems = [], []
    for i, entry in enumerate(manifest.instances):
        try:
            plans.append(resolve(cat, to_request(entry)))
        except PatternGenError as exc:
            what = f"manifest instance {entry.skeleton} {entry.atoms} {entry.params}"
            at = manifest.where("instances", i)  # the entry's line, unless the problem is in a card
            for p in exc.problems:
                where = {"file": p.file, "line": p.line, "col": p.col} if p.file else at
                problems.append(Problem(p.code, f"{what}: {p.message}", **where))
    names = [p.name for p in plans]
    dupes = sorted({n for n in names if names.count(n) > 1})
    problems += [Problem("manifest", f"two manifest entries make the same instance {n}; give one a 'name:'", str(path)) for n in dupes]
    if problems:
        raise PatternGenError(problems)
    refusal_failures = _check_refusals(cat, manifest)
    selected = [p for p in plans if pattern is None or fnmatch.fnmatchcase(p.name, pattern)]
    if pattern is not None and not selected:
        raise PatternGenError(Problem("manifest", f"--filter {pattern!r} matches none of the {len(plans)} instances"))
    rendered = {}
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("rendering", total=len(selected))
        for plan in selected:
            rendered[plan.name] = render_plan(cat, plan)
            progress.advance(task)
    if check:
        drift = compare_tree(root, rendered, owned={"docs", "README.md"})
        if pattern is not None:
            # Instances the filter leaves out are not stale; stale files inside the selected
            # instances, and stale top-level folders the filter covers, still are.
            drift.stale = [s for s in drift.stale if "/" in s.rstrip("/") or fnmatch.fnmatchcase(s.rstrip("/"), pattern)]
        lines = drift.lines() + [f"refusal: {f}" for f in refusal_failures]
        if lines:
            for line in lines:
                err.print(escape(line), soft_wrap=True)
            err.print(f"[red]{escape(str(root))} is out of date[/red]: run `pattern-gen generate` and commit the result.", soft_wrap=True)
            sys.exit(1)
        out.print(f"[green]ok[/green]: {len(rendered)} instances in {escape(str(root))} are up to date; {len(manifest.refused)} refusals hold", soft_wrap=True)
        return
    # Every refusal (hand-edited files, stale instances with foreign files) before the first write.
    stale, foreign, write_problems = [], [], []
    for name, files in rendered.items():
        write_problems += check_writes(root / name, files, force=force)
    if pattern is None and root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.name in rendered or entry.name.startswith(".") or entry.name in ("docs", "README.md", "__pycache__"):
                continue
            if not (entry.is_dir() and (entry / "instance.json").is_file()) or not prune:
                foreign.append(entry)
                continue
            edited = [p for p in entry.iterdir() if p.name != "__pycache__" and not _is_generated(p)]
            if edited and not force:
                write_problems.append(Problem("hand-edited", f"stale instance {entry} has hand-edited or foreign files ({', '.join(p.name for p in edited)}); remove it yourself or use --force"))
            stale.append(entry)
    if write_problems:
        raise PatternGenError(write_problems)
    written = unchanged = 0
    for name, files in rendered.items():
        report = write_files(root / name, files, force=force)
        written += len(report.written)
        unchanged += len(report.unchanged)
    for entry in stale:
        shutil.rmtree(entry)
    stale_files = [
        path
        for name, files in rendered.items()
        for path in sorted((root / name).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.relative_to(root / name).as_posix() not in files
    ]
    for path in [p for p in stale_files if _is_generated(p)]:  # e.g. a file an older version made
        path.unlink()
        err.print(f"removed stale generated file {escape(str(path))}", soft_wrap=True)
    foreign += [p for p in stale_files if p.exists()]
    out.print(f"{len(rendered)} instances: {written} files written, {unchanged} unchanged, {len(stale)} stale instances removed -> {escape(str(root))}", soft_wrap=True)
    for entry in foreign:
        if entry.is_file() and entry.parent != root:
            why = "is not a file pattern-gen makes for this instance; remove it yourself"
        elif prune:
            why = "is not an instance folder of the manifest"
        else:
            why = "is not in the manifest (pass --prune to remove such folders)"
        err.print(f"[yellow]left alone[/yellow]: {escape(str(entry))} {why}; `generate --check` reports it as stale", soft_wrap=True)
    for line in refusal_failures:
        err.print(f"[red]refusal:[/red] {escape(line)}", soft_wrap=True)
    if refusal_failures:
        sys.exit(1)
