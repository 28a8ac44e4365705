"""The ``pattern-gen`` command line (click). Thin: parse, call the library, print.

Exit codes: 0 ok, 1 a check failed (drift, a failing kernel), 2 bad input. Bad input prints one
line per problem (``file:line:col: message [code]``) and never a traceback.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__
from .catalogue import Catalogue, load_catalogue
from .checks import check_catalogue
from .describe import card_detail, card_summary, pseudo_code
from .errors import PatternGenError, Problem

__all__ = ["main"]

out = Console(highlight=False, soft_wrap=False)
err = Console(stderr=True, highlight=False)


_WRITING_COMMANDS = {"new", "generate", "build", "serve"}


def _fail(problems: list[Problem]) -> None:
    for p in problems:
        err.print(f"[red]error[/red]: {escape(str(p))}", markup=True, highlight=False, soft_wrap=True)
    n = len(problems)
    ctx = click.get_current_context(silent=True)
    wrote = " nothing was written." if ctx is not None and ctx.info_name in _WRITING_COMMANDS else ""
    err.print(f"{n} problem{'s' if n != 1 else ''};{wrote}" if wrote else f"{n} problem{'s' if n != 1 else ''}.", style="dim")


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn PatternGenError into printed problems and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PatternGenError as exc:
            _fail(exc.problems)
            sys.exit(2)

    return wrapper


def _catalogue(ctx: click.Context) -> Catalogue:
    obj = ctx.find_root().obj
    if "catalogue" not in obj:
        obj["catalogue"] = load_catalogue(obj["catalogue_dirs"])
    return obj["catalogue"]


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--catalogue",
    "catalogue_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Add a folder of your own cards (also PATTERN_GEN_CATALOGUE, os.pathsep-separated).",
)
@click.version_option(__version__, prog_name="pattern-gen")
@click.pass_context
def main(ctx: click.Context, catalogue_dirs: tuple[str, ...]) -> None:
    """pattern-gen: PyPTO pattern cards -> validated kernels, golden tests and docs."""
    ctx.ensure_object(dict)
    ctx.obj["catalogue_dirs"] = list(catalogue_dirs)


# --- list / show -------------------------------------------------------------------------------


@main.command("list")
@click.option("--kind", type=click.Choice(["atom", "skeleton"]), help="Only atoms or only skeletons.")
@click.option("--tag", help="Only cards with this tag.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
@handle_errors
def list_cmd(ctx: click.Context, kind: str | None, tag: str | None, as_json: bool) -> None:
    """List the cards of the catalogue."""
    cat = _catalogue(ctx)
    cards = [c for c in cat.sorted_cards() if (kind is None or c.kind == kind) and (tag is None or tag in c.tags)]
    if tag is not None and not cards:
        tags = sorted({t for c in cat.cards.values() for t in c.tags})
        from .errors import did_you_mean

        raise PatternGenError(Problem("unknown-card", f"no card has the tag {tag!r}; tags: {', '.join(tags)}" + did_you_mean(tag, tags)))
    rows = [card_summary(cat, c) for c in cards]
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    table = Table(title=f"pattern-gen catalogue — {len(rows)} cards", title_justify="left")
    for col in ("ID", "kind", "title", "tags", "flow", "parameters", "examples"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            r["id"],
            r["kind"],
            r["title"],
            ", ".join(r["tags"]),
            " ".join(r["flow"]),
            ", ".join(r["params"]),
            ", ".join(r["examples"]),
        )
    out.print(table)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        return ", ".join(_fmt(x) for x in v)
    return str(v)


@main.command("show")
@click.argument("card_id")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
@handle_errors
def show_cmd(ctx: click.Context, card_id: str, as_json: bool) -> None:
    """Show one card: parameters, flow, IO, dependencies, constraints, performance table."""
    cat = _catalogue(ctx)
    card = cat.card(card_id.upper())
    detail = card_detail(cat, card)
    if card.kind == "atom":
        detail["flow_code"] = pseudo_code(cat, card)
    if as_json:
        click.echo(json.dumps(detail, indent=2, default=str))
        return
    out.print(f"[bold]{card.id}[/bold] {card.title}  [dim]({card.kind}; {', '.join(card.tags)})[/dim]")
    out.print(card.summary.strip())
    out.print(f"flow: {' -> '.join(card.flow)}   upstream: {' -> '.join(card.upstream_flow)}")
    out.print(f"file: {detail['file']}", style="dim")
    params = Table(title="Parameters", title_justify="left")
    for col in ("name", "type", "choices", "default", "from", "meaning"):
        params.add_column(col, overflow="fold")
    for r in detail["parameters"]:
        choices = _fmt(r["choices"]) if r["choices"] else ", ".join(f"{k} {v}" for k, v in r["bounds"].items())
        params.add_row(r["name"], r["type"], choices, _fmt(r["default"]), r["from"], r["doc"])
    out.print(params)
    for group in ("inputs", "outputs"):
        t = Table(title=group.capitalize(), title_justify="left")
        for col in ("name", "shape", "dtype", "role", "when"):
            t.add_column(col, overflow="fold")
        for r in detail[group]:
            t.add_row(r["name"], "[" + ", ".join(r["shape"]) + "]", _fmt(r["dtype"]), r["role"], r["when"] or "")
        out.print(t)
    if card.kind == "atom":
        out.print("[bold]Compute flow[/bold] (default parameters)")
        for s in detail["flow_code"]:
            out.print(f"  [{s['unit']}] {s['label']}{'  (hoisted before the loop)' if s['hoist'] else ''}")
            for line in s["lines"]:
                out.print(f"      {line}", markup=False)
    else:
        slot = detail["slot"]
        out.print(f"[bold]Slot[/bold] {slot['name']}: accepts {', '.join(slot['accepts'])} (default {slot['default']})")
        for f in detail["fixed_stages"]:
            out.print(f"  fixed stage {f['as']}: {f['card']} {f['params'] or ''}")
        out.print("dims: " + ", ".join(f"{k}={v['default']}" for k, v in detail["dims"].items()))
        out.print(f"loop: {card.loop.kind} {card.loop.name} unroll candidates {card.loop.candidates}")
        for item in detail["left_out"]:
            out.print(f"  left out: {item}", style="dim")
    out.print(f"depends on: {', '.join(detail['depends_on']) or '—'}   used by: {', '.join(detail['used_by']) or '—'}")
    for u in detail["upgrades"]:
        out.print(f"upgrade: when {u['when']} -> {u['to']}: {u['reason']}")
    for r in detail["refuse"]:
        out.print(f"refused: when {r['when']}: {r['reason']}")
    if detail["constraints"]:
        t = Table(title="Constraints", title_justify="left")
        for col in ("id", "level", "rule"):
            t.add_column(col, overflow="fold")
        for c in detail["constraints"]:
            t.add_row(c["id"], c["level"], c["rule"])
        out.print(t)
    perf = detail["performance"]
    if perf["options"] or perf["tiles"]:
        t = Table(title="Performance", title_justify="left")
        for col in ("knob", "value", "level", "why"):
            t.add_column(col, overflow="fold")
        for r in perf["options"]:
            t.add_row(f"{r['group']}.{r['key']}", _fmt(r["value"]), r["level"], r["why"] + (f" (when {r['when']})" if r["when"] else ""))
        for r in perf["tiles"]:
            t.add_row(f"tile {r['stage']}", r["tile"], "", r["why"])
        out.print(t)


# --- validate / schema --------------------------------------------------------------------------


@main.command("validate")
@click.argument("paths", nargs=-1, type=click.Path())
@click.pass_context
@handle_errors
def validate_cmd(ctx: click.Context, paths: tuple[str, ...]) -> None:
    """Validate the catalogue, a catalogue folder, or card files (in the context of the catalogue)."""
    folders = [Path(p) for p in paths if Path(p).is_dir()]
    files = [Path(p) for p in paths if Path(p).is_file()]
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise PatternGenError([Problem("bad-path", f"no such file or folder: {p}") for p in missing])
    base = folders[0] if folders else None
    extra = ctx.find_root().obj["catalogue_dirs"] + [str(f) for f in folders[1:]]
    cat = load_catalogue(extra, files=files, base=base)
    problems = check_catalogue(cat)
    if problems:
        raise PatternGenError(problems)
    n_atoms, n_sk = len(cat.atoms()), len(cat.skeletons())
    out.print(f"[green]ok[/green]: {n_atoms} atoms, {n_sk} skeletons, {len(cat.constraints)} constraints, platforms {', '.join(sorted(cat.platforms))}")


@main.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of card files (for editors: yaml-language-server, VS Code)."""
    from .loader import card_adapter

    schema = card_adapter.json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pattern-gen card"
    click.echo(json.dumps(schema, indent=2, sort_keys=True))




