"""CLI fuzz: random command lines built from the commands' own flags and hostile values.

Every outcome must be an exit code of 0, 1 or 2 with no traceback and no unexpected exception;
exit 2 prints at least one ``error: … [code]`` line with a known code, quoting at most a bounded
part of any value. The run happens in a fresh working directory, so whatever a command writes
stays there; commands that run for long (``docs``, ``generate`` without ``--check``, a valid
``tune``) are kept to their refusal paths.

``PATTERN_GEN_FUZZ_EXAMPLES`` raises the number of examples for a longer local run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hang_guard import HANG_LIMIT_S, time_limit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pattern_gen.vocab.errors import ERROR_CODES

EXAMPLES = int(os.environ.get("PATTERN_GEN_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

HOSTILE = [
    "", " ", "0", "-1", "1e999", "nan", "inf", "99999999999999999999", "x" * 3000, "\x01", "../..", "/dev/zero",
    "/proc/self/mem", "AT-99", "SK-99", "K=", "=", "=1", "K=0", "K=-64", "K=1e9", "K=abc", "unroll=3", "unroll=128",
    "quant_mode=int8_w8a8", "quant_mode=nope", "has_gamma=maybe", "eps=-1", "eps=nan", "kv_norm.has_gamma=false",
    "vec_nbuffer_setting={0: 4}", "stitch_function_max_num=" + "9" * 400, "a: &a [*a, *a]", "proj.linear=m:0x0,k:1x1,n:1x1",
    "proj.rmsnorm=-8x256", "proj.rmsnorm=8x256", "AT-10", "AT-03,AT-09", "SK-03", "a2a3", "ascend950", "nowhere", "pypto",
    "ptosim", "1,16", "0,1", "💥", "%s%n", "{}", "[]", "null", "[/x]", "[bold]", ":smile:", "\x1b]0;t\x07", "\u202e", "K=２５６",
]
VALUES = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20))

#: command -> (flags taking a value, bare flags); values are drawn from HOSTILE
COMMANDS: dict[str, tuple[list[str], list[str]]] = {
    "list": (["--kind", "--tag"], ["--json"]),
    "show": ([], ["--json"]),
    "validate": ([], []),
    "schema": ([], []),
    "explain": ([], ["--json"]),
    "config": ([], []),
    "new": (["--skeleton", "--atoms", "--param", "--dim", "--platform", "--option", "--tile", "--target", "--out", "--name"],
            ["--dry-run", "--json", "--quiet", "--force"]),
    "run": (["--T", "--seed", "--target"], ["--json", "--verify", "--rules"]),
    "generate": (["--filter", "--manifest"], ["--check"]),
    "tune": (["--atoms", "--param", "--dim", "--platform", "--option", "--tile", "--T-dist", "--manifest", "--strategy", "--beam", "--jobs"],
             ["--json", "--quiet"]),
    "new-card": (["--from", "--into"], []),
}
#: positional arguments a command takes
POSITIONAL = {"show": 1, "validate": 1, "explain": 1, "run": 1, "new-card": 1, "tune": 1}


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    flags, bare = COMMANDS[command]
    argv = [command]
    for _ in range(draw(st.integers(0, POSITIONAL.get(command, 0)))):
        argv.append(draw(VALUES))
    for _ in range(draw(st.integers(0, 4))):
        if flags and draw(st.booleans()):
            argv += [draw(st.sampled_from(flags)), draw(VALUES)]
        elif bare:
            argv.append(draw(st.sampled_from(bare)))
    if command == "tune":  # a valid sweep runs for seconds: keep tune on its refusal paths
        argv += ["--T", draw(st.sampled_from(["0", "-1", "abc", "1," + "9" * 30, ""]))]
    if command == "generate" and "--check" not in argv:
        argv.append("--check")
    return argv


def _check(run, argv: list[str]) -> None:
    where = f"argv {argv!r}\nstdout:\n{run.stdout[-2000:]}\nstderr:\n{run.stderr[-2000:]}"
    assert run.exception is None, f"{run.exception!r}\n{where}"
    assert run.exit_code in (0, 1, 2), where
    assert "Traceback" not in run.stdout + run.stderr, where
    if run.exit_code == 2:
        assert run.problems or "Usage:" in run.stderr, where  # click's own usage errors also exit 2
        for text, code in run.problems:
            assert code in ERROR_CODES, where
            assert len(text) < 1500, where  # a hostile value is quoted in part, never whole


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PATTERN_GEN_CATALOGUE", raising=False)
    return tmp_path


def test_cli_fuzz(workdir: Path, cli) -> None:
    @FUZZ
    @given(command_lines())
    def check(argv: list[str]) -> None:
        with time_limit(HANG_LIMIT_S):
            run = cli(*argv)
        _check(run, argv)

    check()
    # nothing was written outside the working directory: the fuzz values name ../.. and /dev
    assert not (workdir.parent / "kernels").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["new", "--skeleton", "SK-03", "--dim", "K=" + "9" * 5000],
        ["new", "--skeleton", "SK-03", "--option", "stitch_function_max_num=" + "9" * 5000],
        ["new", "--skeleton", "SK-03", "--option", "vec_nbuffer_setting=&a [*a, *a, *a]"],
        ["run", "/dev/zero"],
        ["tune", "--skeleton", "SK-03", "--T", "1", "--T-dist", "/dev/zero"],
        ["tune", "--skeleton", "SK-03", "--T-dist", "/dev/zero"],
        ["show", "\x00"],
        ["explain", "x" * 5000],
    ],
)
def test_known_hostile_lines(workdir: Path, cli, argv: list[str]) -> None:
    run = cli(*argv)
    _check(run, argv)
    assert run.exit_code == 2
