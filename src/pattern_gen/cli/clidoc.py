"""The CLI reference page, generated from the click commands themselves (never hand-kept)."""

from __future__ import annotations

import click

__all__ = ["cli_reference"]


def _usage(cmd: click.Command, path: str) -> str:
    ctx = click.Context(cmd, info_name=path)
    return cmd.get_usage(ctx).replace("Usage: ", "")


def _options(cmd: click.Command) -> list[str]:
    rows = []
    for param in cmd.params:
        if isinstance(param, click.Argument):
            rows.append(f"| `{param.human_readable_name}` | argument | |")
            continue
        if not isinstance(param, click.Option):
            continue
        names = ", ".join(f"`{o}`" for o in param.opts + param.secondary_opts)
        kind = "flag" if param.is_flag else (param.metavar or param.type.name.upper())
        if isinstance(param.type, click.Choice):
            kind = " \\| ".join(param.type.choices)
        default = "" if param.default in (None, False, ()) or param.is_flag else f" (default: `{param.default}`)"
        help_text = (param.help or "").replace("|", "\\|") + default
        rows.append(f"| {names} | {kind} | {help_text} |")
    return rows


def cli_reference(group: click.Group, prog: str = "pattern-gen") -> str:
    lines = [
        "# Command-line reference",
        "",
        "Generated from the click commands of `pattern-gen`. Exit codes: 0 ok, 1 a check failed, 2 bad input.",
        "",
        f"```text\n{_usage(group, prog)}\n```",
        "",
        (group.help or "").strip(),
        "",
        "| global option | kind | meaning |",
        "|---|---|---|",
        *_options(group),
        "",
    ]
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # through the group: a lazy group loads its commands here
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        lines += [
            f"## `{prog} {name}` {{#{name}}}",
            "",
            (cmd.help or "").strip(),
            "",
            f"```text\n{_usage(cmd, f'{prog} {name}')}\n```",
            "",
        ]
        rows = _options(cmd)
        if rows:
            lines += ["| option | kind | meaning |", "|---|---|---|", *rows, ""]
    return "\n".join(lines).rstrip() + "\n"
