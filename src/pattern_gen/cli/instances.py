"""The instance commands: ``new`` (compose and write one kernel), ``run`` and ``explain``."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..plan.test_points import test_values
from ..output.instances import (
    RunResult,
    rules_lines,
    read_instance,
    render_plan,
    run_instance,
    write_instance,
)
from ..output.pypto_run import ptosim_twin_estimate, run_pypto_instance
from ..plan.kernel_plan import KernelPlan, Request
from ..plan.naming import explain as explain_name
from ..plan.unroll import unroll_text
from ..plan.resolver import resolve
from ..vocab.errors import PatternGenError, Problem
from ..vocab.targets import DEFAULT_TARGET, TARGETS
from ..vocab.text import plain, utilisation
from .app import main
from .request_flags import request_from_flags, request_options
from .locate import find_instance
from .paths import FsPath
from .common import (
    add_literal_row,
    catalogue,
    default_generated,
    err,
    handle_errors,
    literal,
    mark_written,
    out,
    project,
    strict_json,
)

__all__ = ["new_cmd", "run_cmd", "explain_cmd"]


def _check_out(out_dir: str) -> Path:
    """``--out`` is any folder (the instance name is one path component, so nothing escapes it),
    but never generate's own folder."""
    target = (Path.cwd() / Path(out_dir).expanduser()).resolve()
    if target.exists() and not target.is_dir():
        raise PatternGenError(Problem("bad-path", f"--out {out_dir!r} is a file; give a folder"))
    gen = default_generated().resolve()
    if target == gen or gen in target.parents:
        raise PatternGenError(Problem("bad-path", f"--out {out_dir!r} is inside {gen}, which `pattern-gen generate` owns; use ./kernels or another folder"))
    return target


def _print_plan(plan: KernelPlan) -> None:
    out.print(literal(plan.name, "bold"))
    requested = "+".join(plan.atoms_requested)
    out.print(literal(f"{plan.skeleton} {plan.skeleton_title} · slot {plan.slot} = {plan.atom} (asked: {requested}) · {plan.platform} · unroll_list {unroll_text(plan.unroll)}"))
    out.print(literal("dims: " + ", ".join(f"{k}={v}" for k, v in plan.dims.items())))
    for note in plan.plan_notes:
        out.print(f"  • {escape(note)}", soft_wrap=True)
    params = Table(title="Parameters", title_justify="left")
    for col in ("parameter", "value", "default"):
        params.add_column(col)
    for k, v in plan.params.items():
        style = "bold" if v != plan.param_defaults.get(k) else ""
        add_literal_row(params, k, plain(v), plain(plan.param_defaults.get(k)), style=style)
    for stage, ps in plan.stage_params.items():
        for k, v in ps.items():
            add_literal_row(params, f"{stage}.{k}", plain(v), "", style="bold")
    out.print(params)
    stages = Table(title="Stages", title_justify="left")
    for col in ("stage", "unit", "card", "tile", "ops", "fitting"):
        stages.add_column(col, overflow="fold")
    for s in plan.all_stages:
        label = s.label + (" (before loop)" if s.hoist else "")
        add_literal_row(stages, label, s.unit, s.card, s.tile_text(), str(len(s.stage.ops)), "; ".join(s.fit_notes))
    out.print(stages)
    opts = Table(title="Options", title_justify="left")
    for col in ("option", "value", "level"):
        opts.add_column(col, overflow="fold")
    for k, v, level in plan.option_rows():
        add_literal_row(opts, k, plain(v), level)
    out.print(opts)
    for item in plan.left_out:
        out.print(literal(f"  left out: {item}", "dim"))


