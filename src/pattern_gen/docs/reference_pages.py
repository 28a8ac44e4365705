"""The reference pages: the catalogue index, instance names (with a decoder), constraints, error
codes, ptosim's cost rules and the card-writing guide."""

from __future__ import annotations

import json

from ..catalogue.catalogue import Catalogue
from ..vocab.errors import ERROR_CODES
from ..vocab.resources import repo_root
from .markdown import fmt, table, text

__all__ = ["index_page", "names_page", "constraints_page", "errors_page", "cost_rules_page", "guide_page"]


def index_page(cat: Catalogue) -> str:
    rows = [[f"[{c.id}](cards/{c.id}.md)", c.title, c.kind, ", ".join(c.tags), " → ".join(c.flow), ", ".join(c.examples)] for c in cat.sorted_cards()]
    return "\n".join([
        "# pattern-gen catalogue",
        "",
        "PyPTO pattern cards made executable: every card below is a YAML file with a strict schema; "
        "`pattern-gen new` composes a skeleton with atoms into a kernel, a golden and a test that run on ptosim. "
        "Use the search box (top right) to find a card by name, tag or example operator.",
        "",
        table(["ID", "title", "kind", "tags", "CV flow", "examples"], rows),
        "- [Generated instances](instances/index.md) · [Instance names](names.md) · [Command line](cli.md) · "
        "[How to add a card](add-a-card.md) · [Constraints](constraints.md) · [Error codes](errors.md) · "
        "[Cost rules](cost-rules.md) · [Tags](tags.md)",
        "",
    ])


def names_page(cat: Catalogue, example: str) -> str:
    axes = cat.naming.get("axes", [])
    rows = []
    for a in axes:
        tokens = ", ".join(f"`{t}` = {fmt(v)}" for v, t in a.get("tokens", {}).items()) or f"`{a.get('prefix', '')}<value>`"
        rows.append([f"`{a['param']}`", tokens])
    decoder = {str(t): [a["param"], fmt(v)] for a in axes for v, t in a.get("tokens", {}).items()}
    return "\n".join([
        "# Instance names",
        "",
        "An instance name is derived from its plan — never typed — and reads left to right: skeleton, the atom that fills "
        "the slot (after composition and upgrades), then every axis below in this order (defaults included), then suffix "
        "tokens for what differs from the defaults: `eps…` (floats are written without `-`: `1e-05` → `1em05`), dims "
        "(`K1024`) and fixed-stage settings (`kv_norm.nogamma`). `pattern-gen explain NAME` decodes one.",
        "",
        table(["axis", "tokens"], rows),
        "## Decode a name",
        "",
        '<div class="pg-decoder"><input id="pg-name" type="text" size="90" aria-label="instance name" '
        f'value="{example}"><pre id="pg-decoded"></pre></div>',
        "",
        "<script>",
        f"const PG_TOKENS = {json.dumps(decoder, sort_keys=True)};",
        "function pgDecode(name) {",
        "  const out = []; const parts = name.trim().split('-');",
        "  if (parts.length < 2) return 'expected <skeleton>-<atom>-…';",
        "  out.push('skeleton  ' + parts[0].toUpperCase().replace(/^(SK|AT)/, '$1-'));",
        "  out.push('atom      ' + parts[1].toUpperCase().replace(/^(SK|AT)/, '$1-'));",
        "  for (const t of parts.slice(2)) {",
        "    if (PG_TOKENS[t]) { out.push(PG_TOKENS[t][0].padEnd(14) + PG_TOKENS[t][1]); continue; }",
        "    let m = t.match(/^u(\\d+(?:_\\d+)*)$/); if (m) { out.push('unroll_list'.padEnd(14) + '[' + m[1].split('_').concat(m[1].endsWith('_1') || m[1] === '1' ? [] : ['1']).join(', ') + ']'); continue; }",
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
    meanings = _error_meanings()
    md = ["# Error codes", "", "Every problem pattern-gen reports ends with one of these codes; bad input exits with code 2.", ""]
    for code in ERROR_CODES:
        md += [f"## `{code}` {{#{code}}}", "", meanings.get(code, ""), ""]
    return "\n".join(md)


def cost_rules_page() -> str:
    """Every rule of ptosim's cost model (``ptosim.cost.rules``): what PyPTO does, the kernel it was read
    from, what PyPTO's SIM showed and the test that pins it; ``pattern-gen run --rules`` lists the ones an
    estimate applied."""
    from ptosim.cost.rules import RULES

    md = ["# Cost rules", "",
          f"The {len(RULES)} PyPTO behaviours ptosim's cost model reproduces (`ptosim.cost.rules`): what PyPTO "
          "does, the kernel it was read from, what PyPTO's SIM showed (swimlanes, task topology, AICPU trace) and "
          "the test that pins it. `pattern-gen run INSTANCE --rules` lists the rules an estimate applied.", ""]
    def lit(value: str) -> str:  # no emphasis from a formula's "*"
        return value.replace("*", "\\*")

    for r in RULES:
        md += [f"## `{r.id}` {{#{r.id}}}", "", text(lit(r.statement)), "",
               table(["PyPTO", "read from", "measured", "pinned by"], [[r.pypto, lit(r.read_from), lit(r.measured), f"`{r.test}`"]])]
    return "\n".join(md)


def _error_meanings() -> dict[str, str]:
    """The first line under each ``## … {#code}`` heading of the repository's ``docs/errors.md``."""
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
    """The README's card-format section (a stub outside a source checkout)."""
    root = repo_root()
    readme = (root / "README.md").read_text(encoding="utf-8") if root and (root / "README.md").is_file() else ""
    section = readme.split("## The card format", 1)[-1] if "## The card format" in readme else ""
    return "# How to add a card\n\n## The card format" + section if section else "# How to add a card\n\nSee README.md.\n"
