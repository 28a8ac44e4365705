"""``generate``: parse the flags, call ``output.generate``, print what it did."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.progress import Progress

from ..output.generate import generate
from ..plan.manifest import load_manifest
from .app import main
from .paths import FsPath
from .common import catalogue, default_generated, err, handle_errors, out
from .common import manifest_path as manifest_file

__all__ = ["generate_cmd"]


def _fix_command(manifest: str | None, out_dir: str | None, pattern: str | None, edited: bool, stale: bool) -> str:
    """The ``generate`` command that brings the output folder in step (flags as given to --check)."""
    parts = ["pattern-gen generate"]
    if manifest:
        parts.append(f"--manifest {shlex.quote(manifest)}")
    if out_dir:
        parts.append(f"--out {shlex.quote(out_dir)}")
    if pattern:
        parts.append(f"--filter {shlex.quote(pattern)}")
    if edited:  # without it, generate refuses to replace the hand-edited file
        parts.append("--force")
    if stale:
        parts.append("--prune")
    return " ".join(parts)


@main.command("generate")
@click.option("--manifest", "manifest_path", type=FsPath(dir_okay=False), default=None, help="Manifest file (default: the project's, else the catalogue's manifest.yaml).")
@click.option("--check", is_flag=True, help="Render to memory and compare with the output folder; exit 1 on any drift.")
@click.option("--filter", "pattern", default=None, help="Only instances whose name matches this glob.")
@click.option("--out", "out_dir", type=FsPath(file_okay=False), default=None, help="Output folder (default: the project's generated/).")
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
    manifest = load_manifest(manifest_file(ctx, manifest_path))
    root = Path(out_dir) if out_dir else default_generated()
    if prune is None:  # another --out may hold the user's own `new` kernels: never delete those unasked
        prune = root.resolve() == default_generated().resolve()
    with Progress(console=err, transient=True) as bar:
        task = bar.add_task("rendering", total=None)
        result = generate(
            cat, manifest, root, check=check, pattern=pattern, force=force, prune=prune,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    if check:
        lines = result.drift + [f"refusal: {f}" for f in result.refusal_failures]
        for line in result.lint:  # the files are up to date but not as ruff wants them: fix the templates
            err.print(escape(line), soft_wrap=True)
        if result.lint and not lines:
            err.print("[red]the rendered files fail ruff[/red]: fix the templates that render them.", markup=True)
            sys.exit(1)
        if lines:
            for line in lines:
                err.print(escape(line), soft_wrap=True)
            command = _fix_command(manifest_path, out_dir, pattern, result.drift_edited, result.drift_stale_instances and not prune)
            err.print(f"[red]{escape(str(root))} is out of date[/red]: run `{escape(command)}` and commit the result.", soft_wrap=True, markup=True)
            sys.exit(1)
        out.print(f"[green]ok[/green]: {result.instances} instances in {escape(str(root))} are up to date; {result.refusals} refusals hold", soft_wrap=True, markup=True)
        return
    for path in result.removed_files:
        err.print(f"removed stale generated file {escape(str(path))}", soft_wrap=True)
    out.print(
        f"{result.instances} instances: {result.written} files written, {result.unchanged} unchanged, "
        f"{len(result.removed_instances)} stale instances removed -> {escape(str(root))}",
        soft_wrap=True,
    )
    for entry in result.left_alone:
        err.print(f"[yellow]left alone[/yellow]: {escape(str(entry.path))} {entry.why}; `generate --check` reports it as stale", soft_wrap=True, markup=True)
    for line in result.refusal_failures:
        err.print(f"[red]refusal:[/red] {escape(line)}", soft_wrap=True, markup=True)
    if result.refusal_failures:
        sys.exit(1)
