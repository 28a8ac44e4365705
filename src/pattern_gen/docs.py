"""The browsable catalogue: Markdown pages for every card and instance, built with mkdocs-material.

``render_pages`` is pure (catalogue + plans + instance folders -> ``{path: text}``) and
deterministic; ``write_pages`` writes them to ``generated/docs/`` (only changed files, stale
pages removed); ``build_site`` runs mkdocs in strict mode, so a broken link or a card change
that breaks a page fails the build.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import __version__
from . import model as m
from .catalogue import Catalogue
from .checks import param_combinations, skeleton_env
from .describe import card_detail, op_text, pseudo_code
from .errors import PatternGenError, Problem
from .flow import FlowError, Unavailable, expand_atom, expand_skeleton
from .plan import KernelPlan
from .predicates import AllOf, AnyOf, Match, Not
from .svg import flow_svg, timeline_svg

__all__ = ["render_pages", "write_pages", "build_site", "mkdocs_config", "instance_estimate"]


def _esc(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ", ".join(_fmt(x) for x in v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt(x)}" for k, x in v.items()) + "}"
    return str(v)


def _fmt_case(v: Any) -> str:
    return "[" + ", ".join(map(str, v)) + "]" if isinstance(v, list) else str(v)


def _table(header: list[str], rows: Iterable[list[Any]]) -> str:
    rows = list(rows)
    if not rows:
        return "_none_\n"
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _card_link(cid: str, depth: int = 1) -> str:
    return f"[{cid}]({'../' * depth}cards/{cid}.md)"


# --- card pages ----------------------------------------------------------------------------------------


def _env_for(pred: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Parameter values that make a (simple) predicate hold."""
    env = dict(defaults)

    def apply(p: Any) -> None:
        if isinstance(p, Match):
            env[p.param] = p.values[0]
        elif isinstance(p, AllOf):
            for q in p.parts:
                apply(q)
        elif isinstance(p, AnyOf) and p.parts:
            apply(p.parts[0])

    if not isinstance(pred, Not):
        apply(pred)
    return env


def _flow_stages(stages: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"label": s.label, "unit": s.unit, "card": s.card, "hoist": s.hoist} for s in stages if s.compute]


def _skeleton_expansion(cat: Catalogue, card: m.SkeletonCard) -> Any:
    slot = next(iter(card.slots.values()))
    atom = cat.cards[slot.default]
    specs = cat.effective_params(atom.id)
    params = {n: s.default for n, s in specs.items()}
    params.update({k: v for k, v in card.slot_defaults.items() if k in specs})
    profile = cat.platforms.get("a2a3") or next(iter(cat.platforms.values()))
    env = skeleton_env(card, atom, params, profile.name, card.loop.candidates[0])
    return expand_skeleton(cat, card, env, atom, params, {}, profile)


def _atom_variants(cat: Catalogue, card: m.AtomCard) -> list[tuple[str, list[dict[str, Any]]]]:
    specs = cat.effective_params(card.id)
    defaults = {n: s.default for n, s in specs.items()}
    variants = [(v.name, _env_for(v.when, defaults)) for v in card.variants] or [("default parameters", defaults)]
    return [(name, pseudo_code(cat, card, env)) for name, env in variants]


def _code_block(stages: list[dict[str, Any]]) -> str:
    lines = []
    for s in stages:
        where = "  # before the loop" if s["hoist"] else ""
        lines.append(f"# [{s['unit']}] {s['label']}{where}")
        lines += [f"    {line}" for line in s["lines"]]
    return "```python\n" + "\n".join(lines) + "\n```\n"


