"""``tune --apply``: the winning configuration into the manifest entry of the tuned request.

The entry is the one that builds the tuned request (the same instance name and options once
resolved, so ``AT-03,AT-09`` matches ``AT-10``), not one that reads alike — or, failing that, the
only entry that builds it apart from unroll, tiles and options (tuned before and applied). When
the winner is already another entry, nothing is written. Only that entry's lines change: it is written
back as one flow-style line with its ``unroll``, ``tiles`` and ``options`` replaced, so the rest of
the file (comments, order, other entries) stays as the team wrote it. A manifest without such an
entry gets a new one at the end of ``instances``. The result is read back and validated before
the file is replaced (atomically).
"""

from __future__ import annotations

import os

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ..catalogue.catalogue import Catalogue
from ..cards.yamlsrc import read_source
from ..output.writer import atomic_write
from ..plan.kernel_plan import KernelPlan, Request
from ..plan.manifest import ManifestEntry, load_manifest, to_request
from ..plan.resolver import resolve
from ..vocab.errors import PatternGenError, Problem

__all__ = ["ApplyResult", "apply_to_manifest", "check_target"]

_FIELDS = ("skeleton", "atoms", "params", "dims", "platform", "options", "tiles", "targets", "name", "why")


@dataclass
class ApplyResult:
    path: Path
    line: int  #: the entry's (first) line after the edit
    created: bool  #: a new entry (no entry built this request)
    changed: bool  #: False: the entry already had the winner's settings
    entry: dict[str, Any]


def _identity(plan: KernelPlan) -> tuple:
    """What an entry builds: its instance name (the request, resolved) and its options (not in the name)."""
    return (plan.name, tuple(sorted(((k, str(v)) for k, v in {**plan.runtime_options, **plan.pass_options, **plan.operation_options}.items()))))


def _base(plan: KernelPlan) -> tuple:
    """What an entry builds apart from what tune sets (unroll, tiles, options)."""
    params = {k: v for k, v in plan.params.items() if k != "unroll"}
    return (plan.skeleton, plan.atom, sorted(params.items(), key=str), sorted(plan.stage_params.items(), key=str),
            sorted(plan.dims.items()), plan.platform, plan.target)


def _entry_dict(entry: ManifestEntry) -> dict[str, Any]:
    data = entry.model_dump(exclude_defaults=True)
    if "targets" in data and data["targets"] == ["ptosim"]:
        data.pop("targets")
    return {k: data[k] for k in _FIELDS if k in data}


def _with_winner(data: dict[str, Any], winner: Request, default_unroll: list[int]) -> dict[str, Any]:
    out = dict(data)
    params = {k: v for k, v in dict(out.get("params") or {}).items() if k != "unroll"}
    unroll = list(winner.params.get("unroll", default_unroll))
    if unroll != default_unroll:
        params["unroll"] = unroll if len(unroll) > 2 or unroll[-1] != 1 else unroll[0]  # [16, 1] is written 16
    out["params"] = params
    out["options"] = dict(winner.options)
    out["tiles"] = {k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in winner.tiles.items()}
    for key in ("params", "options", "tiles"):
        if not out[key]:
            out.pop(key)
    return {k: out[k] for k in _FIELDS if k in out}


def _flow(data: dict[str, Any]) -> str:
    text = yaml.safe_dump(data, default_flow_style=True, sort_keys=False, width=1 << 20, allow_unicode=True).strip()
    return text


def _span(lines: list[str], start: int, next_start: int | None) -> tuple[int, int]:
    """0-based [start, end) of an entry's own lines: up to the next entry, without the blank and
    comment lines that introduce it."""
    end = next_start if next_start is not None else len(lines)
    while end - 1 > start and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    if next_start is None:  # the last entry: stop at the next top-level key (refused:)
        for i in range(start + 1, end):
            if lines[i] and not lines[i][0].isspace() and not lines[i].startswith(("-", "#")):
                end = i
                while end - 1 > start and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
                    end -= 1
                break
    return start, end


def check_target(path: Path) -> Any:
    """The manifest ``--apply`` will edit, checked before a sweep is spent on it: a regular file
    (not a symlink: replacing the link would leave the shared file it points to stale) that loads."""
    if path.is_symlink():
        raise PatternGenError(Problem("bad-path", f"--apply: {path} is a symlink; pass the file it points to ({path.resolve()})", str(path)))
    manifest = load_manifest(path)
    # the edit replaces the file through a sibling temp: both the file and its folder must be writable
    for need in (path, path.parent):
        if not os.access(need, os.W_OK):
            raise PatternGenError(Problem("bad-path", f"--apply: {need} is not writable; nothing was tuned — make it writable, or drop --apply", str(path)))
    return manifest


