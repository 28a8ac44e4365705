"""Rendering and writing: deterministic bytes, content hashes, atomic writes only
on change, hand edits protected, ``new`` / ``generate [--check] [--filter]``, what generated files
import, and the kernel emitted op by op from the card flows.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
from pathlib import Path

import pytest

import pattern_gen
from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.output.instances import render_plan, run_instance
from pattern_gen.output.writer import content_ok, finalize, write_files
from pattern_gen.plan.manifest import load_manifest, to_request
from pattern_gen.plan.resolver import resolve
from pattern_gen.vocab.errors import PatternGenError
from pattern_gen.vocab.resources import package_patterns_dir

SK03_SMALL = ["--skeleton", "SK-03", "--atoms", "AT-10", "--dim", "K=256", "--dim", "N=128"]
SK03_SMALL_NAME = "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128_32_16_8-a2a3-K256-N128"
FILES = {"kernel.py", "golden.py", "instance.json", f"test_{SK03_SMALL_NAME.replace('-', '_')}.py"}

# Calls that place structure (labels, tiles, the loop, options), not ops of a card flow.
STRUCTURE = {"set_semantic_label", "set_vec_tile_shapes", "set_cube_tile_shapes", "loop_unroll", "set_operation_options"}


# --- determinism ------------------------------------------------------------------------------------


def test_rendering_is_deterministic(cat, request_of, small):
    for skeleton in ("SK-03", "SK-04", "SK-05"):
        req = request_of(skeleton, "AT-10", dims=small[skeleton], params={"output_rstd": True})
        first = render_plan(cat, resolve(cat, req))
        fresh = load_catalogue()  # a new catalogue, a new plan: the same bytes
        second = render_plan(fresh, resolve(fresh, req))
        assert first == second
        assert sorted(first) == sorted(["kernel.py", "golden.py", "instance.json", f"test_{resolve(cat, req).name.replace('-', '_')}.py"])


_RENDER_ALL = """
import hashlib
from pattern_gen.catalogue.catalogue import load_catalogue
from pattern_gen.output.instances import render_plan
from pattern_gen.plan.manifest import load_manifest, to_request
from pattern_gen.plan.resolver import resolve
cat = load_catalogue()
digest = hashlib.sha256()
for entry in load_manifest(cat.dirs[0] / "manifest.yaml").instances:
    for rel, text in sorted(render_plan(cat, resolve(cat, to_request(entry))).items()):
        digest.update(rel.encode() + text.encode())
