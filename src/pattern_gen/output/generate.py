"""``generate`` as a library function: every manifest instance rendered, then checked or written.

``generate(...)`` collects (resolve every entry, every problem at once), filters, renders, then
either compares with the output folder (``check=True``) or writes — refusing every hand edit
before the first write — and prunes what the manifest dropped. It prints nothing: the result
says what happened, and the CLI (or a caller's CI script) decides how to show it.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..catalogue.catalogue import Catalogue
from ..plan.kernel_plan import KernelPlan
from ..plan.manifest import Manifest, to_request, to_requests
from ..plan.resolver import resolve
from ..vocab.errors import PatternGenError, Problem
from .instances import render_plan
from ..emit.render import module_id
from .lint import RUFF_TOML, RUFF_TOML_NAME, ruff_problems
from .writer import atomic_write, check_writes, compare_tree, content_ok, remove_stale_temporaries, write_files
from ..vocab.paths import read_text_file

__all__ = ["GenerateResult", "LeftAlone", "generate", "plan_manifest", "refusal_failures"]

#: top-level entries of an output folder that are not instances (generate owns or ignores them)
_NOT_INSTANCES = ("docs", "README.md", "__pycache__", RUFF_TOML_NAME)


@dataclass(frozen=True)
class LeftAlone:
    """A file or folder ``generate`` did not touch, and why."""

    path: Path
    why: str


@dataclass
class GenerateResult:
    """What ``generate`` found (``check=True``) or did."""

    root: Path
    instances: int
    refusals: int
    #: --check: one line per drifted, missing or stale file (empty: up to date)
    drift: list[str] = field(default_factory=list)
    #: --check: a hand-edited file drifted (``generate`` needs ``--force`` to replace it)
    drift_edited: bool = False
    #: --check: a whole stale instance folder (``generate`` outside generated/ needs ``--prune``)
    drift_stale_instances: bool = False
    written: int = 0
    unchanged: int = 0
    removed_instances: list[Path] = field(default_factory=list)
    removed_files: list[Path] = field(default_factory=list)
    left_alone: list[LeftAlone] = field(default_factory=list)
    #: manifest ``refused`` entries that no longer refuse as expected
    refusal_failures: list[str] = field(default_factory=list)
    #: --check: what ruff (where installed) says of the rendered files, one line per problem
    lint: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.drift and not self.refusal_failures and not self.lint


def plan_manifest(cat: Catalogue, manifest: Manifest) -> list[KernelPlan]:
    """Resolve every manifest instance; PatternGenError lists every problem, at its manifest line
    unless it is in a card."""
    plans, problems = [], []
    for i, entry in enumerate(manifest.instances):
        try:
            plans += [resolve(cat, req) for req in to_requests(entry)]
        except PatternGenError as exc:
            what = f"manifest instance {entry.skeleton} {entry.atoms} {entry.params}"
            at = manifest.where("instances", i)
            for p in exc.problems:
                where = {"file": p.file, "line": p.line, "col": p.col} if p.file else at
                problems.append(Problem(p.code, f"{what}: {p.message}", **where))
    names = [p.name for p in plans]
    dupes = sorted({n for n in names if names.count(n) > 1})
    problems += [Problem("manifest", f"two manifest entries make the same instance {n}; give one a 'name:'", str(manifest.path)) for n in dupes]
    if problems:
        raise PatternGenError(problems)
    return plans


def refusal_failures(cat: Catalogue, manifest: Manifest) -> list[str]:
    """The manifest's ``refused`` entries that resolve, or fail with another code than expected."""
    failures = []
    for entry in manifest.refused:
        try:
            resolve(cat, to_request(entry))
        except PatternGenError as exc:
            codes = {p.code for p in exc.problems}
            if entry.expect not in codes:
                failures.append(f"{entry.skeleton} {entry.atoms} {entry.params}: refused with {sorted(codes)}, expected {entry.expect}")
            continue
        failures.append(f"{entry.skeleton} {entry.atoms} {entry.params} {entry.dims}: accepted, but the manifest says it must be refused ({entry.expect})")
    return failures


def _instance_file_names(folder: Path) -> set[str]:
    """The names pattern-gen gives the files of an instance folder: its own, and those its
    instance.json lists (a copy such as ``kernel_backup.py`` carries a valid hash too, but it is
    the user's)."""
    names = {"kernel.py", "golden.py", "instance.json", f"test_{module_id(folder.name)}.py"}
    try:
        listed = json.loads(read_text_file(folder / "instance.json")).get("files")
    except (OSError, ValueError, AttributeError):
        listed = None
    if isinstance(listed, dict):
        names |= {str(n) for n in listed if isinstance(n, str) and "/" not in n and not n.startswith(".")}
    return names


def _is_generated(path: Path) -> bool:
    """A file pattern-gen wrote under its own name and nobody edited since (its content hash holds)."""
    if path.is_symlink() or path.name not in _instance_file_names(path.parent):
        return False
    try:
        return path.is_file() and content_ok(path.name, read_text_file(path)) is True
    except (OSError, UnicodeDecodeError):
        return False


