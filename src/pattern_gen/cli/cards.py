"""The catalogue commands: ``list``, ``show``, ``validate`` and ``schema``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from ..cards.loader import card_adapter
from ..catalogue.catalogue import Catalogue, card_files, load_catalogue
from ..docs.describe import card_detail, card_summary, expansion_code, pseudo_code, skeleton_expansion
from ..flow import FlowError, Unavailable
from ..vocab.errors import PatternGenError, Problem, did_you_mean
from ..vocab.text import plain, quote, yaml_word
from .app import main
from .paths import unopenable
from .common import (
    add_literal_row,
    catalogue,
    catalogue_dirs,
    err,
    handle_errors,
    literal,
    manifest_path,
    out,
)
from .validate_cache import record_validated, validated_before, validation_key

__all__ = ["list_cmd", "show_cmd", "validate_cmd", "schema_cmd"]


def _tag_matches(tag: str, tags: list[str]) -> bool:
    """A tag or a prefix of its dash-separated words: ``norm`` finds ``norm-linear-fused`` too."""
    return any(t == tag or t.startswith(tag + "-") for t in tags)


@main.command("list")
@click.option("--kind", type=click.Choice(["atom", "skeleton"]), help="Only atoms or only skeletons.")
@click.option("--tag", help="Only cards with this tag (or a tag it begins: norm finds norm-linear-fused).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
@handle_errors
def list_cmd(ctx: click.Context, kind: str | None, tag: str | None, as_json: bool) -> None:
    """List the cards of the catalogue."""
    cat = catalogue(ctx)
    cards = [c for c in cat.sorted_cards() if (kind is None or c.kind == kind) and (tag is None or _tag_matches(tag, c.tags))]
    if tag is not None and not cards:
        tags = sorted({t for c in cat.cards.values() for t in c.tags})
        raise PatternGenError(Problem("unknown-card", f"no card has the tag {tag!r}; tags: {', '.join(tags)}" + did_you_mean(tag, tags)))
    rows = [card_summary(cat, c) for c in cards]
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    table = Table(title=f"pattern-gen catalogue — {len(rows)} cards", title_justify="left")
    for col in ("ID", "kind", "title", "tags", "flow", "parameters", "examples"):
        table.add_column(col, overflow="fold")
    for r in rows:
        add_literal_row(
            table,
            r["id"],
            r["kind"],
            r["title"],
            ", ".join(r["tags"]),
            " ".join(r["flow"]),
            ", ".join(r["params"]),
            ", ".join(r["examples"]),
        )
    out.print(table)


@main.command("show")
@click.argument("card_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
@handle_errors
def show_cmd(ctx: click.Context, card_id: str, as_json: bool) -> None:
    """Show one card: parameters, flow, IO, dependencies, constraints, performance table."""
    cat = catalogue(ctx)
    card = cat.card(card_id.upper())
    detail = card_detail(cat, card)
    if card.kind == "atom":
        detail["flow_code"] = pseudo_code(cat, card)
    else:
        try:
            detail["flow_code"] = expansion_code(skeleton_expansion(cat, card))
        except (FlowError, Unavailable) as exc:
            detail["flow_code"] = [{"label": "(not available)", "unit": "", "hoist": False, "lines": [str(exc)]}]
    if as_json:
        click.echo(json.dumps(detail, indent=2, default=str))
        return
    # everything below quotes the card (titles, docs, rules: "List[int]"): printed as Text, never markup
    out.print(Text.assemble((card.id, "bold"), " ", card.title, "  ", (f"({card.kind}; {', '.join(card.tags)})", "dim")))
    out.print(literal(card.summary.strip()))
    out.print(literal(f"flow: {' -> '.join(card.flow)}   (the CV order of the stages this card builds, default parameters)"))
    out.print(literal(f"upstream_flow: {' -> '.join(card.upstream_flow)}   (the upstream operator's order; where they differ, 'left out' says why)"))
    out.print(literal(f"file: {detail['file']}", "dim"), soft_wrap=True)  # a path folded at 80 columns cannot be copied
    params = Table(title="Parameters", title_justify="left")
    for col in ("name", "type", "choices", "default", "from", "meaning"):
        params.add_column(col, overflow="fold")
    for r in detail["parameters"]:
        choices = plain(r["choices"]) if r["choices"] else ", ".join(f"{k} {v}" for k, v in r["bounds"].items())
        add_literal_row(params, r["name"], r["type"], choices, plain(r["default"]), r["from"], r["doc"])
    out.print(params)
    for group in ("inputs", "outputs"):
        t = Table(title=group.capitalize(), title_justify="left")
        for col in ("name", "shape", "dtype", "role", "when"):
            t.add_column(col, overflow="fold")
        for r in detail[group]:
            add_literal_row(t, r["name"], "[" + ", ".join(r["shape"]) + "]", plain(r["dtype"]), r["role"], r["when"] or "")
        out.print(t)
    out.print("[bold]Compute flow[/bold] (default parameters" + ("" if card.kind == "atom" else ", the slot's default atom") + ")", markup=True)
    for s in detail["flow_code"]:
        out.print(literal(f"  [{s['unit']}] {s['label']}{'  (hoisted before the loop)' if s['hoist'] else ''}"))
        for line in s["lines"]:
            out.print(literal(f"      {line}"))
    if card.kind != "atom":
        slot = detail["slot"]
        out.print(Text.assemble(("Slot", "bold"), f" {slot['name']}: accepts {', '.join(slot['accepts'])} (default {slot['default']})"))
        for f in detail["fixed_stages"]:
            out.print(literal(f"  fixed stage {f['as']}: {f['card']} {f['params'] or ''}"))
        out.print(literal("dims: " + ", ".join(f"{k}={v['default']}" for k, v in detail["dims"].items())))
        out.print(literal(f"loop: {card.loop.kind} {card.loop.name} unroll candidates {card.loop.candidates}, default unroll_list {list(card.loop.default_list())}"))
        for item in detail["left_out"]:
            out.print(literal(f"  left out: {item}", "dim"))
        for r in card.regimes:
            tiles = ", ".join(f"{label} {t.text()}" for label, t in r.tiles.items())
            out.print(literal(f"regime {r.name}: when {r.trigger()} -> unroll {r.unroll}; {tiles}"
                              + ("; no cache policy" if r.cache_policy == [] else "")
                              + "".join(f"; {k} defaults to {yaml_word(v)}" for k, v in r.slot_defaults.items())
                              + "".join(f"; {k} any value" if v == 1 else f"; {k} a multiple of {v}" for k, v in r.multiple_of.items())))
    out.print(literal(f"depends on: {', '.join(detail['depends_on']) or '—'}   used by: {', '.join(detail['used_by']) or '—'}"))
    for u in detail["upgrades"]:
        out.print(literal(f"upgrade: when {u['when']} -> {u['to']}: {u['reason']}"))
    for r in detail["refuse"]:
        out.print(literal(f"refused: when {r['when']}: {r['reason']}"))
    if detail["constraints"]:
        t = Table(title="Constraints", title_justify="left")
        for col in ("id", "level", "rule"):
            t.add_column(col, overflow="fold")
        for c in detail["constraints"]:
            add_literal_row(t, c["id"], c["level"], c["rule"])
        out.print(t)
    perf = detail["performance"]
    if perf["options"] or perf["tiles"]:
        t = Table(title="Performance", title_justify="left")
        for col in ("knob", "value", "level", "why"):
            t.add_column(col, overflow="fold")
        for r in perf["options"]:
            add_literal_row(t, f"{r['group']}.{r['key']}", plain(r["value"]), r["level"], r["why"] + (f" (when {r['when']})" if r["when"] else ""))
        for r in perf["tiles"]:
            add_literal_row(t, f"tile {r['stage']}", r["tile"], "", r["why"])
        out.print(t)


@main.command("validate")
@click.argument("paths", nargs=-1, type=click.Path())  # checked by unopenable: all problems at once
@click.option(
    "--goldens",
    is_flag=True,
    help="Also generate every parameter value of every skeleton (one at a time, at the seed dims) and run it against its golden with several seeds (minutes).",
)
@click.option("--skeleton", "sweep_skeletons", multiple=True, help="With --goldens: only these skeletons (repeatable).")
@click.pass_context
@handle_errors
def validate_cmd(ctx: click.Context, paths: tuple[str, ...], goldens: bool, sweep_skeletons: tuple[str, ...]) -> None:
    """Validate the catalogue, a catalogue folder, a folder of your own cards, or card files.

    A folder with ``platforms/`` is a whole catalogue and replaces the shipped one; any other folder
    (or file) is checked on top of the shipped catalogue, as ``--catalogue`` would add it. With
    ``--goldens``, every parameter value is also run against its golden (exit 1 when one fails)."""
    refused = [Problem("bad-path", f"{quote(p)}: {why}") for p in paths for why in [unopenable(p)] if why]
    if refused:
        raise PatternGenError(refused)
    folders = [Path(p) for p in paths if Path(p).is_dir()]
    files = [Path(p) for p in paths if Path(p).is_file()]
    missing = [Problem("bad-path", f"no such file or folder: {p}") for p in paths if not Path(p).exists()]
    odd = [
        Problem("bad-path", f"{p} is neither a card file nor a catalogue folder (a FIFO, device or socket?)")
        for p in paths
        if Path(p).exists() and not (Path(p).is_dir() or Path(p).is_file())
    ]
    unread = [Problem("bad-path", f"{p} is not a card file: cards are .yaml files") for p in paths if Path(p).is_file() and not p.endswith(".yaml")]
    unread += [
        Problem("bad-path", f"{p} holds no cards (no atoms/, skeletons/, platforms/ or *.yaml card files); give a catalogue folder")
        for p in paths
        if Path(p).is_dir() and not card_files(Path(p)) and not (Path(p) / "platforms").is_dir()
    ]
    if missing or odd or unread:
        raise PatternGenError(missing + odd + unread)
    whole = [f for f in folders if (f / "platforms").is_dir()]
    base = whole[0] if whole else None
    extra = catalogue_dirs(ctx) + [str(f) for f in folders if f != base]
    cat = load_catalogue(extra, files=files, base=base)
    # imported here: the checks and the manifest planner are most of validate's import time
    from ..checks import check_catalogue
    from ..output.generate import plan_manifest, refusal_failures
    from ..plan.manifest import load_manifest

    manifest = manifest_path(ctx, None) if not paths or whole else None
    key = validation_key(cat.dirs, files, manifest)
    if validated_before(key):  # the same cards, manifest and code validated clean before
        _print_ok(cat)
        if goldens:
            _golden_sweep(cat, sweep_skeletons)
        return
    problems = check_catalogue(cat)
    if not problems and manifest is not None and manifest.is_file():  # valid cards: do the instances still resolve?
        try:
            loaded = load_manifest(manifest)
            plan_manifest(cat, loaded)
            problems += [Problem("manifest", f"refused entry: {f}", str(manifest)) for f in refusal_failures(cat, loaded)]
        except PatternGenError as exc:
            problems += exc.problems
    if problems:
        raise PatternGenError(problems)
    record_validated(key)
    _print_ok(cat)
    if goldens:
        _golden_sweep(cat, sweep_skeletons)


def _golden_sweep(cat: Catalogue, skeletons: tuple[str, ...]) -> None:
    """Run every variation's golden; print one line each; exit 1 when any fails."""
    from ..output.sweep import SWEEP_MAX_T, SWEEP_SEEDS, run_variation, variations

    unknown = [s for s in skeletons if s not in {sk.id for sk in cat.skeletons()}]
    if unknown:
        raise PatternGenError([Problem("unknown-card", f"--skeleton {quote(s)} is not a skeleton of the catalogue") for s in unknown])
    todo = list(variations(cat, skeletons))
    failed = 0
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True) as bar:
        task = bar.add_task("golden sweep", total=len(todo))
        for v in todo:
            bar.update(task, description=f"golden sweep: {v.label}")
            r = run_variation(cat, v)
            if r.refused:
                out.print(literal(f"refused  {v.label}: {r.refused}", "dim"))
            elif r.passed:
                out.print(literal(f"pass     {v.label} ({r.runs} runs)"))
            else:
                failed += 1
                out.print(literal(f"FAIL     {v.label}", "red"))
                for line in r.failures[:6]:
                    out.print(literal(f"    {line}"), soft_wrap=True)
            bar.advance(task)
    summary = f"golden sweep: {len(todo) - failed} of {len(todo)} variations pass (T up to {SWEEP_MAX_T}, seed {', '.join(map(str, SWEEP_SEEDS))})"
    out.print(literal(summary, "red" if failed else "green"))
    if failed:
        sys.exit(1)


def _print_ok(cat: Catalogue) -> None:
    n_atoms, n_sk = len(cat.atoms()), len(cat.skeletons())
    platforms = ", ".join(sorted(cat.platforms))  # file names: literal text too
    out.print(Text.assemble(("ok", "green"), f": {n_atoms} atoms, {n_sk} skeletons, {len(cat.constraints)} constraints, platforms {platforms}"))


@main.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of card files (for editors: yaml-language-server, VS Code)."""
    schema = card_adapter.json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pattern-gen card"
    click.echo(json.dumps(schema, indent=2, sort_keys=True))

