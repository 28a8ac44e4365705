"""What reaches the terminal is shown literally: a path, a name or card text holding rich markup
(``[/x]``), an emoji code, or a control sequence (an OSC title, an ESC colour, a bidi override)
prints as text; it neither crashes rich nor drives the terminal (issue 35)."""

from __future__ import annotations

import pytest

from pattern_gen.cli.common import terminal_safe


@pytest.mark.parametrize("text, shown", [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"), ("a\u202eb", "a\\u202eb"), ("\x9b31m", "\\x9b31m"),
    ("tab\tand\nnewline", "tab\tand\nnewline"), ("[/x] :smile:", "[/x] :smile:"),
])
def test_terminal_safe_escapes_controls_only(text, shown):
    assert terminal_safe(text) == shown


@pytest.mark.parametrize("folder", ["[/x]", "[bold]b", "\x1b]0;pwn\x07", "r\u202etxt"])
def test_new_prints_a_hostile_out_folder_literally(cli, tmp_path, folder):
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--out", str(tmp_path / folder))
    run.assert_ok()
    assert "\x1b" not in run.stdout and "\u202e" not in run.stdout and "\x07" not in run.stdout
    assert terminal_safe(folder) in run.stdout