print(digest.hexdigest())
"""


def test_rendering_does_not_depend_on_hash_seed(tmp_path):
    """Byte-identical across processes (no set or hash order leaks into the output)."""
    import subprocess
    import sys

    digests = set()
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        env.pop("PATTERN_GEN_CATALOGUE", None)
        done = subprocess.run([sys.executable, "-c", _RENDER_ALL], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_instance_json_is_portable(cat, request_of, small):
    req = request_of("SK-04", "AT-10", dims=small["SK-04"], params={"quant_mode": "int8_w8a8"})
    text = render_plan(cat, resolve(cat, req))["instance.json"]
    data = json.loads(text)
    for key in ("skeleton", "atoms", "params", "dims", "inputs", "outputs", "unroll", "platform", "options", "stages", "generator_version", "content_hash"):
        assert key in data, key
    assert set(data["options"]) >= {"runtime_options", "pass_options"}
    assert data["generator_version"] == pattern_gen.__version__ == importlib.metadata.version(pattern_gen.DISTRIBUTION)
    for t in data["inputs"] + data["outputs"]:
        assert set(t) >= {"name", "shape", "default_shape", "dtype", "role"}
    for s in data["stages"]:
        assert {"label", "unit"} <= set(s) and ("vec_tile" in s or "cube_tile" in s or s["ops"] and set(s["ops"]) <= {"view", "assemble", "reshape", "buffer"})
        if "cube_tile" in s:
            assert set(s["cube_tile"]) == {"m", "k", "n"}
    # no dates, no machine paths
    assert not re.search(r"\d{4}-\d{2}-\d{2}|\d\d:\d\d:\d\d", text)
    for path in (str(Path.home()), str(package_patterns_dir()), str(Path.cwd()), "/tmp", "/work"):
        assert path not in text, path
    assert content_ok("instance.json", text) is True


def test_every_generated_file_carries_a_valid_hash(instance_dirs):
    assert len(instance_dirs) >= 30
    for folder in instance_dirs:
        files = [p for p in folder.iterdir() if p.is_file()]
        assert len(files) == 4, folder
        for path in files:
            assert content_ok(path.name, path.read_text(encoding="utf-8")) is True, path


def test_content_hash_detects_an_edit():
    text = finalize("kernel.py", "x = 1\n", "banner")
    assert content_ok("kernel.py", text) is True
    assert content_ok("kernel.py", text.replace("x = 1", "x = 2")) is False
    assert content_ok("kernel.py", "x = 1\n") is None, "no header: not a generated file"
    data = finalize("instance.json", json.dumps({"a": 1}), "banner")
    assert content_ok("instance.json", data) is True
    assert content_ok("instance.json", data.replace('"a": 1', '"a": 2')) is False


# --- what generated files import ------------------------------------------------------------------


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add((node.module or "").split(".")[0])
    return found


#: what each target's kernel and test may import (the kernel text is shared; the host differs)
_KERNEL_IMPORTS = {
    "ptosim": ({"typing", "numpy", "ptosim"}, {"numpy", "ptosim"}),
    "pypto": ({"typing", "numpy", "pypto", "torch", "ml_dtypes", "glob", "json", "os", "tempfile"}, {"numpy", "pypto", "torch"}),
}


def test_generated_modules_import_only_what_they_may(instance_dirs):
    for folder in instance_dirs:
        target = json.loads((folder / "instance.json").read_text(encoding="utf-8")).get("target", "ptosim")
        allowed, needed = _KERNEL_IMPORTS[target]
        kernel = _imports(folder / "kernel.py")
        assert kernel <= allowed, (folder.name, kernel)
        assert needed <= kernel
        golden = _imports(folder / "golden.py")
        assert golden <= {"__future__", "numpy", "ml_dtypes", "functools", "typing"}, (folder.name, golden)
        (test,) = folder.glob("test_*.py")
        assert _imports(test) <= {"importlib", "pathlib", "pytest", "ptosim"}, (folder.name, _imports(test))
        for path in (folder / "kernel.py", folder / "golden.py", test):
            assert "pattern_gen" not in path.read_text(encoding="utf-8"), path


# --- the kernel is emitted op by op from the card flows ------------------------------------------


def _kernel_calls(kernel_py: str, function: str) -> tuple[list[str], list[str]]:
    """(op calls ``pypto.X(...)`` of the jit function in order, semantic labels in order)."""
    tree = ast.parse(kernel_py)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    ops, labels = [], []
    calls = [n for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    for call in calls:
        f = call.func
        if not isinstance(f, ast.Attribute):
            continue
        owner = f.value
        if isinstance(owner, ast.Name) and owner.id == "pypto":
            name = f.attr
        elif isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) and owner.value.id == "pypto":
            name = f.attr  # pypto.experimental.set_operation_options
        else:
            continue  # x.set_cache_policy(...), pypto.CachePolicy...
        if name == "set_semantic_label":
            labels.append(call.args[0].value)  # type: ignore[attr-defined]
        elif name not in STRUCTURE:
            ops.append({"Tensor": "buffer", "is_loop_begin": "if", "is_loop_end": "if"}.get(name, name))
    return ops, labels


#: ops spelled without a ``pypto.`` call: ``else:``, the end of a block, scalar arithmetic,
#: ``t[i, j]`` element reads, ``t.shape[a]``, ``buf[:] = x``
_NO_CALL = {"else", "end", "scalar", "read", "extent", "store"}


def _same_ops(kernel: list[str], plan: list[str]) -> bool:
    """The plan's ops in order, but for the casts an earlier identical cast made (layout.share_casts)
    and the in-place reshapes taken out of the token loop (layout.hoist_invariants: same count)."""
    if kernel.count("reshape") != plan.count("reshape"):
        return False
    rest = iter(o for o in kernel if o != "reshape")
    want = next(rest, None)
    for op in (o for o in plan if o != "reshape"):
        if op == want:
            want = next(rest, None)
        elif op != "cast":
            return False
    return want is None


def test_each_kernel_op_line_is_a_card_op(cat):
    """For every manifest instance: the kernel's op calls are the plan's ops, in order (a cast to the
    dtype the value already has is a plain name, no call; a cast already made is not made again; a
    reshape the same on every pass comes before the token loop), and its labels are the plan's stage
    labels."""
    from pattern_gen.emit.render import kernel_function_name

    manifest = load_manifest(cat.dirs[0] / "manifest.yaml")
    for entry in manifest.instances:
        plan = resolve(cat, to_request(entry))
        kernel = render_plan(cat, plan)["kernel.py"]
        ops, labels = _kernel_calls(kernel, kernel_function_name(plan))
        expected = [op.op for s in plan.all_stages for op in s.stage.ops
                    if not op.is_identity_cast and op.op not in _NO_CALL and not op.attrs.get("static")]  # a static loop: range()
        assert _same_ops(ops, expected), (plan.name, ops, expected)
        assert labels == [s.label for s in plan.all_stages], plan.name


def test_editing_a_card_flow_changes_the_kernel(tmp_path, shipped_copy, request_of, small):
    """Add an op to AT-03's flow in a private catalogue: the kernel gets it, the golden does not,
    so the generated golden test catches the change."""
    card = shipped_copy / "atoms" / "AT-03-rmsnorm.yaml"
    text = card.read_text(encoding="utf-8")
    anchor = "      - {op: mul, in: [xf, rstd], out: y}\n"
    assert anchor in text, "AT-03 changed: update this test"
    card.write_text(text.replace(anchor, anchor + '      - {op: mul, in: [y, {scalar: 2.0}], out: y, note: "injected by a test"}\n'), encoding="utf-8")
    edited = load_catalogue(base=shipped_copy)
    shipped = load_catalogue()
    req = request_of("SK-03", "AT-10", dims=small["SK-03"])
    before = render_plan(shipped, resolve(shipped, req))
    after_plan = resolve(edited, req)
    after = render_plan(edited, after_plan)
    added = [l for l in after["kernel.py"].splitlines() if l not in before["kernel.py"].splitlines()]
    assert [l.strip() for l in added if not l.startswith("# content-hash")] == [
        "normed = pypto.mul(normed, 2.0)  # injected by a test"
    ]
    assert after["golden.py"] == before["golden.py"], "goldens never read the card flow"
    folder = tmp_path / "out"
    write_files(folder / after_plan.name, after)
    result = run_instance(folder / after_plan.name, T=3, estimate=False)
    assert not result.passed, "the independent golden catches the edited flow"


def test_card_text_cannot_break_the_generated_code(shipped_copy, request_of, small):
    """Notes, titles and reasons are free card text: newlines, backslashes and triple quotes in them
    still give modules that compile (and keep the text)."""
    at03 = shipped_copy / "atoms" / "AT-03-rmsnorm.yaml"
    text = at03.read_text(encoding="utf-8")
    assert 'note: "variant A: fused rsqrt"' in text
    at03.write_text(text.replace('note: "variant A: fused rsqrt"', 'note: "variant A:\\nfused \\\\x rsqrt"'), encoding="utf-8")
    at10 = shipped_copy / "atoms" / "AT-10-norm-linear.yaml"
    text = at10.read_text(encoding="utf-8")
    assert "which quantises from the FP32 norm output directly" in text
    at10.write_text(text.replace("which quantises from", 'which quantises \\\\x """ from'), encoding="utf-8")
    cat = load_catalogue(base=shipped_copy)
    for params in ({}, {"quant_mode": "int8_w8a8"}):
        files = render_plan(cat, resolve(cat, request_of("SK-03", "AT-10", dims=small["SK-03"], params=params)))
        for rel, body in files.items():
            if rel.endswith(".py"):
                compile(body, rel, "exec")
        assert "# variant A: fused \\x rsqrt" in files["kernel.py"]


