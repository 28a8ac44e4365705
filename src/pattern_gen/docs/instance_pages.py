"""An instance's page (plan, simulated run, the generated code) and the index of instances."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..plan.kernel_plan import KernelPlan
from ..plan.unroll import list_key, unroll_text
from ..vocab.paths import read_text_file
from ..vocab.text import utilisation
from .markdown import card_link, esc, fmt, table

__all__ = ["instance_page", "instances_index"]


def instance_page(plan: KernelPlan, folder: Path, estimate: dict[str, Any] | None, has_timeline: bool,
                  curves: Mapping[int, Mapping[int, float]] | None = None) -> str:
    """The page of a generated instance: how to regenerate it, its plan, its simulated run, its code."""
    # a hand-broken file shows as it reads (undecodable bytes replaced), never a traceback mid-build
    files = {p.name: read_text_file(p, errors="replace") for p in sorted(folder.glob("*.py")) if p.is_file()}
    md = [
        "---",
        f"title: {plan.name}",
        "---",
        "",
        f"# {plan.name}",
        "",
        f"{card_link(plan.skeleton)} {plan.skeleton_title} with the slot `{plan.slot}` = {card_link(plan.atom)} "
        f"on `{plan.platform}`, unroll_list `{unroll_text(plan.unroll)}`.",
        "",
        "**Regenerate:**",
        "",
        f"```bash\n{plan.request.command()}\n```",
        "",
    ]
    if plan.notes:
        md += ["!!! note \"Resolver notes\"", *[f"    - {esc(n)}" for n in plan.notes], ""]
    md += ["## Plan", "", table(["parameter", "value"], [[f"`{k}`", fmt(v)] for k, v in plan.params.items()] +
                               [[f"`{s}.{k}`", fmt(v)] for s, ps in plan.stage_params.items() for k, v in ps.items()] +
                               [[f"dim `{k}`", v] for k, v in plan.dims.items()])]
    rows = [
        [f"`{s.label}`" + (" (before the loop)" if s.hoist else ""), s.unit, card_link(s.card), s.tile_text() or "—", "; ".join(s.fit_notes)]
        for s in plan.all_stages
    ]
    md += ["", "### Stages", "", table(["stage", "unit", "card", "tile", "fitting"], rows)]
    opt_rows = [[f"`{k}`", fmt(v), level] for k, v, level in plan.option_rows()]
    md += ["", "### Options", "", table(["option", "value", "level"], opt_rows)]
    md += ["", "### Inputs and outputs", "", table(["name", "shape", "dtype", "role"],
           [[f"`{t.name}`", "[" + ", ".join(t.shape) + "]", t.dtype, t.role] for t in plan.inputs + plan.outputs])]
    md += ["", "## Simulated run", ""]
    if estimate is not None:
        md += [
            f"On ptosim's cost model for T = {estimate['T']}: **{estimate['e2e_us']:.2f} µs** end to end, "
            f"{estimate['tasks']} tasks; utilisation {utilisation(estimate, 1)}. The golden test {'passes' if estimate['passed'] else 'FAILS'} at this T.",
            "",
        ]
        per = estimate.get("per_label_us") or {}
        if per:
            md += [table(["label", "summed task time (µs)"], [[f"`{k}`", f"{v:.2f}"] for k, v in sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))]), ""]
        if has_timeline:
            md += [f"![Simulated timeline of {plan.name}](../assets/{plan.name}-timeline.svg)", ""]
    else:
        md += ["_No estimate: the cost model is not available in this installation._", ""]
    if curves:
        chosen = list_key(plan.unroll)
        ts = sorted({T for c in curves.values() for T in c})
        md += ["### Unroll candidates", "",
               f"The estimate against T for each of the card's unroll candidates alone and for this instance's list "
               f"(**{chosen}**), the rest of the plan as it is. Where the lines cross, another list would be faster; "
               f"`pattern-gen tune {plan.name}` searches tiles and options too.", "",
               f"![Estimated time against T per unroll candidate of {plan.name}](../assets/{plan.name}-unroll.svg)", "",
               table(["unroll"] + [f"T={T} (µs)" for T in ts],
                     [[f"**[{u}]**" if u == chosen else f"[{u}]"] + [f"{curves[u][T]:.2f}" if T in curves[u] else "—" for T in ts]
                      for u in sorted(curves, key=lambda k: tuple(-int(x) for x in k.split(",")))]), ""]
    for name in ("kernel.py", "golden.py"):
        if name in files:
            md += [f"## `{name}`", "", f"```python\n{files[name].rstrip()}\n```", ""]
    return "\n".join(md)


def instances_index(plans: list[KernelPlan], estimates: Mapping[str, dict[str, Any] | None]) -> str:
    rows = []
    for p in plans:
        e = estimates.get(p.name)
        rows.append([f"[{p.name}]({p.name}.md)", p.skeleton, p.atom, p.platform, unroll_text(p.unroll), f"{e['e2e_us']:.2f}" if e else "—"])
    return "# Generated instances\n\nThe instances of `patterns/manifest.yaml`, generated into `generated/` by `pattern-gen generate`.\n\n" + table(
        ["instance", "skeleton", "atom", "platform", "unroll", "estimate (µs)"], rows)