def card_page(cat: Catalogue, card: Any, instances: list[KernelPlan]) -> tuple[str, str]:
    """(markdown, svg) of one card."""
    d = card_detail(cat, card)
    title = f"{card.id} {card.title}"
    if card.kind == "atom":
        try:
            exp = expand_atom(cat, card, {n: s.default for n, s in cat.effective_params(card.id).items()}, None)
            stages = _flow_stages(exp.prologue + exp.stages)
        except (FlowError, Unavailable):
            stages = []
        svg = flow_svg(stages, title=f"{card.id} CV flow (default parameters)")
    else:
        exp = _skeleton_expansion(cat, card)
        stages = _flow_stages(exp.prologue + exp.stages)
        svg = flow_svg(stages, title=f"{card.id} CV flow with {next(iter(card.slots.values())).default}", loop=f"{card.loop.kind}(…, unroll_list=[u]) over {card.token_axis}")
    md = [
        "---",
        f"title: {card.id} {card.title}",
        "tags:",
        *[f"  - {t}" for t in card.tags],
        "---",
        "",
        f"# {title}",
        "",
        f"**{card.kind}** · tags: {', '.join(f'`{t}`' for t in card.tags)} · flow `{' → '.join(card.flow)}` (upstream `{' → '.join(card.upstream_flow)}`)",
        "",
        card.summary.strip(),
        "",
        f"![CV flow of {card.id}](../assets/{card.id}-flow.svg)",
        "",
    ]
    if card.examples:
        md += [f"**Example operators:** {', '.join(card.examples)}", ""]
    cmd = _instantiate_command(cat, card)
    if cmd:
        md += ["**Instantiate:**", "", f"```bash\n{cmd}\n```", ""]
    md += ["## Parameters", "", _table(
        ["name", "type", "choices", "default", "from", "meaning"],
        [[f"`{r['name']}`", r["type"], _fmt(r["choices"]) if r["choices"] else _fmt(r["bounds"]) or "", _fmt(r["default"]),
          r["from"] if r["from"] == card.id else f"[{r['from']}]({r['from']}.md)", r["doc"]] for r in d["parameters"]],
    )]
    for group in ("inputs", "outputs"):
        md += [f"## {group.capitalize()}", "", _table(
            ["name", "shape", "dtype", "role", "when", "meaning"],
            [[f"`{r['name']}`", "[" + ", ".join(r["shape"]) + "]", _fmt(r["dtype"]), r["role"], r["when"] or "",
              r["doc"] + "".join(f" When {c['when']}: " + ", ".join(f"{k} {_fmt_case(v)}" for k, v in c.items() if k != "when") + "." for c in r["cases"])]
             for r in d[group]],
        )]
    md += ["## Compute flow", ""]
    if card.kind == "atom":
        for name, code in _atom_variants(cat, card):
            md += [f"### {name}", "", _code_block(code)]
    else:
        slot = d["slot"]
        md += [
            f"The user slot **`{slot['name']}`** takes {', '.join(slot['accepts'])} atoms (default {_card_link(slot['default'])}); "
            f"{slot['doc']}",
            "",
            _table(["fixed stage", "card", "parameters set by the skeleton"],
                   [[f"`{f['as']}`", _card_link(f["card"]), _fmt(f["params"])] for f in d["fixed_stages"]]),
            f"Loop: `{card.loop.kind}` `{card.loop.name}` over `{card.token_axis}` yielding `({card.loop.index}, {card.loop.factor})`, "
            f"unroll candidates {', '.join(map(str, card.loop.candidates))}"
            + (", `submit_before_loop=True`" if card.loop.submit_before_loop else "") + ".",
            "",
            "Dims: " + ", ".join(f"`{k}` = {v['default']}" for k, v in d["dims"].items()) + ".",
            "",
            "Expanded with the default slot atom and parameters:",
            "",
            _code_block([{"label": s.label, "unit": s.unit, "hoist": s.hoist, "lines": [op_text(o) for o in s.ops]} for s in exp.prologue + exp.stages]),
        ]
        if d["left_out"]:
            md += ["**Left out** (atoms not in this catalogue):", "", *[f"- {x}" for x in d["left_out"]], ""]
    if d["upgrades"] or d["refuse"]:
        md += ["## Upgrades and refusals", ""]
        md += [f"- when {u['when']}: becomes {_card_link(u['to'])} — {u['reason']}" for u in d["upgrades"]]
        md += [f"- refused when {r['when']}: {r['reason']}" for r in d["refuse"]]
        md.append("")
    md += [
        "## Dependencies",
        "",
        "Depends on: " + (", ".join(_card_link(c) for c in d["depends_on"]) or "—") + "  ",
        "Used by: " + (", ".join(_card_link(c) for c in d["used_by"]) or "—"),
        "",
        "## Constraints",
        "",
        _table(["id", "level", "rule"], [[f"[{c['id']}](../constraints.md#{c['id'].lower()})", c["level"], c["rule"]] for c in d["constraints"]]),
        "## Performance",
        "",
    ]
    perf = d["performance"]
    md.append(_table(["knob", "value", "level", "why"], [[f"`{r['group']}.{r['key']}`", _fmt(r["value"]), r["level"], r["why"] + (f" (when {r['when']})" if r["when"] else "")] for r in perf["options"]]))
    if perf["tiles"]:
        md += ["", _table(["stage", "tile", "why"], [[f"`{r['stage']}`", r["tile"], r["why"]] for r in perf["tiles"]])]
    for key in ("direction", "evidence"):
        if perf[key]:
            md += ["", f"**{key.capitalize()}:** {perf[key]}"]
    if d["numerics"]:
        md += ["", "## Numerics", "", d["numerics"].strip()]
    if d["doc"]:
        md += ["", "## Notes", "", d["doc"].strip()]
    mine = [p for p in instances if card.id in p.cards_used]
    if mine:
        md += ["", "## Generated instances", "", *[f"- [{p.name}](../instances/{p.name}.md)" for p in mine]]
    md += ["", f"<small>Source: `{Path(d['file']).parent.name}/{Path(d['file']).name}`</small>", ""]
    return "\n".join(md), svg


