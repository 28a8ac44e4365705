"""Cards as plain data for ``list --json`` / ``show --json`` and for the docs pages.

Everything the CLI and the docs show about a card comes from these functions, so the two never
disagree: parameters with where they come from, inputs/outputs, the flow as pseudo-code per
variant, dependencies, used-by, constraints and the performance table.
"""

from __future__ import annotations

from typing import Any

from ptosim.platform import DEFAULT_PLATFORM

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..flow import COp, Expansion, FlowError, ScalarArg, Unavailable, Var, expand_atom, expand_skeleton, skeleton_env
from ..vocab.expr import render as render_expr
from ..vocab.ops import op_spec
from ..vocab.predicates import TRUE

__all__ = ["card_summary", "card_detail", "param_rows", "pseudo_code", "expansion_code", "op_text"]


def _param_row(name: str, spec: m.ParamSpec, default: Any, origin: str, doc: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": spec.type,
        "choices": spec.valid_values,
        "bounds": {k: getattr(spec, k) for k in ("gt", "ge", "le") if getattr(spec, k) is not None},
        "default": default,
        "from": origin,
        "doc": doc,
    }


def param_rows(cat: Catalogue, card: Any) -> list[dict[str, Any]]:
    """One row per parameter (own and inherited): name, type, choices, default, from, meaning.

    A skeleton lists its own parameters, then its slot default's (with the skeleton's
    ``slot_defaults``), then ``unroll``."""
    if card.kind == "atom":
        return [
            _param_row(name, spec, spec.default, cat.param_origin(card.id, name), spec.doc)
            for name, spec in cat.effective_params(card.id).items()
        ]
    rows = [_param_row(name, spec, spec.default, card.id, spec.doc) for name, spec in card.params.items()]
    slot_name, slot = next(iter(card.slots.items()))
    if slot.default in cat.cards:
        for name, spec in cat.effective_params(slot.default).items():
            default = card.slot_defaults.get(name, spec.default)
            doc = (f"(slot {slot_name}) " + spec.doc).strip()
            rows.append(_param_row(name, spec, default, cat.param_origin(slot.default, name), doc))
    rows.append(
        {
            "name": "unroll",
            "type": "int list",
            "choices": list(card.loop.candidates),
            "bounds": {},
            "default": list(card.loop.default_list()),
            "from": card.id,
            "doc": "The token loop's unroll_list: one factor or several, largest first, each dividing the larger ones "
                   "(unroll=128,16); each is its own compiled path and T is covered largest first; 1 is always appended.",
        }
    )
    return rows


def _tensor_rows(decls: dict[str, m.TensorDecl]) -> list[dict[str, Any]]:
    rows = []
    for name, d in decls.items():
        dtype: Any = d.dtype
        if isinstance(dtype, m.ParamRef):
            dtype = f"= {dtype.param}"
        cases = []
        for c in d.cases:
            change = {}
            if c.shape is not None:
                change["shape"] = [str(s) for s in c.shape]
            if c.dtype is not None:
                change["dtype"] = f"= {c.dtype.param}" if isinstance(c.dtype, m.ParamRef) else c.dtype
            cases.append({"when": c.when.describe(), **change})
        rows.append(
            {
                "name": name,
                "shape": [str(s) for s in d.shape],
                "dtype": dtype,
                "role": d.role,
                "when": None if d.when == TRUE else d.when.describe(),
                "cases": cases,
                "doc": d.doc,
            }
        )
    return rows


def card_summary(cat: Catalogue, card: Any) -> dict[str, Any]:
    """What ``list`` shows about a card, as data."""
    return _summary(cat, card, param_rows(cat, card))


def _summary(cat: Catalogue, card: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": card.id,
        "kind": card.kind,
        "title": card.title,
        "summary": card.summary,
        "tags": list(card.tags),
        "flow": list(card.flow),
        "upstream_flow": list(card.upstream_flow),
        "examples": list(card.examples),
        "params": {
            r["name"]: {"type": r["type"], "choices": r["choices"], "default": r["default"], "from": r["from"]}
            for r in rows
        },
        "depends_on": list(card.depends_on),
        "used_by": cat.used_by(card.id),
        "file": cat.file_of(card.id),
    }


def _advice_rows(perf: m.Performance) -> list[dict[str, Any]]:
    rows = []
    for group in ("runtime_options", "pass_options", "operation_options"):
        for a in getattr(perf, group):
            rows.append(
                {
                    "group": group,
                    "key": a.key,
                    "value": a.value,
                    "level": a.level,
                    "why": a.why,
                    "when": None if a.when == TRUE else a.when.describe(),
                }
            )
    for c in perf.cache_policy:
        rows.append(
            {
                "group": "cache_policy",
                "key": f"{c.role} tensors",
                "value": c.policy,
                "level": c.level,
                "why": c.why,
                "when": ", ".join(f"{k}={v}" for k, v in c.requires.items()) or None,
            }
        )
    return rows


def _tile_rows(perf: m.Performance) -> list[dict[str, Any]]:
    rows = []
    for label, t in perf.tiles.items():
        if t.vec is not None:
            value = "vec [" + ", ".join(str(v) for v in t.vec) + "]"
        else:
            assert t.cube is not None
            value = f"cube m={list(t.cube.m)} k={list(t.cube.k)} n={list(t.cube.n)}"
        rows.append({"stage": label, "tile": value, "why": t.why})
    return rows


