"""A card's page: parameters, inputs and outputs, the compute flow (pseudo-code and an SVG),
dependencies, constraints and performance advice."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..flow import (
    FlowError,
    Unavailable,
    expand_atom,
)
from ..plan.kernel_plan import KernelPlan
from ..vocab.predicates import AllOf, AnyOf, Match, Not
from ..vocab.text import yaml_word
from .describe import card_detail, expansion_code, pseudo_code, skeleton_expansion
from .markdown import card_link, fmt, front_matter, table, text
from .svg import flow_svg

__all__ = ["card_page"]


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


def _fmt_case(v: Any) -> str:
    return "[" + ", ".join(map(str, v)) + "]" if isinstance(v, list) else str(v)


def _flow_stages(stages: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"label": s.label, "unit": s.unit, "card": s.card, "hoist": s.hoist} for s in stages if s.compute]


def _atom_variants(cat: Catalogue, card: m.AtomCard) -> list[tuple[str, list[dict[str, Any]]]]:
    defaults = cat.param_defaults(card.id)
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
    """(markdown, svg) of one card; ``instances``: the plans whose page it links to if they use it."""
    d = card_detail(cat, card)
    title = f"{card.id} {text(card.title)}"
    if card.kind == "atom":
        try:
            exp = expand_atom(cat, card, cat.param_defaults(card.id), None)
            stages = _flow_stages(exp.prologue + exp.stages)
        except (FlowError, Unavailable):
            stages = []
        svg = flow_svg(stages, title=f"{card.id} CV flow (default parameters)")
    else:
        exp = skeleton_expansion(cat, card)
        stages = _flow_stages(exp.prologue + exp.stages)
        svg = flow_svg(stages, title=f"{card.id} CV flow with {next(iter(card.slots.values())).default}", loop=f"{card.loop.kind}(…, unroll_list={list(card.loop.default_list())}) over {card.token_axis}")
    md = [
        "---",
        f"title: {front_matter(f'{card.id} {card.title}')}",
        "tags:",
        *[f"  - {front_matter(t)}" for t in card.tags],
        "---",
        "",
        f"# {title}",
        "",
        f"**{card.kind}** · tags: {', '.join(f'`{t}`' for t in card.tags)} · flow `{' → '.join(card.flow)}` (upstream `{' → '.join(card.upstream_flow)}`)",
        "",
        text(card.summary.strip()),
        "",
        f"<small>also: {card.id.replace('-', '').lower()}, {card.id.replace('-', '')}</small>",  # the site search splits on '-'
        "",
        f"[![CV flow of {card.id}](../assets/{card.id}-flow.svg)](../assets/{card.id}-flow.svg){{ title=\"open full size\" }}",
        "",
    ]
    if card.examples:
        md += [f"**Example operators:** {text(', '.join(card.examples))}", ""]
    cmd = _instantiate_command(cat, card)
    if cmd:
        md += ["**Instantiate:**", "", f"```bash\n{cmd}\n```", ""]
    md += ["## Parameters", "", table(
        ["name", "type", "choices", "default", "from", "meaning"],
        [[f"`{r['name']}`", r["type"], fmt(r["choices"]) if r["choices"] else fmt(r["bounds"]) or "", fmt(r["default"]),
          r["from"] if r["from"] == card.id else f"[{r['from']}]({r['from']}.md)", r["doc"]] for r in d["parameters"]],
    )]
    for group in ("inputs", "outputs"):
        md += [f"## {group.capitalize()}", "", table(
            ["name", "shape", "dtype", "role", "when", "meaning"],
            [[f"`{r['name']}`", "[" + ", ".join(r["shape"]) + "]", fmt(r["dtype"]), r["role"], r["when"] or "",
              r["doc"] + "".join(f" When {c['when']}: " + ", ".join(f"{k} {_fmt_case(v)}" for k, v in c.items() if k != "when") + "." for c in r["cases"])]
             for r in d[group]],
        )]
    md += ["## Compute flow", ""]
    if card.kind == "atom":
        for name, code in _atom_variants(cat, card):
            md += [f"### {text(name)}", "", _code_block(code)]
    else:
        slot = d["slot"]
        md += [
            f"The user slot **`{slot['name']}`** takes {', '.join(slot['accepts'])} atoms (default {card_link(slot['default'])}); "
            f"{text(slot['doc'])}",
            "",
            table(["fixed stage", "card", "parameters set by the skeleton", "when"],
                   [[f"`{f['as']}`", card_link(f["card"]), fmt(f["params"]), f["when"] or "always"] for f in d["fixed_stages"]]),
            f"Loop: `{card.loop.kind}` `{card.loop.name}` over `{card.token_axis}` yielding `({card.loop.index}, {card.loop.factor})`, "
            f"unroll candidates {', '.join(map(str, card.loop.candidates))}, default `unroll_list={list(card.loop.default_list())}`"
            + (", `submit_before_loop=True`" if card.loop.submit_before_loop else "") + ".",
            "",
            "Dims: " + ", ".join(f"`{k}` = {v['default']}" for k, v in d["dims"].items()) + ".",
            "",
            "Expanded with the default slot atom and parameters:",
            "",
            _code_block(expansion_code(exp)),
        ]
        if d["left_out"]:
            md += ["**Left out** (atoms not in this catalogue):", "", *[f"- {text(x)}" for x in d["left_out"]], ""]
        md += _regimes(card)
    if d["upgrades"] or d["refuse"]:
        md += ["## Upgrades and refusals", ""]
        md += [f"- when {text(u['when'])}: becomes {card_link(u['to'])} — {text(u['reason'])}" for u in d["upgrades"]]
        md += [f"- refused when {text(r['when'])}: {text(r['reason'])}" for r in d["refuse"]]
        md.append("")
    md += [
        "## Dependencies",
        "",
        "Depends on: " + (", ".join(card_link(c) for c in d["depends_on"]) or "—") + "  ",
        "Used by: " + (", ".join(card_link(c) for c in d["used_by"]) or "—"),
        "",
        "## Constraints",
        "",
        table(["id", "level", "rule"], [[f"[{c['id']}](../constraints.md#{c['id'].lower()})", c["level"], c["rule"]] for c in d["constraints"]]),
        "## Performance",
        "",
    ]
    perf = d["performance"]
    md.append(table(["knob", "value", "level", "why"], [[f"`{r['group']}.{r['key']}`", fmt(r["value"]), r["level"], r["why"] + (f" (when {r['when']})" if r["when"] else "")] for r in perf["options"]]))
    if perf["tiles"]:
        md += ["", table(["stage", "tile", "why"], [[f"`{r['stage']}`", r["tile"], r["why"]] for r in perf["tiles"]])]
    for key in ("direction", "evidence"):
        if perf[key]:
            md += ["", f"**{key.capitalize()}:** {text(perf[key])}"]
    if d["numerics"]:
        md += ["", "## Numerics", "", text(d["numerics"].strip())]
    if d["doc"]:
        md += ["", "## Notes", "", text(d["doc"].strip())]
    mine = [p for p in instances if card.id in p.cards_used]
    if mine:
        md += ["", "## Generated instances", "", *[f"- [{p.name}](../instances/{p.name}.md)" for p in mine]]
    md += ["", f"<small>Source: `{Path(d['file']).parent.name}/{Path(d['file']).name}`</small>", ""]
    return "\n".join(md), svg


def _regimes(card: m.SkeletonCard) -> list[str]:
    """The special shape classes: the rule that selects each, what it sets, its warning."""
    md: list[str] = []
    for r in card.regimes:
        tiles = "; ".join(f"`{label}` {t.text()}" for label, t in r.tiles.items())
        options = ", ".join(f"`{a.key}` = {a.value}" for a in r.runtime_options + r.pass_options)
        md += [
            f"### Regime `{r.name}`", "",
            f"Selected when {text(r.trigger())}. {text(' '.join(r.doc.split()))}", "",
            f"- unroll candidates: {', '.join(map(str, r.unroll))}",
            *([f"- parameters: {', '.join(f'`{k}` = {v}' for k, v in r.params.items())}"] if r.params else []),
            *([f"- defaults: {', '.join(f'`{k}` = {yaml_word(v)}' for k, v in r.slot_defaults.items())} (a request may set another value)"] if r.slot_defaults else []),
            *([f"- dims: {', '.join(f'`{k}` any value' if v == 1 else f'`{k}` a multiple of {v}' for k, v in r.multiple_of.items())} (in place of the dim's own alignment)"] if r.multiple_of else []),
            *([f"- tiles: {tiles}"] if tiles else []),
            *([f"- options: {options}"] if options else []),
            *(["- cache policy: none set (the weights stay cacheable)"] if r.cache_policy == [] else []),
            "",
            *([f"!!! warning\n    {text(' '.join(r.warning.split()))}", ""] if r.warning else []),
        ]
    return md


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