def _instantiate_command(cat: Catalogue, card: Any) -> str | None:
    if card.kind == "skeleton":
        return f"pattern-gen new --skeleton {card.id} --atoms {next(iter(card.slots.values())).default} --run"
    for sk in cat.skeletons():
        if card in cat.slot_atoms(sk):
            return f"pattern-gen new --skeleton {sk.id} --atoms {card.id} --run"
    users = [c for c in cat.cards.values() if card.id in cat.calls_of(c) and c.kind == "atom"]
    for user in users:
        for sk in cat.skeletons():
            if user in cat.slot_atoms(sk):
                return f"# {card.id} is part of {user.id}:\npattern-gen new --skeleton {sk.id} --atoms {user.id} --run"
    return None


# --- instance pages ------------------------------------------------------------------------------------------


def instance_estimate(folder: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]], dict[Any, str]]:
    """Run an instance once (its first test T) for the estimate and the timeline events."""
    from .instances import run_instance

    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        try:
            result = run_instance(folder, profile=str(trace))
        except (ImportError, AttributeError):
            return None, [], {}
        if result.estimate is None or not trace.is_file():
            return None, [], {}
        data = json.loads(trace.read_text(encoding="utf-8"))
    events = data.get("traceEvents", [])
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    estimate = dict(result.estimate)
    estimate["T"] = result.T
    estimate["passed"] = result.passed
    return estimate, events, lanes


def instance_page(cat: Catalogue, plan: KernelPlan, folder: Path, estimate: dict[str, Any] | None, has_timeline: bool) -> str:
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.py"))}
    md = [
        "---",
        f"title: {plan.name}",
        "---",
        "",
        f"# {plan.name}",
        "",
        f"{_card_link(plan.skeleton)} {plan.skeleton_title} with the slot `{plan.slot}` = {_card_link(plan.atom)} "
        f"on `{plan.platform}`, unroll {plan.unroll}.",
        "",
        "**Regenerate:**",
        "",
        f"```bash\n{plan.request.command()}\n```",
        "",
    ]
    if plan.notes:
        md += ["!!! note \"Resolver notes\"", *[f"    - {_esc(n)}" for n in plan.notes], ""]
    md += ["## Plan", "", _table(["parameter", "value"], [[f"`{k}`", _fmt(v)] for k, v in plan.params.items()] +
                               [[f"`{s}.{k}`", _fmt(v)] for s, ps in plan.stage_params.items() for k, v in ps.items()] +
                               [[f"dim `{k}`", v] for k, v in plan.dims.items()])]
    rows = []
    for s in plan.all_stages:
        if s.vec_tile is not None:
            tile = f"vec {s.vec_tile}"
        elif s.cube_tile is not None:
            tile = f"cube m={s.cube_tile['m']} k={s.cube_tile['k']} n={s.cube_tile['n']}"
        else:
            tile = "—"
        rows.append([f"`{s.label}`" + (" (before the loop)" if s.hoist else ""), s.unit, _card_link(s.card), tile, "; ".join(s.fit_notes)])
    md += ["", "### Stages", "", _table(["stage", "unit", "card", "tile", "fitting"], rows)]
    opt_rows = [[f"`{k}`", _fmt(v), plan.option_levels.get(k, "")] for grp in (plan.runtime_options, plan.pass_options, plan.operation_options) for k, v in grp.items()]
    opt_rows += [[f"`{n}.set_cache_policy`", p, ""] for n, p in plan.cache_policy.items()]
    md += ["", "### Options", "", _table(["option", "value", "level"], opt_rows)]
    md += ["", "### Inputs and outputs", "", _table(["name", "shape", "dtype", "role"],
           [[f"`{t.name}`", "[" + ", ".join(t.shape) + "]", t.dtype, t.role] for t in plan.inputs + plan.outputs])]
    md += ["", "## Simulated run", ""]
    if estimate is not None:
        util = ", ".join(f"{k} {v:.1%}" for k, v in estimate.get("utilization", {}).items())
        md += [
            f"On ptosim's cost model for T = {estimate['T']}: **{estimate['e2e_us']:.2f} µs** end to end, "
            f"{estimate['tasks']} tasks; utilisation {util}. The golden test {'passes' if estimate['passed'] else 'FAILS'} at this T.",
            "",
        ]
        per = estimate.get("per_label_us") or {}
        if per:
            md += [_table(["label", "summed task time (µs)"], [[f"`{k}`", f"{v:.2f}"] for k, v in per.items()]), ""]
        if has_timeline:
            md += [f"![Simulated timeline of {plan.name}](../assets/{plan.name}-timeline.svg)", ""]
    else:
        md += ["_No estimate: the cost model is not available in this installation._", ""]
    for name in ("kernel.py", "golden.py"):
        if name in files:
            md += [f"## `{name}`", "", f"```python\n{files[name].rstrip()}\n```", ""]
    return "\n".join(md)