def card_detail(cat: Catalogue, card: Any) -> dict[str, Any]:
    """Everything ``show`` prints, as data."""
    rows = param_rows(cat, card)
    out = _summary(cat, card, rows)
    out.update(
        {
            "parameters": rows,
            "inputs": _tensor_rows(card.inputs),
            "outputs": _tensor_rows(card.outputs),
            "constraints": [
                {"id": cid, "level": cat.constraints[cid].level, "rule": cat.constraints[cid].rule}
                for cid in card.constraints
                if cid in cat.constraints
            ],
            "performance": {
                "options": _advice_rows(card.performance),
                "tiles": _tile_rows(card.performance),
                "evidence": card.performance.evidence,
                "direction": card.performance.direction,
            },
            "variants": [{"name": v.name, "when": v.when.describe(), "doc": v.doc} for v in card.variants],
            "refuse": [{"when": r.when.describe(), "reason": r.reason} for r in card.refuse],
            "upgrades": [
                {"when": u.when.describe(), "to": u.to, "reason": u.reason} for u in getattr(card, "upgrades", [])
            ],
            "numerics": card.numerics,
            "doc": card.doc,
        }
    )
    if card.kind == "skeleton":
        slot_name, slot = next(iter(card.slots.items()))
        out.update(
            {
                "dims": {k: {"default": v.default, "doc": v.doc, "multiple_of": v.multiple_of} for k, v in card.dims.items()},
                "loop": card.loop.model_dump(),
                "slot": {"name": slot_name, "accepts": slot.accepts, "default": slot.default, "doc": slot.doc},
                "fixed_stages": [
                    {"as": i.as_, "card": i.use, "params": {k: v for k, v in i.params.items() if not isinstance(v, m.ParamRef)},
                     "when": None if getattr(i, "when", TRUE) == TRUE else i.when.describe()}
                    for i in card.fixed_stages
                ],
                "slot_defaults": dict(card.slot_defaults),
                "left_out": list(card.left_out),
            }
        )
    return out


# --- pseudo-code -----------------------------------------------------------------------------------


def _arg(a: Any) -> str:
    if isinstance(a, Var):
        return a.name
    if isinstance(a, ScalarArg):
        return a.param if a.param else render_expr(a.expr, float_div=True)
    return str(a)


#: how a true flag reads in pseudo-code (default: its name)
_FLAG_TEXT = {"sat": "saturate"}


def op_text(op: COp) -> str:
    """One op as a line of readable pseudo-code (the op's ``OpSpec.pseudo``)."""
    spec = op_spec(op.op)
    fields: dict[str, str] = {"out": str(op.out), "op": op.op, "args": ", ".join(_arg(a) for a in op.args)}
    fields.update({f"arg{i}": _arg(a) for i, a in enumerate(op.args)})
    for key in spec.attrs:
        value = op.attrs[key]
        if key in ("min", "max"):  # a clamp of a scalar, as the kernel spells it
            fields[key] = "" if value is None else f".{key}({render_expr(value[0])})"
        elif key in ("extent", "value", "k"):  # one expression, not a shape
            fields[key] = render_expr(value[0])
        elif key in spec.shape_attrs:
            fields[key] = "" if value is None else "[" + ", ".join(render_expr(s) for s in value) + "]"
        elif isinstance(value, bool):
            fields[key] = f", {_FLAG_TEXT.get(key, key)}" if value else ""
        elif key == "mode":
            fields[key] = "" if value == "NONE" else f", {value}"
        elif key == "name":
            fields[key] = repr(value)
        else:
            fields[key] = str(value)
    return spec.pseudo.format(**fields)


def pseudo_code(cat: Catalogue, card: Any, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The atom's expanded flow for one set of parameters: stages with their op lines."""
    env = cat.param_defaults(card.id)
    env.update(params or {})
    try:
        exp = expand_atom(cat, card, env, None)
    except (FlowError, Unavailable) as exc:
        return [{"label": "(not available)", "unit": "", "hoist": False, "lines": [str(exc)]}]
    return expansion_code(exp)


def skeleton_expansion(cat: Catalogue, card: Any) -> Expansion:
    """The skeleton with its default slot atom and parameters, on the default platform (or the first)."""
    slot = next(iter(card.slots.values()))
    atom = cat.cards[slot.default]
    params = cat.slot_param_defaults(card, atom.id)
    profile = cat.platforms.get(DEFAULT_PLATFORM) or next(iter(cat.platforms.values()))
    env = skeleton_env(atom, params, profile.name, card.loop.candidates[0])
    return expand_skeleton(cat, card, env, atom, params, {}, profile)


def expansion_code(exp: Expansion) -> list[dict[str, Any]]:
    """Every stage of an expansion (hoisted ones first) with its ops as lines of pseudo-code."""
    return [
        {"label": s.label, "unit": s.unit, "hoist": s.hoist, "lines": [op_text(o) for o in s.ops]}
        for s in exp.prologue + exp.stages
    ]
