"""The ``pattern-gen`` command group; the commands register on it from their own modules."""

from __future__ import annotations

import click

from .. import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--catalogue",
    "catalogue_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Add a folder of your own cards (also PATTERN_GEN_CATALOGUE, os.pathsep-separated).",
)
@click.version_option(__version__, prog_name="pattern-gen")
@click.pass_context
def main(ctx: click.Context, catalogue_dirs: tuple[str, ...]) -> None:
    """pattern-gen: PyPTO pattern cards -> validated kernels, golden tests and docs."""
    ctx.ensure_object(dict)
    ctx.obj["catalogue_dirs"] = list(catalogue_dirs)