# --- new / generate / run / explain ---------------------------------------------------------------

from .instances import RunResult, render_plan, run_instance, write_instance  # noqa: E402
from .manifest import load_manifest, split_params, to_request  # noqa: E402
from .naming import explain as explain_name  # noqa: E402
from .options_plan import parse_option_arg  # noqa: E402
from .plan import KernelPlan, Request  # noqa: E402
from .resources import repo_root  # noqa: E402


def _pairs(values: tuple[str, ...], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    problems = []
    for text in values:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            problems.append(Problem("bad-param-value", f"{flag} {text!r}: expected NAME=VALUE"))
            continue
        out[key.strip()] = value.strip()
    if problems:
        raise PatternGenError(problems)
    return out


def _default_generated() -> Path:
    root = repo_root()
    return (root / "generated") if root is not None else Path("generated")


def _check_out(out_dir: str) -> Path:
    """``--out`` must stay inside the working directory and never be generate's own folder."""
    cwd = Path.cwd().resolve()
    target = (cwd / out_dir).resolve()
    if target != cwd and cwd not in target.parents:
        raise PatternGenError(
            Problem("bad-path", f"--out {out_dir!r} resolves to {target}, outside the working directory {cwd}; use a folder inside it")
        )
    if target.exists() and not target.is_dir():
        raise PatternGenError(Problem("bad-path", f"--out {out_dir!r} is a file; give a folder"))
    gen = _default_generated().resolve()
    if target == gen or gen in target.parents:
        raise PatternGenError(Problem("bad-path", f"--out {out_dir!r} is inside {gen}, which `pattern-gen generate` owns; use ./kernels or another folder"))
    return target


def _print_plan(plan: KernelPlan) -> None:
    out.print(f"[bold]{plan.name}[/bold]")
    requested = "+".join(plan.atoms_requested)
    out.print(f"{plan.skeleton} {plan.skeleton_title} · slot {plan.slot} = {plan.atom} (asked: {requested}) · {plan.platform} · unroll {plan.unroll}")
    out.print("dims: " + ", ".join(f"{k}={v}" for k, v in plan.dims.items()))
    for note in plan.notes:
        if not note.startswith(tuple(s.label + ":" for s in plan.all_stages)):
            out.print(f"  • {escape(note)}", soft_wrap=True)
    params = Table(title="Parameters", title_justify="left")
    for col in ("parameter", "value", "default"):
        params.add_column(col)
    for k, v in plan.params.items():
        style = "bold" if v != plan.param_defaults.get(k) else ""
        params.add_row(k, _fmt(v), _fmt(plan.param_defaults.get(k)), style=style)
    for stage, ps in plan.stage_params.items():
        for k, v in ps.items():
            params.add_row(f"{stage}.{k}", _fmt(v), "", style="bold")
    out.print(params)
    stages = Table(title="Stages", title_justify="left")
    for col in ("stage", "unit", "card", "tile", "ops", "fitting"):
        stages.add_column(col, overflow="fold")
    for s in plan.all_stages:
        if s.vec_tile is not None:
            tile = f"vec {s.vec_tile}"
        elif s.cube_tile is not None:
            tile = f"cube m={s.cube_tile['m']} k={s.cube_tile['k']} n={s.cube_tile['n']}"
        else:
            tile = ""
        label = s.label + (" (before loop)" if s.hoist else "")
        stages.add_row(label, s.unit, s.card, tile, str(len(s.stage.ops)), "; ".join(s.fit_notes))
    out.print(stages)
    opts = Table(title="Options", title_justify="left")
    for col in ("option", "value", "level"):
        opts.add_column(col, overflow="fold")
    for group in (plan.runtime_options, plan.pass_options, plan.operation_options):
        for k, v in group.items():
            opts.add_row(k, _fmt(v) if not isinstance(v, dict) else str(v), plan.option_levels.get(k, ""))
    for name, policy in plan.cache_policy.items():
        opts.add_row(f"{name}.set_cache_policy", policy, "")
    out.print(opts)
    for item in plan.left_out:
        out.print(f"  left out: {item}", style="dim")


def _print_run(result: RunResult) -> None:
    table = Table(title=f"{result.name} — T={result.T}, seed={result.seed}", title_justify="left")
    for col in ("output", "result", "wrong / allowed", "max |err|", "bad rows"):
        table.add_column(col, overflow="fold")
    for name, o in result.outputs.items():
        table.add_row(
            name,
            "[green]pass[/green]" if o["passed"] else "[red]FAIL[/red]",
            f"{o['wrong']} / {o['allowed']} of {o['numel']}",
            f"{o['max_abs_error']:.3g}",
            ", ".join(map(str, o["bad_rows"])) or "",
        )
    out.print(table)
    if result.error:
        err.print(f"[red]{escape(result.error)}[/red]")
    if result.estimate:
        e = result.estimate
        util = ", ".join(f"{k} {v:.0%}" for k, v in e.get("utilization", {}).items())
        out.print(f"estimate ({e.get('platform', '')}): {e['e2e_us']:.2f} µs end to end, {e['tasks']} tasks; utilisation {util}")
        per = e.get("per_label_us") or {}
        if per:
            out.print("  task time per label (summed over tasks): " + ", ".join(f"{k} {v:.2f} µs" for k, v in per.items()))


def _request(skeleton: str, atoms: str, params: tuple[str, ...], dims: tuple[str, ...], platform: str | None, options: tuple[str, ...], name: str | None) -> Request:
    bare, staged = split_params(_pairs(params, "--param"))
    opts = dict(parse_option_arg(o) for o in options)
    return Request(
        skeleton=skeleton,
        atoms=tuple(a for a in atoms.split(",") if a.strip()),
        params=bare,
        stage_params=staged,
        dims=_pairs(dims, "--dim"),  # type: ignore[arg-type]
        platform=platform,
        options=opts,
        name=name,
    )


@main.command("new")
@click.option("--skeleton", required=True, help="Skeleton card id, e.g. SK-04.")
@click.option("--atoms", required=True, help="Atom(s) for the skeleton's slot: AT-10, AT-11 or AT-03,AT-09.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Slot parameter, or STAGE.param=value for a fixed stage.")
@click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE", help="Model dim, e.g. K=1024.")
@click.option("--platform", default=None, help="Platform profile (default a2a3).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE", help="Runtime/pass/operation option (YAML value).")
@click.option("--out", "out_dir", default="kernels", show_default=True, help="Folder for the instance folder.")
@click.option("--name", default=None, help="Instance folder name (default: derived from the plan).")
@click.option("--dry-run", is_flag=True, help="Print the plan and the paths; write nothing.")
@click.option("--force", is_flag=True, help="Overwrite generated files even if they were edited by hand.")
@click.option("--run", "run_after", is_flag=True, help="Run the kernel against its golden in-process and print the estimate.")
@click.pass_context
@handle_errors
def new_cmd(ctx, skeleton, atoms, params, dims, platform, options, out_dir, name, dry_run, force, run_after) -> None:  # noqa: ANN001
    """Compose a skeleton with atoms and write a kernel, its golden and its test."""
    cat = _catalogue(ctx)
    req = _request(skeleton, atoms, params, dims, platform, options, name)
    target = _check_out(out_dir)
    if dry_run:
        from .resolver import resolve

        plan = resolve(cat, req)
        _print_plan(plan)
        files = render_plan(cat, plan)
        for rel in sorted(files):
            out.print(f"would write {target / plan.name / rel}", soft_wrap=True)
        return
    plan, folder, report = write_instance(cat, req, target, force=force)
    _print_plan(plan)
    for p in report.written:
        out.print(f"wrote {p}", soft_wrap=True)
    for p in report.unchanged:
        out.print(f"unchanged {p}", style="dim", soft_wrap=True)
    if run_after:
        from .codegen import test_values

        failed = False
        for i, T in enumerate(test_values(plan.unroll)):
            result = run_instance(folder, T=T, estimate=i == 0)  # the estimate is printed for the first T only
            if i == 0 or not result.passed:
                _print_run(result)
            else:
                out.print(f"T={T}: " + ("[green]pass[/green]" if result.passed else "[red]FAIL[/red]"))
            failed = failed or not result.passed
        if failed:
            sys.exit(1)


def _check_refusals(cat: Catalogue, manifest) -> list[str]:  # noqa: ANN001
    from .resolver import resolve

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


def _is_generated(path: Path) -> bool:
    """A file pattern-gen wrote and nobody edited since (its content hash holds)."""
    from .writer import content_ok

    try:
        return path.is_file() and content_ok(path.name, path.read_text(encoding="utf-8")) is True
    except (OSError, UnicodeDecodeError):
        return False


@main.command("generate")
@click.option("--manifest", "manifest_path", type=click.Path(dir_okay=False), default=None, help="Manifest file (default: the catalogue's manifest.yaml).")
@click.option("--check", is_flag=True, help="Render to memory and compare with the output folder; exit 1 on any drift.")
@click.option("--filter", "pattern", default=None, help="Only instances whose name matches this glob.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Output folder (default: generated/).")
@click.option("--force", is_flag=True, help="Overwrite hand-edited generated files.")
@click.pass_context
@handle_errors
def generate_cmd(ctx, manifest_path, check, pattern, out_dir, force) -> None:  # noqa: ANN001
    """Generate every manifest instance into generated/ (or check that it is up to date)."""
    import fnmatch
    import shutil

    from rich.progress import Progress

    from .resolver import resolve
    from .writer import check_writes, compare_tree, write_files

    cat = _catalogue(ctx)
    path = Path(manifest_path) if manifest_path else cat.dirs[0] / "manifest.yaml"
    manifest = load_manifest(path)
    root = Path(out_dir) if out_dir else _default_generated()
    plans, problems = [], []
    for entry in manifest.instances:
        try:
            plans.append(resolve(cat, to_request(entry)))
        except PatternGenError as exc:
            problems += [Problem(p.code, f"manifest instance {entry.skeleton} {entry.atoms} {entry.params}: {p.message}", p.file, p.line, p.col) for p in exc.problems]
    names = [p.name for p in plans]
    dupes = sorted({n for n in names if names.count(n) > 1})
    problems += [Problem("manifest", f"two manifest entries make the same instance {n}; give one a 'name:'", str(path)) for n in dupes]
    if problems:
        raise PatternGenError(problems)
    refusal_failures = _check_refusals(cat, manifest)
    selected = [p for p in plans if pattern is None or fnmatch.fnmatchcase(p.name, pattern)]
    if pattern is not None and not selected:
        raise PatternGenError(Problem("manifest", f"--filter {pattern!r} matches none of the {len(plans)} instances"))
    rendered = {}
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("rendering", total=len(selected))
        for plan in selected:
            rendered[plan.name] = render_plan(cat, plan)
            progress.advance(task)
    if check:
        drift = compare_tree(root, rendered, owned={"docs", "README.md"})
        if pattern is not None:
            # Instances the filter leaves out are not stale; stale files inside the selected
            # instances, and stale top-level folders the filter covers, still are.
            drift.stale = [s for s in drift.stale if "/" in s.rstrip("/") or fnmatch.fnmatchcase(s.rstrip("/"), pattern)]
        lines = drift.lines() + [f"refusal: {f}" for f in refusal_failures]
        if lines:
            for line in lines:
                err.print(escape(line), soft_wrap=True)
            err.print(f"[red]{escape(str(root))} is out of date[/red]: run `pattern-gen generate` and commit the result.", soft_wrap=True)
            sys.exit(1)
        out.print(f"[green]ok[/green]: {len(rendered)} instances in {escape(str(root))} are up to date; {len(manifest.refused)} refusals hold", soft_wrap=True)
        return
    # Every refusal (hand-edited files, stale instances with foreign files) before the first write.
    stale, foreign, write_problems = [], [], []
    for name, files in rendered.items():
        write_problems += check_writes(root / name, files, force=force)
    if pattern is None and root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.name in rendered or entry.name.startswith(".") or entry.name in ("docs", "README.md", "__pycache__"):
                continue
            if not (entry.is_dir() and (entry / "instance.json").is_file()):
                foreign.append(entry)
                continue
            edited = [p for p in entry.iterdir() if p.name != "__pycache__" and not _is_generated(p)]
            if edited and not force:
                write_problems.append(Problem("hand-edited", f"stale instance {entry} has hand-edited or foreign files ({', '.join(p.name for p in edited)}); remove it yourself or use --force"))
            stale.append(entry)
    if write_problems:
        raise PatternGenError(write_problems)
    written = unchanged = 0
    for name, files in rendered.items():
        report = write_files(root / name, files, force=force)
        written += len(report.written)
        unchanged += len(report.unchanged)
    for entry in stale:
        shutil.rmtree(entry)
    out.print(f"{len(rendered)} instances: {written} files written, {unchanged} unchanged, {len(stale)} stale instances removed -> {escape(str(root))}", soft_wrap=True)
    for entry in foreign:
        err.print(f"[yellow]left alone[/yellow]: {escape(str(entry))} is not an instance folder of the manifest; remove it yourself (`generate --check` reports it as stale)", soft_wrap=True)
    for line in refusal_failures:
        err.print(f"[red]refusal:[/red] {escape(line)}", soft_wrap=True)
    if refusal_failures:
        sys.exit(1)


@main.command("run")
@click.argument("instance_dir", type=click.Path(file_okay=False))
@click.option("--T", "T", type=int, default=None, help="Token count (default: the test's first T).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--profile", type=click.Path(dir_okay=False), default=None, help="Write the simulated timeline (Chrome Trace Event JSON).")
@click.option("--json", "as_json", is_flag=True)
@handle_errors
def run_cmd(instance_dir, T, seed, profile, as_json) -> None:  # noqa: ANN001
    """Run an instance on random inputs against its golden and print the cost estimate."""
    folder = Path(instance_dir)
    if not folder.is_dir():
        raise PatternGenError(Problem("bad-path", f"no such instance folder: {instance_dir}"))
    result = run_instance(folder, T=T, seed=seed, profile=profile)
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=2, default=str))
    else:
        _print_run(result)
        if profile:
            out.print(f"timeline written to {profile} (open it in https://ui.perfetto.dev or chrome://tracing)", soft_wrap=True)
    if not result.passed:
        sys.exit(1)