def generate(
    cat: Catalogue,
    manifest: Manifest,
    root: Path,
    *,
    check: bool = False,
    pattern: str | None = None,
    force: bool = False,
    prune: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> GenerateResult:
    """Render every manifest instance (those matching the glob ``pattern``) into ``root``, or with
    ``check`` compare without writing. ``prune`` removes instance folders the manifest dropped.
    ``progress(done, total)`` is called after each instance is rendered."""
    plans = plan_manifest(cat, manifest)
    failures = refusal_failures(cat, manifest)
    selected = [p for p in plans if pattern is None or fnmatch.fnmatchcase(p.name, pattern)]
    if pattern is not None and not selected:
        raise PatternGenError(Problem("manifest", f"--filter {pattern!r} matches none of the {len(plans)} instances"))
    rendered = {}
    for i, plan in enumerate(selected):
        rendered[plan.name] = render_plan(cat, plan)
        if progress is not None:
            progress(i + 1, len(selected))
    result = GenerateResult(root, len(rendered), len(manifest.refused), refusal_failures=failures)
    if check:
        drift = compare_tree(root, rendered, owned={"docs", "README.md", RUFF_TOML_NAME})
        style = root / RUFF_TOML_NAME
        if not style.is_file():
            drift.missing.append(RUFF_TOML_NAME)
        elif read_text_file(style) != RUFF_TOML:
            drift.changed.append(RUFF_TOML_NAME)
        if pattern is not None:
            # Instances the filter leaves out are not stale; stale files inside the selected
            # instances, and stale top-level folders the filter covers, still are.
            drift.stale = [s for s in drift.stale if "/" in s.rstrip("/") or fnmatch.fnmatchcase(s.rstrip("/"), pattern)]
        result.drift = drift.lines()
        result.drift_edited = bool(drift.edited)
        result.drift_stale_instances = any("/" not in s.rstrip("/") for s in drift.stale)
        result.lint = ruff_problems(rendered)
        return result
    _write(result, rendered, pattern, force, prune)
    return result


def _write(result: GenerateResult, rendered: dict[str, dict[str, str]], pattern: str | None, force: bool, prune: bool) -> None:
    root = result.root
    # Every refusal (hand-edited files, stale instances with foreign files) before the first write.
    stale: list[Path] = []
    foreign: list[Path] = []
    problems: list[Problem] = []
    for name in rendered:  # a killed earlier run's temporaries are ours to clean, not the user's
        result.removed_files += remove_stale_temporaries(root / name)
    for name, files in rendered.items():
        problems += check_writes(root / name, files, force=force)
    if pattern is None and root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.name in rendered or entry.name.startswith(".") or entry.name in _NOT_INSTANCES:
                continue
            if not (entry.is_dir() and (entry / "instance.json").is_file()) or not prune:
                foreign.append(entry)
                continue
            ours = _instance_file_names(entry)
            edited = [p for p in entry.iterdir() if p.name in ours and not _is_generated(p)]
            if edited and not force:
                problems.append(Problem("hand-edited", f"stale instance {entry} has hand-edited files ({', '.join(p.name for p in edited)}); remove it yourself or use --force"))
            stale.append(entry)
    if problems:
        raise PatternGenError(problems)
    for name, files in rendered.items():
        report = write_files(root / name, files, force=force)
        result.written += len(report.written)
        result.unchanged += len(report.unchanged)
    style = root / RUFF_TOML_NAME
    if not (style.is_file() and read_text_file(style) == RUFF_TOML):
        atomic_write(style, RUFF_TOML)
        result.written += 1
    for entry in stale:  # pattern-gen's files go; anything else keeps the folder, reported
        for path in entry.iterdir():
            if path.name in _instance_file_names(entry) and not path.is_symlink() and path.is_file():
                path.unlink()
            elif path.name == "__pycache__" and path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
        left = sorted(p.name for p in entry.iterdir())
        if left:
            result.left_alone.append(LeftAlone(entry, f"dropped from the manifest: its generated files were removed, yours kept ({', '.join(left)})"))
        else:
            entry.rmdir()
    result.removed_instances = [e for e in stale if not e.exists()]
    stale_files = [
        path
        for name, files in rendered.items()
        for path in sorted((root / name).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path.relative_to(root / name).as_posix() not in files
    ]
    for path in [p for p in stale_files if _is_generated(p)]:  # e.g. a file an older version made
        path.unlink()
        result.removed_files.append(path)
    foreign += [p for p in stale_files if p.exists()]
    for entry in foreign:
        if entry.is_file() and entry.parent != root:
            why = "is not a file pattern-gen makes for this instance; remove it yourself"
        elif prune:
            why = "is not an instance folder of the manifest"
        else:
            why = "is not in the manifest (pass --prune to remove such folders)"
        result.left_alone.append(LeftAlone(entry, why))
