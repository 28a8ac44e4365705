"""Input that breaks a run late unless it is refused early: bytes that are not UTF-8,
dims and names too large to write or allocate, a disk that refuses a write, another tool's folder
given to ``generate --out``, a port already taken, a flag given twice."""

from __future__ import annotations

import errno
import http.server
import re
import shutil
from pathlib import Path

import pytest

from pattern_gen.output import writer
from pattern_gen.vocab.resources import package_patterns_dir


def test_a_card_that_is_not_utf8_is_one_problem_with_its_position(cli, tmp_path):
    root = tmp_path / "patterns"
    shutil.copytree(package_patterns_dir(), root)
    card = next((root / "atoms").glob("AT-03-*.yaml"))
    lines = card.read_bytes().split(b"\n")
    lines[2] = lines[2] + b" \xff"
    card.write_bytes(b"\n".join(lines))
    run = cli("validate", str(root))
    run.assert_bad_input("yaml-syntax")
    assert f"{card}:3:" in run.stderr and "not UTF-8" in run.stderr


def test_a_manifest_that_is_not_utf8_is_one_problem(cli, tmp_path):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_bytes(b"instances: []\n# caf\xe9\n")
    run = cli("generate", "--manifest", str(manifest), "--out", str(tmp_path / "gen"), "--check")
    run.assert_bad_input("yaml-syntax")
    assert f"{manifest}:2:" in run.stderr


@pytest.mark.parametrize("dim", ["N=68719476736", "K=" + "1" * 200])
def test_a_dim_too_large_to_allocate_is_refused_before_writing(cli, tmp_path, monkeypatch, dim):
    monkeypatch.chdir(tmp_path)
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", dim, "--run")
    run.assert_bad_input("bad-dim")
    assert not (tmp_path / "kernels").exists()


def test_a_name_too_long_for_a_folder_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--name", "k" * 300).assert_bad_input("bad-name")
    assert not (tmp_path / "kernels").exists()


def test_a_write_the_disk_refuses_is_one_problem_and_leaves_no_empty_folder(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def full_disk(path: Path, text: str) -> str:
        path.parent.mkdir(parents=True, exist_ok=True)  # as the real one does before the write fails
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer, "stage_file", full_disk)
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128")
    run.assert_bad_input("bad-path")
    assert "No space left on device" in run.stderr
    assert not any((tmp_path / "kernels").iterdir())


def test_generate_into_another_folder_leaves_the_users_kernels_alone(cli, tmp_path, monkeypatch):
    """``generate --out kernels`` must not delete a kernel ``new`` wrote there; ``--prune`` may."""
    monkeypatch.chdir(tmp_path)
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text("instances:\n  - {skeleton: SK-03, atoms: AT-10, dims: {K: 256, N: 128}}\n", encoding="utf-8")
    cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=512", "--dim", "N=128").assert_ok()
    (mine,) = list((tmp_path / "kernels").iterdir())
    kept = cli("generate", "--manifest", str(manifest), "--out", "kernels")
    kept.assert_ok()
    assert mine.is_dir() and "--prune" in kept.stderr
    cli("generate", "--manifest", str(manifest), "--out", "kernels", "--prune").assert_ok()
    assert not mine.exists()


def test_docs_serve_on_a_busy_port_fails_before_building(cli):
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler) as busy:
        port = busy.server_address[1]
        run = cli("docs", "serve", "--port", str(port))
    run.assert_bad_input("bad-path")
    assert f"127.0.0.1:{port}" in run.stderr


def test_a_parameter_given_twice_with_different_values_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--param", "eps=1e-5", "--param", "eps=1e-4")
    run.assert_bad_input("bad-param-value")
    assert "given twice" in run.stderr and not (tmp_path / "kernels").exists()


def _small_instance(cli, tmp_path) -> Path:
    cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--out", str(tmp_path)).assert_ok()
    return next(p for p in tmp_path.iterdir() if p.is_dir())


