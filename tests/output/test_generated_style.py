"""Every generated file passes ruff (check and format --check) under the generated folder's ruff.toml,
and `generate --check` names a rendered file ruff refuses. Skips where ruff is not installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pattern_gen.output.lint import RUFF_TOML, RUFF_TOML_NAME, ruff_binary, ruff_problems

GENERATED = Path(__file__).resolve().parents[2] / "generated"
RUFF = ruff_binary()

pytestmark = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (pip install -e '.[dev]')")


def test_generated_folder_carries_the_style():
    assert (GENERATED / RUFF_TOML_NAME).read_text(encoding="utf-8") == RUFF_TOML


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_generated_files_pass_ruff(command):
    done = subprocess.run([RUFF, *command, "--no-cache", "."], cwd=GENERATED, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_generated_line_is_long():
    long = [
        f"{path.relative_to(GENERATED)}:{i}"
        for path in sorted(GENERATED.glob("*/*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > 120 and " " in line.strip()  # a lone word (an instance name) cannot break
    ]
    assert not long, long


def test_ruff_problems_name_the_file_and_the_message():
    rendered = {
        "inst": {
            "kernel.py": "import os\n\nx = 1\n",
            "golden.py": "y = [ 1,2 ]\n",
            "instance.json": "{}\n",
        }
    }
    problems = ruff_problems(rendered, RUFF)
    assert any(p.startswith("ruff check: inst/kernel.py:1:") and "F401" in p for p in problems), problems
    assert any(p.startswith("ruff format: inst/golden.py") for p in problems), problems
    assert not any("instance.json" in p for p in problems)
    assert ruff_problems({"inst": {"kernel.py": "x = 1\n"}}, RUFF) == []
