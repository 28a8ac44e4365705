"""The lazy command group's table (``cli.app.COMMANDS``) is the commands' own: every command is
listed with the module that defines it and the first sentence of its docstring."""

from __future__ import annotations

from pattern_gen.cli.app import COMMANDS, load_all


def test_commands_table_matches_the_commands() -> None:
    main = load_all()
    assert sorted(main.commands) == sorted(COMMANDS)
    for name, (module, short) in COMMANDS.items():
        command = main.commands[name]
        assert short == command.get_short_help_str(1000), name
        assert command.callback.__module__ == f"pattern_gen.cli.{module}", name