@pytest.mark.parametrize("stem", ["kernel", "golden"])
def test_a_fifo_or_device_in_place_of_an_instance_file_is_refused_without_waiting(cli, tmp_path, stem):
    """Issue 35: opening a FIFO named kernel.py for reading waited forever (generate, run), and
    /dev/zero linked as golden.py was read to 2 GB."""
    import os

    folder = _small_instance(cli, tmp_path / "k")
    (folder / f"{stem}.py").unlink()
    os.mkfifo(folder / f"{stem}.py")
    run = cli("run", str(folder))
    run.assert_bad_input("instance")
    assert "not a regular file" in run.stderr
    again = cli("new", "--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128", "--out", str(tmp_path / "k"))
    again.assert_bad_input("hand-edited")  # not overwritten without --force, and no hang
    (folder / f"{stem}.py").unlink()
    (folder / f"{stem}.py").symlink_to("/dev/zero")
    cli("run", str(folder)).assert_bad_input("instance")


def test_a_kernel_that_exits_does_not_read_as_passed(cli, tmp_path):
    folder = _small_instance(cli, tmp_path)
    kernel = folder / "kernel.py"
    text = kernel.read_text(encoding="utf-8")
    head, sep, body = text.partition("\ndef run(")
    assert sep, "the kernel has a run()"
    # a hand edit (its hash broken): run runs it, as the user's experiment
    kernel.write_text(head + "\nimport sys as _sys\n" + sep + body.replace(":\n", ":\n    _sys.exit(0)\n", 1), encoding="utf-8")
    run = cli("run", str(folder))
    assert run.exit_code == 2 and "SystemExit" in run.stderr, run.stderr


def test_a_T_beyond_the_cache_is_refused_naming_the_cache(cli):
    from pattern_gen.vocab.resources import repo_root

    folder = next((repo_root() / "generated").glob("sk05-at10-*-H256-NQ4-NKV2-D64"))
    run = cli("run", str(folder), "--T", "4096")
    run.assert_bad_input("instance")
    assert "k_cache holds 1024 token slots" in run.stderr and "golden.py" not in run.stderr


@pytest.mark.parametrize("mutate, error, says", [
    (lambda d: d.pop("x"), ValueError, "inputs lacks x"),
    (lambda d: d.__setitem__("x", d["x"].tolist()), TypeError, "inputs['x'] must be a numpy array [T, H], got list"),
    (lambda d: d.__setitem__("block_table", d["block_table"].reshape(-1)), ValueError, "inputs['block_table'] must have 2 axes [T, MB]"),
])
def test_the_host_wrapper_names_the_input_a_caller_got_wrong(mutate, error, says):
    """Issue 35: these were a bare KeyError, AttributeError and IndexError from inside run()."""
    from pattern_gen.output.instances import load_instance_module
    from pattern_gen.vocab.resources import repo_root

    folder = next((repo_root() / "generated").glob("sk05-at10-*-H256-NQ4-NKV2-D64"))
    kernel, golden = load_instance_module(folder, "kernel"), load_instance_module(folder, "golden")
    inputs = dict(golden.make_inputs(3, seed=0))
    mutate(inputs)
    with pytest.raises(error, match=re.escape(says)):
        kernel.run(inputs)


def test_an_int64_slot_mapping_is_taken_as_vllm_passes_it():
    """Issue 29: vLLM's slot_mapping is int64; the kernel's is INT32. Any integer array is taken
    (after the range checks) and gives the same bytes; a float array is refused by name."""
    import numpy as np

    from pattern_gen.output.instances import load_instance_module
    from pattern_gen.vocab.resources import repo_root

    folder = next((repo_root() / "generated").glob("sk05-at10-*-H256-NQ4-NKV2-D64"))
    kernel, golden = load_instance_module(folder, "kernel"), load_instance_module(folder, "golden")
    inputs = dict(golden.make_inputs(3, seed=0))
    ref = kernel.run(inputs)
    out = kernel.run({**inputs, "slot_mapping": inputs["slot_mapping"].astype(np.int64)})
    assert all(np.array_equal(ref[n].view(np.uint8), out[n].view(np.uint8)) for n in ref)
    with pytest.raises(TypeError, match="slot_mapping must hold integer slots"):
        kernel.run({**inputs, "slot_mapping": inputs["slot_mapping"].astype(np.float32)})