# --- the other pages -----------------------------------------------------------------------------------------


def index_page(cat: Catalogue) -> str:
    rows = [[f"[{c.id}](cards/{c.id}.md)", c.title, c.kind, ", ".join(c.tags), " → ".join(c.flow), ", ".join(c.examples)] for c in cat.sorted_cards()]
    return "\n".join([
        "# pattern-gen catalogue",
        "",
        "PyPTO pattern cards made executable: every card below is a YAML file with a strict schema; "
        "`pattern-gen new` composes a skeleton with atoms into a kernel, a golden and a test that run on ptosim. "
        "Use the search box (top right) to find a card by name, tag or example operator.",
        "",
        _table(["ID", "title", "kind", "tags", "CV flow", "examples"], rows),
        "- [Generated instances](instances/index.md) · [Instance names](names.md) · [Command line](cli.md) · "
        "[How to add a card](add-a-card.md) · [Constraints](constraints.md) · [Error codes](errors.md) · [Tags](tags.md)",
        "",
    ])


def instances_index(plans: list[KernelPlan], estimates: Mapping[str, dict[str, Any] | None]) -> str:
    rows = []
    for p in plans:
        e = estimates.get(p.name)
        rows.append([f"[{p.name}]({p.name}.md)", p.skeleton, p.atom, p.platform, p.unroll, f"{e['e2e_us']:.2f}" if e else "—"])
    return "# Generated instances\n\nThe instances of `patterns/manifest.yaml`, generated into `generated/` by `pattern-gen generate`.\n\n" + _table(
        ["instance", "skeleton", "atom", "platform", "unroll", "estimate (µs)"], rows)


