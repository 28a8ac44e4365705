"""Fitting an expanded stage to the platform: its tile (card advice, then ptosim's rules) and
the plans of the kernel's tensors."""

from __future__ import annotations

from dataclasses import replace

import fnmatch
from typing import Any, Mapping

from ptosim.platform import Profile

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..flow import CStage, tensor_decl
from ..vocab.errors import PatternGenError, Problem
from ..vocab.expr import ExprError, evaluate, parse, simplify, substitute
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


def fit_stage(
    cat: Catalogue,
    skeleton: m.SkeletonCard,
    stage: CStage,
    values: Mapping[str, int],
    profile: Profile,
    override: Any = None,
) -> StagePlan:
    """The stage's tile: ``override`` (``--tile``) if given — refused, not shrunk, when the platform
    does not take it — else the card's advice fitted to the platform (a tile-unfit refusal then
    carries the skeleton's ``performance.unfit``: what to use instead)."""
    has_cube = any(op.op in CUBE_OPS for op in stage.ops)
    uses = vec_uses(stage, values)
    split_k = False
    if has_cube:
        advice, _ = _tile_advice(cat, skeleton, stage, "cube")
        # the card's split-K goes with the stage, whichever tile it ends up with (a --tile, the tuner)
        split_k = bool(advice is not None and advice.cube is not None and advice.cube.split_k)
    if override is not None:
        plan = _overridden(stage, uses, has_cube, override, profile)
        return replace(plan, split_k=split_k) if split_k else plan
    try:
        return _fitted(cat, skeleton, stage, values, profile, has_cube, uses, split_k)
    except PatternGenError as exc:
        hint = skeleton.performance.unfit.strip()
        if not hint or not any(p.code == "tile-unfit" for p in exc.problems):
            raise
        raise PatternGenError([replace(p, message=f"{p.message}; {skeleton.id}: {hint}") if p.code == "tile-unfit" else p for p in exc.problems]) from None


def _fitted(cat: Catalogue, skeleton: m.SkeletonCard, stage: CStage, values: Mapping[str, int], profile: Profile, has_cube: bool, uses: Any, split_k: bool) -> StagePlan:
    """The card's advice (or a default) fitted to the platform: tile-unfit when it cannot shrink."""
    vec = cube = None
    notes: list[str] = []
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
            other = next((x for x in advice.instead if x.holds(values)), None)
            shape = advice.vec if other is None else other.vec
            start = [int(evaluate(simplify(substitute(parse(v), dims)), values)) for v in shape]
            if other is not None:
                notes.append(f"vec {start} instead of the advised {list(advice.vec)}: {other.why}")
        else:
            start = default_vec_tile(uses)
            notes.append(f"no vec tile advice for {stage.label!r}: {start} from its widest op")
        vec, fit = fit_vec_tile(stage.label, uses, start, profile)
        notes += fit
    else:
        # a stage that only moves data takes no tile, unless its card asks for one (PyPTO copies
        # some views, and a copy needs a vec tile in force)
        advice, dims = _tile_advice(cat, skeleton, stage, "vec")
        if advice is not None and advice.vec is not None:
            vec = [int(evaluate(simplify(substitute(parse(v), dims)), values)) for v in advice.vec]
            notes.append(f"vec tile {list(vec)} from the card: the stage only moves data")
    return StagePlan(stage.label, stage.unit, stage.card, stage.title, stage.hoist, vec, cube, notes, stage, split_k)


def _overridden(stage: CStage, uses: Any, has_cube: bool, override: Any, profile: Profile) -> StagePlan:
    is_cube = isinstance(override, Mapping)
    if is_cube != has_cube or (not has_cube and not uses):
        want = "a cube tile m:AxB,k:CxD,n:ExF" if has_cube else "a vec tile RxC" if uses else "no tile (it moves data only)"
        raise PatternGenError(Problem("tile-unfit", f"--tile {stage.label}: the stage takes {want}"))
    if is_cube:
        fitted, fit = fit_cube_tile(stage.label, stage.ops, {k: list(v) for k, v in override.items()}, profile)
        same = all(list(fitted[k]) == list(override[k]) for k in override)
    else:
        fitted, fit = fit_vec_tile(stage.label, uses, list(override), profile)
        same = list(fitted) == list(override)
    if not same:
        raise PatternGenError(Problem("tile-unfit", f"--tile {stage.label}={_tile_text(override)} does not fit {profile.name}: " + "; ".join(fit)))
    notes = [f"tile {_tile_text(override)} from --tile"]
    vec, cube = (None, fitted) if is_cube else (fitted, None)
    return StagePlan(stage.label, stage.unit, stage.card, stage.title, stage.hoist, vec, cube, notes, stage)


def _tile_text(tile: Any) -> str:
    if isinstance(tile, Mapping):
        return ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in tile.items())
    return "x".join(map(str, tile))


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
        tol = None if rule is None else {k: getattr(rule, k) for k in ("atol", "rtol", "ratio", "differ", "ties", "why") if getattr(rule, k) is not None}
        try:
            block = int(eval_shape([decl.block_size], values)[0]) if decl.block_size is not None else None
            concrete = list(eval_shape(shape, values))
        except ExprError as exc:
            raise ExprError(f"{name} [{', '.join(symbolic)}]: {exc}") from None
        out.append(TensorPlan(name, symbolic, concrete, ttype.dtype, decl.role, axis, tol, decl.index_into, block))
    return out


