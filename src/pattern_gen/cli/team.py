"""A team's repository: ``config`` (the resolved project settings), ``init`` (scaffold one) and
``new-card`` (copy a card under a new id, with the golden it needs)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ..output.scaffold import init_project, new_card
from ..output.tool_source import pinned_requirement
from .app import main
from .paths import FsPath
from .common import add_literal_row, catalogue, handle_errors, literal, out, project, warn

__all__ = ["config_cmd", "init_cmd", "new_card_cmd"]


@main.command("config")
@handle_errors
def config_cmd() -> None:
    """Print the project settings (pattern-gen.toml or [tool.pattern-gen]) and where each came from."""
    settings = project()
    out.print(literal(f"config file: {settings.file or '(none: defaults)'}"))
    table = Table(show_header=True)
    for col in ("setting", "value", "from"):
        table.add_column(col)
    for key, value, source in settings.rows():
        add_literal_row(table, key, value, source)
    out.print(table)


@main.command("init")
@click.argument("folder", type=FsPath(file_okay=False), default=".")
@click.option(
    "--tool-source",
    default=None,
    help="The pip requirement CI installs pattern-gen from (a VCS URL with a tag, or a path in the repository); default: where this copy came from.",
)
@click.pass_context
@handle_errors
def init_cmd(ctx: click.Context, folder: str, tool_source: str | None) -> None:
    """Scaffold a team repository, or adopt an existing one: config, cards/ with an example atom and
    its golden stub, a manifest, the pinned tool requirement, .gitignore, pre-commit hooks and a CI
    workflow. Existing files are kept (.gitignore gets the lines it lacks); a rerun finishes an
    interrupted init."""
    report = init_project(catalogue(ctx), Path(folder), tool_source=tool_source)
    for path in report.written:
        out.print(literal(f"wrote {path}"))
    for path in report.merged:
        out.print(literal(f"added pattern-gen's lines to {path}"))
    for path, why in report.kept:
        out.print(literal(f"kept {path}: {why}"))
    requirement = Path(folder) / "requirements-pattern-gen.txt"
    if not pinned_requirement(requirement):
        warn(f"{requirement}: no pattern-gen source CI can install ({report.tool_source.origin}); uncomment a line in it or rerun with --tool-source")
    else:
        out.print(literal(f"CI installs pattern-gen from {report.tool_source.spec} ({report.tool_source.origin})"))
    out.print(literal(f"next: cd {folder} && pattern-gen new --skeleton SK-03 --atoms AT-10 --run"))


@main.command("new-card")
@click.argument("card_id")
@click.option("--from", "source", required=True, help="The card to copy, e.g. AT-10.")
@click.option("--into", "into", type=FsPath(file_okay=False), default=None, help="Card folder (default: the project's first catalogue folder, else ./cards).")
@click.pass_context
@handle_errors
def new_card_cmd(ctx: click.Context, card_id: str, source: str, into: str | None) -> None:
    """Copy a card under a new id, with its golden reference (a stub that fails until written)."""
    settings = project()
    folder = Path(into) if into else (settings.catalogue[0] if settings.catalogue else Path("cards"))
    made = new_card(catalogue(ctx), card_id, source, folder)
    out.print(literal(f"wrote {made.card}"))
    out.print(literal(f"wrote {made.golden} — write the reference by hand; until then the golden test fails"))
    out.print(literal(f"next: edit the card, then pattern-gen validate{'' if into is None and settings.catalogue else f' --catalogue {folder}'}"))
