"""``pattern-gen models``: the Hugging Face model families ``--model`` understands."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..models import FAMILIES, family_of, model_settings, read_hf_config
from ..vocab.text import yaml_word
from .app import main
from .common import add_literal_row, handle_errors, out

__all__ = ["models_cmd"]


@main.command("models")
@click.argument("config", required=False, metavar="[CONFIG_JSON]")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handle_errors
def models_cmd(config: str | None, as_json: bool) -> None:
    """List the model families --model understands, or what one config.json gives each skeleton."""
    if config is None:
        rows = [{"family": f.name, "model_type": list(f.model_types), "skeletons": list(f.skeletons), "title": f.title} for f in FAMILIES]
        if as_json:
            click.echo(json.dumps(rows, indent=2))
            return
        table = Table(title="model families (--model CONFIG_JSON; nothing is downloaded)", title_justify="left")
        for col in ("family", "model_type", "skeletons", "what"):
            table.add_column(col, overflow="fold")
        for r in rows:
            add_literal_row(table, r["family"], ", ".join(r["model_type"]), ", ".join(r["skeletons"]), r["title"])
        out.print(table)
        return
    family = family_of(read_hf_config(Path(config)))
    got = {sk: model_settings(Path(config), sk) for sk in family.skeletons}
    if as_json:
        click.echo(json.dumps({sk: {"dims": s.dims, "params": s.params, "stage_params": s.stage_params, "sources": s.sources, "notes": list(s.notes)}
                               for sk, s in got.items()}, indent=2))
        return
    table = Table(title=f"{config}: a {family.name} config", title_justify="left")
    for col in ("skeleton", "setting", "value", "from"):
        table.add_column(col, overflow="fold")
    for sk, s in got.items():
        settings = [*s.dims.items(), *s.params.items(), *((f"{st}.{k}", v) for st, ps in s.stage_params.items() for k, v in ps.items())]
        for i, (name, value) in enumerate(settings):
            add_literal_row(table, sk if i == 0 else "", name, yaml_word(value), s.sources.get(name, ""))
    out.print(table)
    for sk, s in got.items():
        for note in s.notes:
            out.print(f"{sk}: {note}", soft_wrap=True, markup=False)
