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


def test_help_imports_no_command_module() -> None:
    """``pattern-gen --help`` lists the commands from the table: it must not import the simulator,
    the tuner or numpy (that is what kept every command's start near a second)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pattern_gen.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('ptosim', 'numpy', 'pattern_gen.tune', 'pattern_gen.catalogue', 'pydantic') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out, out[-500:]