def _print_run(result: RunResult) -> None:
    for text in result.warnings:
        err.print(literal(f"warning: {text} (outputs computed through an overflow or a NaN can agree for the wrong reason)", "yellow"), soft_wrap=True)
    table = Table(title=f"{result.name} — T={result.T}, seed={result.seed}", title_justify="left")
    for col in ("output", "result", "wrong / allowed", "max |err|", "rows over their allowance", "judged against"):
        table.add_column(col, overflow="fold")
    for name, o in result.outputs.items():
        rows = o.get("bad_rows") or []
        shown = ", ".join(f"row {r['row']}: {r['wrong']} (allowed {r['allowed']})" for r in rows[:3]) + (f", {len(rows) - 3} more" if len(rows) > 3 else "")
        table.add_row(
            literal(name),
            Text("pass", "green") if o["passed"] else Text("FAIL", "red"),
            (f"{o['wrong']} / {o['allowed']} of {o['numel']}" + (f" (+{o['ties']} at a tie)" if o.get("ties") else "")) if not o.get("reason") else literal(o["reason"]),
            f"{o['max_abs_error']:.3g}",
            f"{len(rows)}: {shown}" if rows else "none",
            literal("golden from the kernel's " + ", ".join(o["given"])) if o.get("given") else "golden",
        )
    out.print(table)
    if any(o.get("ties") for o in result.outputs.values()):
        out.print(literal("  at a tie: outside atol/rtol only because an INT8 code upstream lay on a rounding boundary and rounded "
                          "the other way (the card's tie rule, AT-05's numerics); each such output moved no further than that allows"))
    if result.error:
        err.print(f"[red]{escape(result.error)}[/red]", markup=True)
    if result.estimate:
        e = result.estimate
        out.print(f"estimate ({e.get('platform', '')}): {e['e2e_us']:.2f} µs end to end, {e['tasks']} tasks; utilisation {utilisation(e, 0)}")
        if e.get("interpretation"):
            out.print(literal(e["interpretation"]))
        per = e.get("per_label_us") or {}
        if per:
            out.print("  task time per label (summed over tasks): " + ", ".join(f"{k} {v:.2f} µs" for k, v in per.items()))
        paths = {k: v for k, v in (e.get("per_path_us") or {}).items() if k != "outside"}
        if len(paths) > 1:  # one path says nothing the total does not
            out.print("  task time per unroll path: " + ", ".join(f"{k} {v:.2f} µs" for k, v in paths.items()))
        phases = e.get("per_phase_us") or {}
        if phases:
            out.print("  task time per phase: " + ", ".join(f"{k} {v:.2f} µs" for k, v in phases.items()))