def names_page(cat: Catalogue, example: str) -> str:
    axes = cat.naming.get("axes", [])
    rows = []
    for a in axes:
        tokens = ", ".join(f"`{t}` = {_fmt(v)}" for v, t in a.get("tokens", {}).items()) or f"`{a.get('prefix', '')}<value>`"
        rows.append([f"`{a['param']}`", tokens])
    table = {str(t): [a["param"], _fmt(v)] for a in axes for v, t in a.get("tokens", {}).items()}
    return "\n".join([
        "# Instance names",
        "",
        "An instance name is derived from its plan — never typed — and reads left to right: skeleton, the atom that fills "
        "the slot (after composition and upgrades), then every axis below in this order (defaults included), then suffix "
        "tokens for what differs from the defaults: `eps…` (floats are written without `-`: `1e-05` → `1em05`), dims "
        "(`K1024`) and fixed-stage settings (`kv_norm.nogamma`). `pattern-gen explain NAME` decodes one.",
        "",
        _table(["axis", "tokens"], rows),
        "## Decode a name",
        "",
        '<div class="pg-decoder"><input id="pg-name" type="text" size="90" aria-label="instance name" '
        f'value="{example}"><pre id="pg-decoded"></pre></div>',
        "",
        "<script>",
        f"const PG_TOKENS = {json.dumps(table, sort_keys=True)};",
        "function pgDecode(name) {",
        "  const out = []; const parts = name.trim().split('-');",
        "  if (parts.length < 2) return 'expected <skeleton>-<atom>-…';",
        "  out.push('skeleton  ' + parts[0].toUpperCase().replace(/^(SK|AT)/, '$1-'));",
        "  out.push('atom      ' + parts[1].toUpperCase().replace(/^(SK|AT)/, '$1-'));",
        "  for (const t of parts.slice(2)) {",
        "    if (PG_TOKENS[t]) { out.push(PG_TOKENS[t][0].padEnd(14) + PG_TOKENS[t][1]); continue; }",
        "    let m = t.match(/^u(\\d+)$/); if (m) { out.push('unroll'.padEnd(14) + m[1]); continue; }",
        "    m = t.match(/^([A-Z][A-Z_]*)(\\d+)$/); if (m) { out.push(('dim ' + m[1]).padEnd(14) + m[2]); continue; }",
        "    m = t.match(/^eps(.+)$/); if (m) { out.push('eps'.padEnd(14) + m[1].replace(/m/g, '-').replace(/p/g, '+')); continue; }",
        "    if (t.includes('.')) { out.push('stage setting '.padEnd(14) + t); continue; }",
        "    out.push('platform'.padEnd(14) + t);",
        "  }",
        "  return out.join('\\n');",
        "}",
        "function pgUpdate() { document.getElementById('pg-decoded').textContent = pgDecode(document.getElementById('pg-name').value); }",
        "document.addEventListener('DOMContentLoaded', () => { const i = document.getElementById('pg-name'); if (i) { i.addEventListener('input', pgUpdate); pgUpdate(); } });",
        "</script>",
        "",
    ])


def constraints_page(cat: Catalogue) -> str:
    md = ["# Constraints", "", "The constraint catalogue (C-API, C-TILE, C-LOOP, C-DATA, C-SYM). Cards cite these ids; ptosim's errors name them.", ""]
    for c in sorted(cat.constraints.values(), key=lambda c: c.id):
        users = [cid for cid, card in sorted(cat.cards.items()) if c.id in card.constraints]
        md += [f"## {c.id} {{#{c.id.lower()}}}", "", f"**{c.level}** — {c.rule}", ""]
        if c.consequence:
            md += [f"Consequence: {c.consequence}", ""]
        if users:
            md += ["Cited by: " + ", ".join(f"[{u}](cards/{u}.md)" for u in users), ""]
    return "\n".join(md)


def errors_page() -> str:
    from .errors import ERROR_CODES

    meanings = _error_meanings()
    md = ["# Error codes", "", "Every problem pattern-gen reports ends with one of these codes; bad input exits with code 2.", ""]
    for code in ERROR_CODES:
        md += [f"## `{code}` {{#{code}}}", "", meanings.get(code, ""), ""]
    return "\n".join(md)


def _error_meanings() -> dict[str, str]:
    from .resources import repo_root

    root = repo_root()
    page = (root / "docs" / "errors.md") if root else None
    out: dict[str, str] = {}
    if page is None or not page.is_file():
        return out
    current = None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## ") and "{#" in line:
            current = line.split("{#")[1].rstrip("}").strip()
            out[current] = ""
        elif current and line.strip() and not out[current]:
            out[current] = line.strip()
    return out


def guide_page() -> str:
    from .resources import repo_root

    root = repo_root()
    readme = (root / "README.md").read_text(encoding="utf-8") if root and (root / "README.md").is_file() else ""
    section = readme.split("## The card format", 1)[-1] if "## The card format" in readme else ""
    return "# How to add a card\n\n## The card format" + section if section else "# How to add a card\n\nSee README.md.\n"


# --- assembling the site --------------------------------------------------------------------------------------


