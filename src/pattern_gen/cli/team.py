"""A team's repository: ``config`` (the resolved project settings), ``init`` (scaffold one) and
``new-card`` (copy a card under a new id, with the golden it needs)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ..output.scaffold import init_project, new_card
from .app import main
from .paths import FsPath
from .common import add_literal_row, catalogue, handle_errors, literal, out, project

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
@click.pass_context
@handle_errors
def init_cmd(ctx: click.Context, folder: str) -> None:
    """Scaffold a team repository: config, cards/ with an example atom and its golden stub, a
    manifest, .gitignore, pre-commit hooks and a CI workflow."""
    written = init_project(catalogue(ctx), Path(folder))
    for path in written:
        out.print(literal(f"wrote {path}"))
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