@main.command("explain")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handle_errors
def explain_cmd(ctx, name, as_json) -> None:  # noqa: ANN001
    """Decode an instance name into its skeleton, atom, parameters, dims and stage settings."""
    cat = _catalogue(ctx)
    decoded = explain_name(cat, name.strip().rstrip("/").split("/")[-1])
    if as_json:
        click.echo(json.dumps(decoded, indent=2, default=str))
        return
    out.print(f"[bold]{name}[/bold]")
    out.print(f"skeleton {decoded['skeleton']} ({cat.cards[decoded['skeleton']].title}), atom {decoded['atom']} ({cat.cards[decoded['atom']].title})")
    table = Table(show_header=True)
    table.add_column("axis")
    table.add_column("value")
    for k, v in decoded["params"].items():
        table.add_row(k, _fmt(v))
    for k in ("unroll", "platform"):
        if k in decoded:
            table.add_row(k, _fmt(decoded[k]))
    for k, v in decoded["dims"].items():
        table.add_row(f"dim {k}", str(v))
    for stage, ps in decoded["stage_params"].items():
        for k, v in ps.items():
            table.add_row(f"{stage}.{k}", _fmt(v))
    out.print(table)


@main.group("docs")
def docs_group() -> None:
    """Build or serve the browsable catalogue (mkdocs-material)."""