def apply_to_manifest(cat: Catalogue, path: Path, tuned: Request, winner: Request) -> ApplyResult:
    """Write ``winner``'s unroll, tiles and options into the entry of ``path`` that builds ``tuned``."""
    manifest = check_target(path)
    tuned_plan = resolve(cat, tuned)
    winner_plan = resolve(cat, winner)
    want, wins = _identity(tuned_plan), _identity(winner_plan)
    # the default list where the winner is (a regime has its own): an unroll equal to it is not written
    default_unroll = list(resolve(cat, replace(winner, params={k: v for k, v in winner.params.items() if k != "unroll"})).unroll)
    winner = replace(winner, params={**winner.params, "unroll": list(winner_plan.unroll)})
    text = read_source(path)
    lines = text.splitlines(keepends=True)
    found = None
    same_base: list[int] = []
    for i, entry in enumerate(manifest.instances):
        try:
            plan = resolve(cat, to_request(entry))
        except PatternGenError:
            continue  # a broken entry is validate's business, not a match
        ident = _identity(plan)
        if ident == wins and ident != want:  # the winner is another entry already: nothing to add
            line = manifest.where("instances", i).get("line") or 0
            return ApplyResult(path, line, False, False, _entry_dict(entry))
        if ident == want and found is None:
            found = i
        if _base(plan) == _base(tuned_plan):
            same_base.append(i)
    if found is None and len(same_base) == 1:
        # tuned again (another T distribution) after an earlier --apply changed the entry's unroll,
        # tiles or options: it is still the one entry of this request, so it is the one to update
        found = same_base[0]
    if found is not None:
        entry = manifest.instances[found]
        old = _entry_dict(entry)
        new = _with_winner(old, winner, default_unroll)
        line = manifest.where("instances", found).get("line")
        nxt = manifest.where("instances", found + 1).get("line") if found + 1 < len(manifest.instances) else None
        if line is None:
            raise PatternGenError(Problem("manifest", f"{path}: cannot locate instance entry {found + 1}", str(path)))
        start, end = _span(lines, line - 1, nxt - 1 if nxt else None)
        first = lines[start]
        indent = first[: len(first) - len(first.lstrip())]
        prefix = indent + ("- " if first.lstrip().startswith("- ") else "")
        if new == old:
            return ApplyResult(path, line, False, False, new)
        new = _keep_the_name(cat, old, new, resolve(cat, to_request(entry)).name)
        lines[start:end] = [f"{prefix}{_flow(new)}\n"]
        result = ApplyResult(path, line, False, True, new)
    else:
        # the values as the plan typed them (flags arrive as strings)
        params = {k: tuned_plan.params.get(k, v) for k, v in tuned.params.items()}
        params.update({f"{s}.{k}": tuned_plan.stage_params.get(s, {}).get(k, v) for s, ps in tuned.stage_params.items() for k, v in ps.items()})
        fields = {"skeleton": tuned_plan.skeleton, "atoms": ",".join(a.strip().upper() for a in tuned.atoms) or None, "params": params,
                  "dims": {k: tuned_plan.dims.get(k, v) for k, v in tuned.dims.items()}, "platform": tuned.platform}
        base = {k: v for k, v in fields.items() if v}
        new = _with_winner(base, winner, default_unroll)
        new["why"] = "tuned (pattern-gen tune --apply)"
        last = manifest.where("instances", len(manifest.instances) - 1).get("line") if manifest.instances else None
        if last is None:
            raise PatternGenError(Problem("manifest", f"{path}: no instances list to add the tuned entry to", str(path)))
        start, end = _span(lines, last - 1, None)
        first = lines[start]
        indent = first[: len(first) - len(first.lstrip())]
        if end > 0 and not lines[end - 1].endswith("\n"):
            lines[end - 1] += "\n"
        lines.insert(end, f"{indent}- {_flow(new)}\n")
        result = ApplyResult(path, end + 1, True, True, new)
    updated = "".join(lines)
    _check(path, updated)
    atomic_write(path, updated)
    return result


_TILES_TOKEN = re.compile(r"-tiles[0-9a-f]{6}(?=-|$)")


def _keep_the_name(cat: Catalogue, old: dict[str, Any], new: dict[str, Any], old_name: str) -> dict[str, Any]:
    """A retune must not rename the instance (git churn, broken docs links): where only the tile
    digest of the name would change, the entry keeps its name (``name:``); where the unroll
    changes, the name says so and ``why`` records the old one."""
    if "name" in old:
        return new
    try:
        new_name = resolve(cat, to_request(ManifestEntry.model_validate(new))).name
    except (PatternGenError, ValueError):
        return new
    if new_name == old_name:
        return new
    if _TILES_TOKEN.sub("", new_name) == _TILES_TOKEN.sub("", old_name):
        return {**new, "name": old_name}
    why = str(new.get("why", "")).strip()
    note = f"formerly {old_name} (renamed by tune --apply: the unroll changed)"
    return {**new, "why": f"{why}; {note}" if why else note}


def _check(path: Path, text: str) -> None:
    """The edited manifest must still load: validate a copy before replacing the file."""
    probe = path.with_name(f".{path.name}.tune-check")
    try:
        probe.write_text(text, encoding="utf-8")
        load_manifest(probe)
    except PatternGenError as exc:
        raise PatternGenError(Problem("manifest", f"{path}: the edited manifest would not load ({exc.problems[0].message}); nothing was written", str(path))) from None
    finally:
        probe.unlink(missing_ok=True)
