"""``pattern-gen tune``: rank unroll, tile and option configurations by ptosim's cost model."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..output.instances import instance_request, read_instance
from ..plan.kernel_plan import Request
from ..plan.unroll import describe_paths, unroll_text
from ..tune.apply import apply_to_manifest, check_target
from ..tune.evaluate import Point
from ..tune.search import STRATEGIES, TuneResult, tune
from ..tune.weights import DEFAULT_TS, load_T_dist, parse_T_list
from ..vocab.errors import PatternGenError, Problem
from .app import main
from .paths import FsPath
from .common import add_literal_row, catalogue, err, handle_errors, literal, manifest_path, out, project, strict_json
from .request_flags import request_from_flags, request_options
from .locate import find_instance

__all__ = ["tune_cmd"]


def _base_request(instance: str | None, skeleton: str | None, flags: dict[str, Any]) -> Request:
    if instance is not None:
        if skeleton is not None or flags["model"] is not None:
            raise PatternGenError(Problem("bad-option", "give an instance or --skeleton (with --model), not both"))
        folder = find_instance(instance)
        return replace(instance_request(read_instance(folder), str(folder / "instance.json")), name=None)
    if skeleton is None:
        raise PatternGenError(Problem("bad-option", "tune needs an instance (folder or name) or --skeleton (with --atoms, --param, --dim ...)"))
    return request_from_flags(skeleton, flags["atoms"], flags["params"], flags["dims"], flags["platform"] or project().platform,
                              flags["options"], None, flags["target"], flags["tiles"], model=flags["model"], quiet=flags["quiet"])


def _row_cells(result: TuneResult, p: Point, rank: str) -> list[str]:
    cells = [rank, result.space.describe(p.config)]
    cells += [f"{p.us[T]:.2f}" for T in result.weights]
    cells += [f"{p.score:.2f}", f"x{result.speedup(p):.2f}"]
    return cells


def _distinct(ranked: list[Point]) -> list[tuple[Point, int]]:
    """Points with their count of equivalents (the same estimate at every T, more changes)."""
    seen: dict[tuple, int] = {}
    out_: list[tuple[Point, int]] = []
    for p in ranked:
        key = tuple(round(p.us[T], 3) for T in sorted(p.us))
        if key in seen:
            q, n = out_[seen[key]]
            out_[seen[key]] = (q, n + 1)
            continue
        seen[key] = len(out_)
        out_.append((p, 0))
    return out_


def _print(result: TuneResult, top: int) -> None:
    weights = result.weights
    table = Table(title=f"tune: {result.space.base.command()}", title_justify="left", show_lines=False)
    table.add_column("#", justify="right")
    table.add_column("configuration (changes from the card)")
    for T, w in weights.items():
        table.add_column(f"T={T}" + (f" ({w:.0%})" if len(set(weights.values())) > 1 else ""), justify="right")
    table.add_column("weighted µs", justify="right")
    table.add_column("speed-up", justify="right")
    distinct = _distinct(result.ranked)
    default_rank = next(i for i, (p, _) in enumerate(distinct) if p.config == result.default.config or
                        all(round(p.us[T], 3) == round(result.default.us[T], 3) for T in weights))
    for i, (p, same) in enumerate(distinct[:top]):
        cells = _row_cells(result, p, str(i + 1))
        if same:
            cells[1] += f"  (+{same} equivalent)"
        add_literal_row(table, *cells, style="bold green" if i == 0 else ("dim" if i == default_rank else None))
    if default_rank >= top:
        add_literal_row(table, *_row_cells(result, result.default, str(default_rank + 1)), style="dim")
    out.print(table)
    best = result.best
    out.print(literal(f"best: {result.space.describe(best.config)} — x{result.speedup(best):.2f} against the card defaults "
                      f"({best.score:.2f} vs {result.default.score:.2f} µs per call under the T distribution)"))
    for T in weights:
        out.print(literal(f"  T={T}: {best.us[T]:.2f} µs, {best.tasks[T]} tasks — {best.bound[T]}"), soft_wrap=True)
    _print_against_singles(result)
    for what, ok in result.checked.items():
        out.print(literal(f"golden test of {what}: {'pass' if ok else 'FAIL'}"), style="green" if ok else "red")
    lowered = sum(1 for p in result.pruned if p.refused is None)
    refused = [p for p in result.pruned if p.refused is not None]
    out.print(literal(
        f"{len(result.ranked)} configurations estimated ({result.strategy} search over a space of {result.space.size()}), "
        f"{lowered} stopped early (could not win), {len(refused)} refused; {result.seconds:.1f} s"), style="dim")
    reasons: dict[str, int] = {}
    for p in refused:
        reason = (p.refused or "").replace("\n", " ")
        reason = reason if len(reason) <= 160 else reason[:157] + "..."
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:4]:
        out.print(literal(f"  refused x{n}: {reason}"), style="dim", soft_wrap=True)
    out.print(literal(f"the winner: {result.space.request(best.config).command()}"), soft_wrap=True)


def _print_against_singles(result: TuneResult) -> None:
    """Per T: the winner beside the best single unroll factor there (the card's tiles and options)."""
    best = result.best
    table = Table(title="the winner against the best single unroll factor at each T", title_justify="left")
    for col in ("T", "winner's paths", "winner µs", "best single factor", "its µs", "winner / single"):
        table.add_column(col, justify="left" if "paths" in col or "factor" in col else "right")
    for T in result.weights:
        single = result.best_single(T)
        paths = describe_paths(T, result.space.unroll(best.config)).split(": ", 1)[1]
        if single is None:
            add_literal_row(table, str(T), paths, f"{best.us[T]:.2f}", "—", "—", "—")
            continue
        add_literal_row(table, str(T), paths, f"{best.us[T]:.2f}", unroll_text(result.space.unroll(single.config)),
                        f"{single.us[T]:.2f}", f"x{best.us[T] / single.us[T]:.2f}")
    out.print(table)


def _json(result: TuneResult) -> dict[str, Any]:
    def point(p: Point) -> dict[str, Any]:
        return {"configuration": result.space.describe(p.config), "command": result.space.request(p.config).command(),
                "name": p.name, "us": {str(T): v for T, v in p.us.items()}, "weighted_us": p.score,
                "speedup": result.speedup(p) if p.score else None, "bound": {str(T): b for T, b in p.bound.items()}}
    best_req = result.space.request(result.best.config)
    return {
        "request": result.space.base.command(),
        "weights": {str(T): w for T, w in result.weights.items()},
        "strategy": result.strategy,
        "space": {a.name: list(a.labels) for a in result.space.axes},
        "space_size": result.space.size(),
        "seconds": round(result.seconds, 2),
        "best": {**point(result.best), "unroll": best_req.params.get("unroll"), "tiles": best_req.tiles, "options": best_req.options},
        "default": point(result.default),
        "ranked": [point(p) for p in result.ranked],
        "pruned": [{"configuration": result.space.describe(p.config), "refused": p.refused, "lower_bound_us": p.lower} for p in result.pruned],
        "golden_checked": result.checked,
        "best_single": {str(T): ({"unroll": list(result.space.unroll(s.config)), "us": s.us[T]} if (s := result.best_single(T)) else None)
                        for T in result.weights},
    }


@main.command("tune")
@click.argument("instance", required=False)
@request_options(skeleton_required=False, fixed=" (kept as given: not tuned)")
@click.option("--T", "T_list", default=None, help=f"Token counts, equally weighted (default {','.join(map(str, DEFAULT_TS))}).")
@click.option("--T-dist", "T_dist", type=FsPath(dir_okay=False), default=None, help="YAML file: {T: weight} or a list of observed Ts.")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="coordinate", show_default=True, help="coordinate: unroll sweep, then one axis at a time; exhaustive: every configuration.")
@click.option("--beam", type=click.IntRange(1, 8), default=2, show_default=True, help="Coordinate search: how many of the best unrolls to refine.")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Worker processes (default: the CPU count).")
@click.option("--top", type=click.IntRange(1, 1000), default=10, show_default=True, help="Rows of the ranked table.")
@click.option("--check", type=click.IntRange(0, 20), default=1, show_default=True, help="How many of the best configurations run their golden test.")
@click.option("--apply", "apply_", is_flag=True, help="Write the winner's unroll, tiles and options into the manifest entry (added if missing).")
@click.option("--manifest", default=None, type=FsPath(dir_okay=False), help="The manifest --apply edits (default: the project's).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the ranking and the winner).")
@click.option("--quiet", "-q", is_flag=True, help="Print the winner's command line only.")
@click.pass_context
@handle_errors
def tune_cmd(ctx: click.Context, instance: str | None, skeleton: str | None, atoms: str, params: tuple[str, ...], dims: tuple[str, ...],
             platform: str | None, options: tuple[str, ...], tiles: tuple[str, ...], model: str | None, T_list: str | None, T_dist: str | None,
             strategy: str, beam: int, jobs: int | None, top: int, check: int, apply_: bool, manifest: str | None,
             as_json: bool, quiet: bool) -> None:
    """Estimate the unroll lists the card's candidates make, tile alternatives and options with the cost model
    over a T distribution, rank them, check the winner against its golden (and --apply it)."""
    if T_list is not None and T_dist is not None:
        raise PatternGenError(Problem("bad-option", "give --T or --T-dist, not both"))
    weights = load_T_dist(Path(T_dist)) if T_dist else parse_T_list(T_list if T_list is not None else ",".join(map(str, DEFAULT_TS)))
    cat = catalogue(ctx)
    flags = {"atoms": atoms, "params": params, "dims": dims, "platform": platform, "options": options, "target": None, "tiles": tiles,
             "model": model, "quiet": as_json or quiet}
    base = _base_request(instance, skeleton, flags)
    path = manifest_path(ctx, manifest) if apply_ else None
    if path is not None:
        check_target(path)  # a manifest --apply cannot edit fails now, not after the sweep
    show = not (as_json or quiet) and err.is_terminal
    with Progress(TextColumn("tune"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True, disable=not show) as bar:
        task = bar.add_task("runs", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=max(total, done))

        result = tune(cat, base, weights, strategy=strategy, beam=beam, jobs=jobs, check=check, progress=progress)
    applied = apply_to_manifest(cat, path, base, result.space.request(result.best.config)) if path is not None else None
    if as_json:
        data = _json(result)
        if applied is not None:
            data["applied"] = {"manifest": str(applied.path), "line": applied.line, "created": applied.created, "changed": applied.changed}
        click.echo(strict_json(data))
    elif quiet:
        out.print(literal(result.space.request(result.best.config).command()), soft_wrap=True)
    else:
        _print(result, top)
        if applied is not None:
            what = "added a new entry" if applied.created else ("updated the entry" if applied.changed else "the entry already has the winner")
            out.print(literal(f"--apply: {what} at {applied.path}:{applied.line}" + ("; run `pattern-gen generate` to regenerate" if applied.changed else "")))
    if any(not ok for ok in result.checked.values()):
        sys.exit(1)