def _build_docs(ctx: click.Context, out_dir: str | None) -> Path:
    from rich.progress import Progress

    from .docs import build_site, instance_estimate, render_pages, write_pages
    from .resolver import resolve
    from .svg import timeline_svg

    cat = _catalogue(ctx)
    manifest = load_manifest(cat.dirs[0] / "manifest.yaml")
    generated = _default_generated()
    plans = [resolve(cat, to_request(entry)) for entry in manifest.instances]
    missing = [p.name for p in plans if not (generated / p.name / "kernel.py").is_file()]
    if missing:
        raise PatternGenError(Problem("instance", f"{len(missing)} manifest instances are not generated (e.g. {missing[0]}); run `pattern-gen generate` first"))
    estimates, timelines = {}, {}
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("simulating instances", total=len(plans))
        for plan in plans:
            estimate, events, lanes = instance_estimate(generated / plan.name)
            estimates[plan.name] = estimate
            if events:
                timelines[plan.name] = timeline_svg(events, lanes, title=f"{plan.name} — T={estimate['T'] if estimate else '?'}")
            progress.advance(task)
    pages = render_pages(cat, plans, generated, estimates, timelines)
    docs_dir = generated / "docs"
    written, unchanged, removed = write_pages(docs_dir, pages)
    out.print(f"docs sources: {written} written, {unchanged} unchanged, {removed} removed -> {docs_dir}")
    site = Path(out_dir) if out_dir else (repo_root() or Path.cwd()) / "build" / "site"
    build_site(docs_dir, site.resolve())
    out.print(f"[green]site built[/green] (mkdocs --strict) -> {site}")
    return site


@docs_group.command("build")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None, help="Site folder (default: build/site).")
@click.pass_context
@handle_errors
def docs_build_cmd(ctx: click.Context, out_dir: str | None) -> None:
    """Render generated/docs/ (Markdown) and build the static site in strict mode."""
    _build_docs(ctx, out_dir)


@docs_group.command("serve")
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None)
@click.pass_context
@handle_errors
def docs_serve_cmd(ctx: click.Context, port: int, out_dir: str | None) -> None:
    """Build the site and serve it on http://127.0.0.1:PORT/ (Ctrl-C stops)."""
    import functools
    import http.server

    site = _build_docs(ctx, out_dir)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        out.print(f"serving {site} on http://127.0.0.1:{port}/ (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":  # pragma: no cover
    main()