@main.command("new")
@request_options(skeleton_required=True)
@click.option("--target", default=None, help=f"Code-generation target: {', '.join(TARGETS)} (default {DEFAULT_TARGET}).")
@click.option("--out", "out_dir", type=FsPath(), default=None, help="Folder for the instance folder (default: the project's kernels/, else ./kernels).")
@click.option("--name", default=None, help="Instance folder name (default: derived from the plan).")
@click.option("--dry-run", is_flag=True, help="Print the plan and the paths; write nothing.")
@click.option("--force", is_flag=True, help="Overwrite generated files even if they were edited by hand.")
@click.option("--run", "run_after", is_flag=True, help="Run the kernel against its golden in-process and print the estimate.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the instance folder and, with --run, one line per T.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: the plan, the files and, with --run, the results.")
@click.pass_context
@handle_errors
def new_cmd(
    ctx: click.Context,
    skeleton: str,
    atoms: str,
    params: tuple[str, ...],
    dims: tuple[str, ...],
    platform: str | None,
    options: tuple[str, ...],
    tiles: tuple[str, ...],
    model: str | None,
    target: str | None,
    out_dir: str | None,
    name: str | None,
    dry_run: bool,
    force: bool,
    run_after: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Compose a skeleton with atoms and write a kernel, its golden and its test."""
    cat = catalogue(ctx)
    settings = project()
    req = request_from_flags(skeleton, atoms, params, dims, platform if platform is not None else settings.platform, options, name, target or settings.target, tiles,
                             model=model, quiet=quiet or as_json)
    out_root = _check_out(out_dir if out_dir is not None else str(settings.kernels))
    if dry_run:
        plan = resolve(cat, req)
        files = render_plan(cat, plan)
        paths = [out_root / plan.name / rel for rel in sorted(files)]
        if as_json:
            click.echo(json.dumps({"name": plan.name, "folder": str(out_root / plan.name), "dry_run": True, "would_write": [str(p) for p in paths]}, indent=2))
            return
        if not quiet:
            _print_plan(plan)
        for path in paths:
            out.print(f"would write {path}", soft_wrap=True)
        return
    plan, folder, report = write_instance(cat, req, out_root, force=force)
    mark_written()
    if not (quiet or as_json):
        _print_plan(plan)
        for p in report.written:
            out.print(f"wrote {p}", soft_wrap=True)
        for p in report.unchanged:
            out.print(f"unchanged {p}", style="dim", soft_wrap=True)
    elif quiet:
        out.print(str(folder), soft_wrap=True)
    results = []
    if run_after:
        for i, T in enumerate(test_values(plan.unroll)):
            result = run_instance(folder, T=T, estimate=i == 0)  # the estimate is printed for the first T only
            results.append(result)
            if as_json:
                continue
            if (i == 0 and not quiet) or not result.passed:
                _print_run(result)
            else:
                out.print(f"T={T}: " + ("[green]pass[/green]" if result.passed else "[red]FAIL[/red]"), markup=True)
    if as_json:
        click.echo(strict_json(
            {
                "name": plan.name,
                "folder": str(folder),
                "written": [str(p) for p in report.written],
                "unchanged": [str(p) for p in report.unchanged],
                "plan": read_instance(folder),
                "runs": [r.as_dict() for r in results],
            }
        ))
    if any(not r.passed for r in results):
        sys.exit(1)


@main.command("run")
@click.argument("instance")
@click.option("--T", "T", type=int, default=None, help="Token count (default: the test's first T).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--profile",
    type=FsPath(dir_okay=False),
    default=None,
    is_flag=False,
    flag_value="",
    help="Write the simulated timeline (Chrome Trace Event JSON); alone: build/traces/<instance>-T<T>.json.",
)
@click.option("--target", default=None, help="The instance's target, to check it: ptosim or pypto (read from instance.json).")
@click.option("--verify", is_flag=True, help="pypto target: run PyPTO's CPU verifier and compare with the golden (else: its SIM cost model).")
@click.option("--rules", is_flag=True, help="Also list the cost rules (PyPTO behaviours, ptosim.cost.rules) the estimate applied.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def run_cmd(ctx: click.Context, instance: str, T: int | None, seed: int, profile: str | None, target: str | None, verify: bool, rules: bool, as_json: bool) -> None:
    """Run an instance (a folder, or a name under kernels/ or generated/) on random inputs against
    its golden and print the cost estimate; a pypto-target instance runs on the installed PyPTO."""
    folder = find_instance(instance)
    meta = read_instance(folder)
    actual = meta.get("target") or DEFAULT_TARGET
    if target is not None and target != actual:
        raise PatternGenError(Problem("instance", f"{folder.name} is a {actual} instance, not {target}: generate it with --target {target}", str(folder)))
    if actual == "pypto":
        _run_pypto(ctx, folder, T, seed, verify, as_json)
        return
    if verify:
        raise PatternGenError(Problem("instance", "--verify runs PyPTO's verifier: it needs a pypto-target instance (pattern-gen new … --target pypto)"))
    if profile == "":  # --profile alone: a place no repository tracks
        t_label = T if T is not None else (meta.get("test_T") or ["default"])[0]
        trace = (project().root or Path.cwd()) / "build" / "traces" / f"{folder.name}-T{t_label}.json"
        try:
            trace.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PatternGenError(Problem("bad-path", f"--profile: cannot create {trace.parent}: {exc.strerror or exc}; name a file with --profile FILE")) from None
        profile = str(trace)
    result = run_instance(folder, T=T, seed=seed, profile=profile)
    if as_json:
        click.echo(strict_json({**result.as_dict(), **({"rules_fired": list(result.rules)} if rules else {})}))
    else:
        _print_run(result)
        for line in rules_lines(result.rules) if rules else ():
            out.print(literal(line), soft_wrap=True)
        if profile:
            out.print(f"timeline written to {profile} (open it in https://ui.perfetto.dev or chrome://tracing)", soft_wrap=True)
    if not result.passed:
        sys.exit(1)


#: what PyPTO 0.2.0's CPU verifier took here (2 cores), for the expectation line
VERIFY_MEASURED = (
    "measured on 2 cores at T=3: 23-33 s for SK-03/SK-04 at small dims and SK-03 at K=4096 N=1536, "
    "about 12 min for SK-04 at the DeepSeek-V4 dims"
)


def _run_pypto(ctx: click.Context, folder: Path, T: int | None, seed: int, verify: bool, as_json: bool) -> None:
    if verify and not as_json:
        err.print(literal(f"PyPTO's CPU verifier computes every tile op in Python ({VERIFY_MEASURED})"), soft_wrap=True)
        started = time.monotonic()
        with err.status("") as status:
            stop = threading.Event()

            def tick() -> None:
                while not stop.wait(1.0):
                    status.update(literal(f"verifying on PyPTO's CPU verifier: {time.monotonic() - started:.0f} s"))

            ticker = threading.Thread(target=tick, daemon=True)
            ticker.start()
            try:
                done = run_pypto_instance(folder, T=T, seed=seed, verify=verify)
            finally:
                stop.set()
        err.print(literal(f"verified in {time.monotonic() - started:.0f} s"))
    else:
        done = run_pypto_instance(folder, T=T, seed=seed, verify=verify)
    result = done.result
    if not verify:
        twin = ptosim_twin_estimate(catalogue(ctx), folder, result.T, seed)
        result.estimate = {"pypto": done.pypto, "ptosim": twin}
    if as_json:
        click.echo(strict_json(result.as_dict()))
    elif verify:
        _print_run(result)
    else:
        p, s = done.pypto or {}, (result.estimate or {}).get("ptosim") or {}
        out.print(literal(f"{result.name} — T={result.T}: compiled and simulated on PyPTO"))
        if p and s:
            out.print(literal(f"PyPTO SIM: {p['e2e_us']:.2f} µs end to end, {p['tasks']} tasks · ptosim: {s['e2e_us']:.2f} µs, {s['tasks']} tasks · PyPTO/ptosim {p['e2e_us'] / s['e2e_us']:.2f}"))
        elif p:
            out.print(literal(f"PyPTO SIM: {p['e2e_us']:.2f} µs end to end, {p['tasks']} tasks"))
        else:
            out.print(literal("PyPTO wrote no swimlane: no estimate"))
    if not result.passed:
        sys.exit(1)


def _check_buildable(cat: Any, name: str, decoded: dict[str, Any]) -> None:
    """A name that decodes but names a combination ``new`` refuses (eps=0, mxfp8 on a2a3) is no
    instance name: say why, as ``new`` would."""
    params = dict(decoded["params"])
    if "unroll" in decoded:
        params["unroll"] = decoded["unroll"]
    req = Request(
        skeleton=decoded["skeleton"],
        atoms=(decoded["atom"],),
        params=params,
        stage_params=decoded["stage_params"],
        dims=decoded["dims"],
        platform=decoded.get("platform"),
        options={},
        name=None,
        target=decoded.get("target"),
    )
    try:
        resolve(cat, req)
    except PatternGenError as exc:
        reasons = "; ".join(p.message for p in exc.problems)
        raise PatternGenError(Problem("bad-name", f"{name!r} decodes, but pattern-gen new refuses that combination: {reasons}")) from None


def _named_instance(name: str) -> dict[str, Any] | None:
    """A ``--name``d instance cannot be decoded from its name: read its instance.json instead."""
    try:
        folder = find_instance(name.strip().rstrip("/"))
    except PatternGenError:
        return None
    meta = read_instance(folder)
    return {
        "skeleton": meta.get("skeleton"),
        "atom": (meta.get("atoms") or {}).get("resolved"),
        "params": dict(meta.get("params") or {}),
        "dims": dict(meta.get("dims") or {}),
        "stage_params": dict(meta.get("stage_params") or {}),
        "unroll": meta.get("unroll"),
        "platform": meta.get("platform"),
        **({"target": meta["target"]} if meta.get("target") else {}),
        "from": str(folder / "instance.json"),
    }


@main.command("explain")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def explain_cmd(ctx: click.Context, name: str, as_json: bool) -> None:
    """Decode an instance name into its skeleton, atom, parameters, dims and stage settings."""
    cat = catalogue(ctx)
    decoded = _named_instance(name)
    if decoded is None:
        decoded = explain_name(cat, name.strip().rstrip("/").split("/")[-1])
        _check_buildable(cat, name, decoded)
    if as_json:
        click.echo(json.dumps(decoded, indent=2, default=str))
        return
    out.print(literal(name, "bold"))
    out.print(literal(f"skeleton {decoded['skeleton']} ({cat.cards[decoded['skeleton']].title}), atom {decoded['atom']} ({cat.cards[decoded['atom']].title})"))
    table = Table(show_header=True)
    table.add_column("axis")
    table.add_column("value")
    for k, v in decoded["params"].items():
        add_literal_row(table, k, plain(v))
    for k in ("unroll", "platform", "target"):
        if k in decoded:
            add_literal_row(table, k, plain(decoded[k]))
    for k, v in decoded["dims"].items():
        add_literal_row(table, f"dim {k}", str(v))
    for stage, ps in decoded["stage_params"].items():
        for k, v in ps.items():
            add_literal_row(table, f"{stage}.{k}", plain(v))
    out.print(table)