@pytest.fixture
def shipped_copy(tmp_path: Path) -> Path:
    root = tmp_path / "patterns"
    shutil.copytree(package_patterns_dir(), root)
    return root


# --- writing: atomic, only on change, hand edits protected ---------------------------------------


def test_new_writes_four_files_then_reports_them_unchanged(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = cli("new", *SK03_SMALL)
    first.assert_ok()
    folder = tmp_path / "kernels" / SK03_SMALL_NAME
    assert {p.name for p in folder.iterdir()} == FILES
    assert first.stdout.count("wrote ") == 4
    for rel in FILES:
        assert f"wrote {folder / rel}" in first.stdout, "paths are printed whole (no wrapping)"
    mtimes = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    second = cli("new", *SK03_SMALL)
    second.assert_ok()
    assert second.stdout.count("unchanged ") == 4 and "wrote " not in second.stdout
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == mtimes
    # the plan is printed: stages, tiles, options
    for word in ("proj.rmsnorm", "proj.linear", "stitch_function_max_num", "NONE_CACHEABLE"):
        assert word in first.stdout


def test_writes_are_atomic(tmp_path, monkeypatch):
    """A failing rename leaves the old file whole and no temporary file behind, and is one problem."""
    from pattern_gen.output import writer

    folder = tmp_path / "inst"
    old = finalize("kernel.py", "x = 1\n", "b")
    write_files(folder, {"kernel.py": old})

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(writer.os, "replace", boom)
    with pytest.raises(PatternGenError, match="disk full"):
        write_files(folder, {"kernel.py": finalize("kernel.py", "x = 2\n", "b")})
    assert (folder / "kernel.py").read_text(encoding="utf-8") == old
    assert [p.name for p in folder.iterdir()] == ["kernel.py"]


def test_written_files_get_ordinary_permissions(tmp_path):
    """New files get 0666 & ~umask (not mkstemp's 0600); a rewrite keeps the file's own mode."""
    umask = os.umask(0)
    os.umask(umask)
    folder = tmp_path / "inst"
    write_files(folder, {"kernel.py": finalize("kernel.py", "x = 1\n", "b")})
    path = folder / "kernel.py"
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    path.chmod(0o640)
    write_files(folder, {"kernel.py": finalize("kernel.py", "x = 2\n", "b")})
    assert path.stat().st_mode & 0o777 == 0o640


def test_hand_edited_file_is_not_overwritten(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli("new", *SK03_SMALL).assert_ok()
    folder = tmp_path / "kernels" / SK03_SMALL_NAME
    kernel = folder / "kernel.py"
    edited = kernel.read_text(encoding="utf-8") + "# my tweak\n"
    kernel.write_text(edited, encoding="utf-8")
    (folder / "golden.py").unlink()
    run = cli("new", *SK03_SMALL)
    run.assert_bad_input("hand-edited")
    message = " ".join(t for t, _ in run.problems)
    assert "kernel.py" in message and "--force" in message
    assert kernel.read_text(encoding="utf-8") == edited
    assert not (folder / "golden.py").exists(), "nothing is written when one file is refused"
    forced = cli("new", *SK03_SMALL, "--force")
    forced.assert_ok()
    assert "# my tweak" not in kernel.read_text(encoding="utf-8")
    assert content_ok("kernel.py", kernel.read_text(encoding="utf-8")) is True
    assert (folder / "golden.py").is_file()


def test_dry_run_writes_nothing(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = cli("new", *SK03_SMALL, "--dry-run")
    run.assert_ok()
    assert run.stdout.count("would write ") == 4
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--name", "a/b"], "bad-name"),
        (["--name", ".."], "bad-name"),
        (["--param", "quant_mode=mxfp8"], "composition-refused"),
        (["--param", "noequals"], "bad-param-value"),
    ],
)
def test_new_bad_input_writes_nothing(cli, tmp_path, monkeypatch, args, code):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    run = cli("new", *SK03_SMALL, *args)
    run.assert_bad_input(code)
    assert "nothing was written" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"] and list(work.iterdir()) == []


def test_new_out_may_be_any_folder(cli, tmp_path, monkeypatch):
    """A team keeps kernels where it likes: --out outside the working directory is fine (the
    instance name is one path component, so nothing lands outside --out)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    run = cli("new", *SK03_SMALL, "--out", str(tmp_path / "elsewhere"))
    run.assert_ok()
    (folder,) = (tmp_path / "elsewhere").iterdir()
    assert (folder / "kernel.py").is_file() and list(work.iterdir()) == []


@pytest.mark.parametrize("args", [["--out", "afile"], ["--out", "afile/sub"], ["--out", ".", "--name", "afile"]])
def test_new_into_a_file_is_bad_input(cli, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("mine\n", encoding="utf-8")
    cli("new", *SK03_SMALL, *args).assert_bad_input("bad-path")
    assert [p.name for p in tmp_path.iterdir()] == ["afile"] and (tmp_path / "afile").read_text(encoding="utf-8") == "mine\n"


def test_new_run_passes(cli, tmp_path, monkeypatch, stub_estimate):
    monkeypatch.chdir(tmp_path)
    run = cli("new", "--skeleton", "SK-04", "--atoms", "AT-10", *[f"--dim={k}={v}" for k, v in {"H": 256, "Q": 128, "NH": 4, "D": 64, "DKV": 64, "R": 32}.items()], "--run")
    run.assert_ok()
    assert "FAIL" not in run.stdout
    for T in (15, 3, 1):  # [8, 4, 2, 1]: one pass of each path at 15, the first T's verdict is the table
        assert f"T={T}: pass" in run.stdout
    if stub_estimate:
        assert "12.50 µs end to end, 3 tasks" in run.stdout, "the estimate is printed"


def test_new_option_lands_in_the_decorator(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli("new", *SK03_SMALL, "--option", "vec_nbuffer_setting={0: 4}").assert_ok()
    kernel = (tmp_path / "kernels" / SK03_SMALL_NAME / "kernel.py").read_text(encoding="utf-8")
    assert '"vec_nbuffer_setting": {0: 4}' in kernel
    bad = cli("new", *SK03_SMALL, "--option", "vec_nbuffer_settin={0: 4}", "--out", "other")
    bad.assert_bad_input("bad-option")
    assert "did you mean 'vec_nbuffer_setting'" in bad.stderr


# --- generate / generate --check -------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated_copy(tmp_path_factory) -> Path:
    """The manifest generated once into a temp folder with ``generate --out``."""
    from click.testing import CliRunner

    from pattern_gen.cli import main

    root = tmp_path_factory.mktemp("gen") / "generated"
    result = CliRunner().invoke(main, ["generate", "--out", str(root)])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def gen_tree(generated_copy: Path, tmp_path: Path) -> Path:
    """A private copy of the generated tree, to break."""
    root = tmp_path / "generated"
    shutil.copytree(generated_copy, root)
    return root


def test_generate_matches_the_committed_tree(generated_copy, generated_dir, instance_dirs):
    names = sorted(p.name for p in generated_copy.iterdir() if p.is_dir())
    assert names == sorted(p.name for p in instance_dirs)
    assert (generated_copy / "ruff.toml").read_bytes() == (generated_dir / "ruff.toml").read_bytes()
    for folder in instance_dirs:
        for path in folder.iterdir():
            if path.is_file():
                assert (generated_copy / folder.name / path.name).read_bytes() == path.read_bytes(), path


def _break(root: Path, how: str) -> str:
    inst = sorted(p for p in root.iterdir() if p.is_dir())[0]
    if how == "changed":  # a consistent generated file with other content (e.g. an older generator)
        path = inst / "kernel.py"
        body = path.read_text(encoding="utf-8").split("\n", 2)[2]
        path.write_text(finalize("kernel.py", body + "# older\n", "old banner"), encoding="utf-8")
        return f"changed: {inst.name}/kernel.py"
    if how == "missing":
        (inst / "golden.py").unlink()
        return f"missing: {inst.name}/golden.py"
    if how == "stale":
        (root / "sk03-at99-old").mkdir()
        (root / "sk03-at99-old" / "kernel.py").write_text("x = 1\n", encoding="utf-8")
        return "stale: sk03-at99-old/"
    if how == "stale-file":
        (inst / "notes.txt").write_text("mine\n", encoding="utf-8")
        return f"stale: {inst.name}/notes.txt"
    assert how == "edited"
    path = inst / "instance.json"
    text = path.read_text(encoding="utf-8")
    assert '"platform": "' in text
    path.write_text(text.replace('"platform": "', '"platform": "my-', 1), encoding="utf-8")
    return f"edited: {inst.name}/instance.json"


def test_generate_check_passes_on_a_fresh_tree(cli, gen_tree):
    run = cli("generate", "--check", "--out", str(gen_tree))
    run.assert_ok()
    assert "up to date" in run.stdout


@pytest.mark.parametrize("how", ["changed", "missing", "stale", "stale-file", "edited"])
def test_generate_check_catches_drift(cli, gen_tree, how):
    line = _break(gen_tree, how)
    before = {p: p.stat().st_mtime_ns for p in gen_tree.rglob("*")}
    run = cli("generate", "--check", "--out", str(gen_tree))
    assert run.exit_code == 1, (run.stdout, run.stderr)
    assert line in run.stderr, run.stderr
    assert "out of date" in run.stderr
    assert {p: p.stat().st_mtime_ns for p in gen_tree.rglob("*")} == before, "--check never writes"


def test_generate_repairs_drift_but_not_hand_edits(cli, gen_tree):
    instances = sorted(p for p in gen_tree.iterdir() if p.is_dir())
    _break(gen_tree, "missing")
    old = gen_tree / "sk03-at10-renamed-instance"
    shutil.copytree(instances[1], old)  # a generated instance the manifest no longer makes
    run = cli("generate", "--out", str(gen_tree), "--prune")  # the default prunes only the real generated/
    run.assert_ok()
    assert "1 stale instances removed" in run.stdout and not old.exists()
    cli("generate", "--check", "--out", str(gen_tree)).assert_ok()
    # a folder that is not a generated instance is never deleted, but it is named
    _break(gen_tree, "stale")
    run = cli("generate", "--out", str(gen_tree), "--prune")
    run.assert_ok()
    assert "left alone" in run.stderr and "sk03-at99-old" in run.stderr
    assert (gen_tree / "sk03-at99-old").is_dir()
    shutil.rmtree(gen_tree / "sk03-at99-old")
    # a hand edit stops generate before it writes anything, anywhere
    line = _break(gen_tree, "edited")
    (instances[-1] / "golden.py").unlink()
    run = cli("generate", "--out", str(gen_tree))
    run.assert_bad_input("hand-edited")
    assert line.split("/")[-1] in run.stderr and "--force" in run.stderr
    assert not (instances[-1] / "golden.py").exists(), "nothing was written"
    cli("generate", "--out", str(gen_tree), "--force").assert_ok()
    cli("generate", "--check", "--out", str(gen_tree)).assert_ok()


def test_generate_never_removes_a_file_by_its_hash_alone(cli, gen_tree):
    """Inside an instance folder only the files pattern-gen names (kernel.py, golden.py, the test,
    instance.json) are its own: a copy with a valid hash header (``kernel_backup.py``) or a user's
    note is left alone and named, so `generate --check` can be made to pass."""
    inst = sorted(p for p in gen_tree.iterdir() if p.is_dir() and p.name != "docs")[0]
    backup = inst / "kernel_backup.py"
    backup.write_text((inst / "kernel.py").read_text(encoding="utf-8"), encoding="utf-8")
    mine = inst / "notes.txt"
    mine.write_text("mine\n", encoding="utf-8")
    run = cli("generate", "--out", str(gen_tree))
    run.assert_ok()
    assert backup.exists() and mine.exists() and "kernel_backup.py" in run.stderr and "remove it yourself" in run.stderr
    backup.unlink()
    mine.unlink()
    cli("generate", "--check", "--out", str(gen_tree)).assert_ok()


def test_a_dropped_instance_keeps_the_users_files(cli, gen_tree):
    instances = sorted(p for p in gen_tree.iterdir() if p.is_dir())
    old = gen_tree / "sk03-at10-renamed-instance"
    shutil.copytree(instances[1], old)
    (old / "kernel_backup.py").write_text((old / "kernel.py").read_text(encoding="utf-8"), encoding="utf-8")
    run = cli("generate", "--out", str(gen_tree), "--prune", "--force")
    run.assert_ok()
    assert sorted(p.name for p in old.iterdir()) == ["kernel_backup.py"] and "yours kept (kernel_backup.py)" in run.stderr


def test_generate_filter(cli, tmp_path):
    out = tmp_path / "gen"
    run = cli("generate", "--out", str(out), "--filter", "sk05-*")
    run.assert_ok()
    names = sorted(p.name for p in out.iterdir() if p.name != "ruff.toml")  # the style the files keep
    assert names and all(n.startswith("sk05-") for n in names) and (out / "ruff.toml").is_file()
    cli("generate", "--check", "--out", str(out), "--filter", "sk05-*").assert_ok()
    # other instances are not checked under a filter, but a stale folder the filter covers is
    (out / "sk05-at99-old").mkdir()
    stale = cli("generate", "--check", "--out", str(out), "--filter", "sk05-*")
    assert stale.exit_code == 1 and "stale: sk05-at99-old/" in stale.stderr, stale.stderr
    full = cli("generate", "--check", "--out", str(out))
    assert full.exit_code == 1 and "missing: sk03-" in full.stderr
    none = cli("generate", "--out", str(out), "--filter", "zz*")
    none.assert_bad_input("manifest")
