"""Fitting an expanded stage to the platform: its tile (card advice, then ptosim's rules) and
the plans of the kernel's tensors."""

from __future__ import annotations

import fnmatch
from typing import Any, Mapping

from ptosim.platform import Profile

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..flow import CStage, tensor_decl
from ..vocab.expr import evaluate, parse, simplify, substitute
from ..vocab.ops import CUBE_OPS
from .kernel_plan import StagePlan, TensorPlan
from .tiling import default_vec_tile, eval_shape, fit_cube_tile, fit_vec_tile, vec_uses

__all__ = ["fit_stage", "tensor_plans"]

_DEFAULT_CUBE = {"m": [32, 32], "k": [128, 256], "n": [128, 256]}


def _tile_advice(cat: Catalogue, skeleton: m.SkeletonCard, stage: CStage, kind: str) -> tuple[m.TileAdvice | None, Mapping[str, Any]]:
    """The tile advice for a stage — the skeleton's (by label or glob) before the stage's own
    card's (by its local label) — and the dims to evaluate it with."""
    for pattern, advice in skeleton.performance.tiles.items():
        if (advice.vec is not None) == (kind == "vec") and (pattern == stage.label or fnmatch.fnmatchcase(stage.label, pattern)):
            return advice, {}
    card = cat.cards.get(stage.card)
    if card is not None:
        advice = card.performance.tiles.get(stage.local_label)
        if advice is not None and (advice.vec is not None) == (kind == "vec"):
            return advice, stage.dims
    return None, {}


def fit_stage(cat: Catalogue, skeleton: m.SkeletonCard, stage: CStage, values: Mapping[str, int], profile: Profile) -> StagePlan:
    vec = cube = None
    notes: list[str] = []
    has_cube = any(op.op in CUBE_OPS for op in stage.ops)
    uses = vec_uses(stage, values)
    if has_cube:
        advice, _ = _tile_advice(cat, skeleton, stage, "cube")
        start = advice.cube.model_dump() if advice is not None and advice.cube is not None else dict(_DEFAULT_CUBE)
        if advice is None:
            notes.append(f"no cube tile advice for {stage.label!r}: default {start}")
        cube, fit = fit_cube_tile(stage.label, stage.ops, start, profile)
        notes += fit
    elif uses:
        advice, dims = _tile_advice(cat, skeleton, stage, "vec")
        if advice is not None and advice.vec is not None:
            start = [int(evaluate(simplify(substitute(parse(v), dims)), values)) for v in advice.vec]
        else:
            start = default_vec_tile(uses)
            notes.append(f"no vec tile advice for {stage.label!r}: {start} from its widest op")
        vec, fit = fit_vec_tile(stage.label, uses, start, profile)
        notes += fit
    return StagePlan(stage.label, stage.unit, stage.card, stage.title, stage.hoist, vec, cube, notes, stage)


def tensor_plans(decls: Mapping[str, m.TensorDecl], exp_types: Mapping[str, Any], env: Mapping[str, Any], values: Mapping[str, int], token: str) -> list[TensorPlan]:
    out = []
    for name, decl in decls.items():
        if name not in exp_types:
            continue
        shape, _ = tensor_decl(decl, env)
        ttype = exp_types[name]
        symbolic = [str(s) for s in shape]
        axis = next((i for i, s in enumerate(symbolic) if s == token), None)
        rule = next((r for r in decl.tolerance if r.when.holds(env)), None)
        tol = None if rule is None else {k: getattr(rule, k) for k in ("atol", "rtol", "ratio", "why") if getattr(rule, k) is not None}
        out.append(TensorPlan(name, symbolic, list(eval_shape(shape, values)), ttype.dtype, decl.role, axis, tol))
    return out