def mkdocs_config(nav: list[Any]) -> str:
    import yaml

    config = {
        "site_name": "pattern-gen catalogue",
        "site_description": "PyPTO pattern cards, their kernels and golden tests",
        "docs_dir": "pages",
        "use_directory_urls": False,
        "strict": True,
        "theme": {
            "name": "material",
            "font": False,  # no web fonts: the site works offline
            "features": ["navigation.top", "navigation.sections", "search.highlight", "search.suggest", "content.code.copy"],
            "palette": {"primary": "indigo"},
        },
        "plugins": ["search", "tags"],
        "markdown_extensions": [
            "tables",
            "admonition",
            "attr_list",
            "md_in_html",
            {"toc": {"permalink": True}},
            {"pymdownx.highlight": {"anchor_linenums": False}},
            "pymdownx.superfences",
        ],
        "nav": nav,
    }
    return "# Generated by pattern-gen docs build; do not edit.\n" + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)


def render_pages(
    cat: Catalogue,
    plans: list[KernelPlan],
    generated: Path,
    estimates: Mapping[str, dict[str, Any] | None],
    timelines: Mapping[str, str],
) -> dict[str, str]:
    """``{path relative to generated/docs: text}`` for the whole site source."""
    from .cli import main as cli_group
    from .clidoc import cli_reference

    pages: dict[str, str] = {}
    for card in cat.sorted_cards():
        md, svg = card_page(cat, card, plans)
        pages[f"pages/cards/{card.id}.md"] = md
        pages[f"pages/assets/{card.id}-flow.svg"] = svg
    for plan in plans:
        folder = generated / plan.name
        pages[f"pages/instances/{plan.name}.md"] = instance_page(cat, plan, folder, estimates.get(plan.name), plan.name in timelines)
        if plan.name in timelines:
            pages[f"pages/assets/{plan.name}-timeline.svg"] = timelines[plan.name]
    pages["pages/index.md"] = index_page(cat)
    pages["pages/instances/index.md"] = instances_index(plans, estimates)
    pages["pages/names.md"] = names_page(cat, plans[0].name if plans else "sk03-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-nk-u128-a2a3")
    pages["pages/cli.md"] = cli_reference(cli_group)
    pages["pages/add-a-card.md"] = guide_page()
    pages["pages/constraints.md"] = constraints_page(cat)
    pages["pages/errors.md"] = errors_page()
    pages["pages/tags.md"] = "# Tags\n\n<!-- material/tags -->\n"
    nav = [
        {"Catalogue": "index.md"},
        {"Atoms": [f"cards/{c.id}.md" for c in cat.atoms()]},
        {"Skeletons": [f"cards/{c.id}.md" for c in cat.skeletons()]},
        {"Instances": ["instances/index.md"] + [f"instances/{p.name}.md" for p in plans]},
        {"Reference": ["names.md", "cli.md", "add-a-card.md", "constraints.md", "errors.md", "tags.md"]},
    ]
    pages["mkdocs.yml"] = mkdocs_config(nav)
    pages["README.md"] = f"Site source generated by `pattern-gen docs build` ({__version__}); build it with `pattern-gen docs build` or `mkdocs build -f generated/docs/mkdocs.yml`.\n"
    return pages


def write_pages(docs_dir: Path, pages: Mapping[str, str]) -> tuple[int, int, int]:
    """Write changed pages, remove stale ones; (written, unchanged, removed)."""
    from .writer import _atomic_write

    written = unchanged = removed = 0
    for rel, text in sorted(pages.items()):
        path = docs_dir / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            unchanged += 1
            continue
        _atomic_write(path, text)
        written += 1
    if docs_dir.is_dir():
        for path in sorted(docs_dir.rglob("*")):
            if path.is_file() and path.relative_to(docs_dir).as_posix() not in pages:
                path.unlink()
                removed += 1
    return written, unchanged, removed


def build_site(docs_dir: Path, site_dir: Path) -> None:
    """mkdocs build --strict; PatternGenError with mkdocs' complaint on any warning."""
    try:
        from mkdocs.commands.build import build
        from mkdocs.config import load_config
        from mkdocs.exceptions import MkDocsException
    except ImportError:
        raise PatternGenError(Problem("bad-path", "mkdocs is not installed: pip install -e '.[docs]'")) from None
    import logging

    class _Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    handler = _Collect()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(handler)
    try:
        config = load_config(config_file=str(docs_dir / "mkdocs.yml"), strict=True, site_dir=str(site_dir))
        if site_dir.exists():
            shutil.rmtree(site_dir)
        build(config)
    except (MkDocsException, SystemExit) as exc:
        detail = "; ".join(handler.messages[-5:]) or str(exc)
        raise PatternGenError(Problem("bad-path", f"mkdocs build --strict failed: {detail}")) from None
    finally:
        logger.removeHandler(handler)
