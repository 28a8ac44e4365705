"""The ``pattern-gen`` command group; the commands register on it from their own modules.

The group loads a command's module only when that command runs (``pattern-gen --help`` and
``pattern-gen list`` do not import the simulator, the tuner or the docs builder). ``COMMANDS``
names each command's module and its one-line help; a test keeps it equal to the commands' own.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from .. import __version__
from .paths import FsPath

__all__ = ["main", "COMMANDS"]

#: command -> (module under pattern_gen.cli, its short help: the first sentence of its docstring)
COMMANDS: dict[str, tuple[str, str]] = {
    "config": ("team", "Print the project settings (pattern-gen.toml or [tool.pattern-gen]) and where each came from."),
    "docs": ("site", "Build or serve the browsable catalogue (mkdocs-material)."),
    "explain": ("instances", "Decode an instance name into its skeleton, atom, parameters, dims and stage settings."),
    "generate": ("generate", "Generate every manifest instance into generated/ (or check that it is up to date)."),
    "init": ("team", "Scaffold a team repository, or adopt an existing one: config, cards/ with an example atom and its golden stub, a manifest, the pinned tool requirement, .gitignore, pre-commit hooks and a CI workflow."),
    "list": ("cards", "List the cards of the catalogue."),
    "models": ("models", "List the model families --model understands, or what one config.json gives each skeleton."),
    "new": ("instances", "Compose a skeleton with atoms and write a kernel, its golden and its test."),
    "new-card": ("team", "Copy a card under a new id, with its golden reference (a stub that fails until written)."),
    "run": ("instances", "Run an instance (a folder, or a name under kernels/ or generated/) on random inputs against its golden and print the cost estimate; a pypto-target instance runs on the installed PyPTO."),
    "schema": ("cards", "Print the JSON Schema of card files (for editors: yaml-language-server, VS Code)."),
    "show": ("cards", "Show one card: parameters, flow, IO, dependencies, constraints, performance table."),
    "tune": ("tune", "Estimate the unroll lists the card's candidates make, tile alternatives and options with the cost model over a T distribution, rank them, check the winner against its golden (and --apply it)."),
    "validate": ("cards", "Validate the catalogue, a catalogue folder, a folder of your own cards, or card files."),
}


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (their modules register them)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"{__package__}.{COMMANDS[cmd_name][0]}")
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help`` from ``COMMANDS`` (no module is imported for it)."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max((len(n) for n in names), default=0)
        rows = [(name, _short_help(COMMANDS[name][1], limit) if name in COMMANDS else self.commands[name].get_short_help_str(limit))
                for name in names]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _short_help(text: str, limit: int) -> str:
    """The command list's one-liner: the help's first sentence, cut at a word to fit ``limit``
    (click's own helper is deprecated from click 8.2 on)."""
    first = text.split(". ")[0].rstrip(".")
    if len(first) <= limit:
        return first
    cut = first[: max(limit - 3, 1)].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "..."


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--catalogue",
    "catalogue_dirs",
    multiple=True,
    type=FsPath(file_okay=False),
    help="Add a folder of your own cards (also PATTERN_GEN_CATALOGUE, os.pathsep-separated).",
)
@click.version_option(__version__, prog_name="pattern-gen")
@click.pass_context
def main(ctx: click.Context, catalogue_dirs: tuple[str, ...]) -> None:
    """pattern-gen: PyPTO pattern cards -> validated kernels, golden tests and docs."""
    ctx.ensure_object(dict)
    ctx.obj["catalogue_dirs"] = list(catalogue_dirs)


def load_all() -> Any:
    """Import every command module (the docs' CLI reference and the tests want them all)."""
    for module in sorted({m for m, _ in COMMANDS.values()}):
        importlib.import_module(f"{__package__}.{module}")
    return main
