"""The resolver: a request (skeleton + atoms + parameters + dims + platform) -> a KernelPlan.

Composition rules and value checks are ``coerce``'s; the flow expansion is
``flow``'s; tile fitting is ``stage_fit``'s; options are ``options``'; the name is ``naming``'s.
``resolve`` runs them in that order and translates what the flow raises into problems: every
problem is found before anything is written, and reported at once.
"""

from __future__ import annotations

from typing import Any

from ptosim.option_versions import version_problems
from ptosim.platform import Profile
from ptosim.profile_schema import validate_cost_section

from ..catalogue.catalogue import Catalogue
from ..flow import (
    Expansion,
    FlowError,
    Refused,
    Unavailable,
    Var,
    expand_skeleton,
    skeleton_env,
)
from ..vocab.errors import PatternGenError, Problem, did_you_mean
from ..vocab.expr import ExprError, names, parse
from ..vocab.targets import target_spec
from .kernel_plan import KernelPlan, Request
from .options import plan_options
from .coerce import DEFAULT_PLATFORM, NAME_RE, Coerced, coerce_param, coerce_request
from .stage_fit import fit_stage, tensor_plans
from .tiling import vec_uses
from .test_points import largest_test_T, test_values, verify_T

__all__ = ["resolve", "coerce_param", "DEFAULT_PLATFORM", "NAME_RE"]


def _expand(cat: Catalogue, c: Coerced, env: dict[str, Any], values: dict[str, int]) -> Expansion:
    """The skeleton's flow with the slot filled; flow exceptions become problems."""
    skeleton, atom, platform = c.skeleton, c.atom, c.platform
    try:
        stage_params = {k: {**c.stage_defaults.get(k, {}), **c.stage_params.get(k, {})} for k in {*c.stage_defaults, *c.stage_params}}
        return expand_skeleton(cat, skeleton, env, atom, c.params, stage_params, cat.platform(platform), values)
    except Refused as exc:
        raise PatternGenError(Problem("composition-refused", f"{skeleton.id} + {atom.id} refused — {exc.reason}"),
                              refused_by=exc.card) from None
    except Unavailable as exc:
        have = [p for p, prof in sorted(cat.platforms.items()) if p != platform and _has(prof, exc.needs)]
        hint = f"; use --platform {have[0]}" if have else ""
        changed = ", ".join(f"{k}={v}" for k, v in c.params.items() if c.defaults.get(k) != v)
        what = f"{skeleton.id} + {atom.id}" + (f" with {changed}" if changed else "")
        raise PatternGenError(Problem("composition-refused", f"{what} cannot run on {platform}: {exc.reason}{hint}")) from None
    except FlowError as exc:
        message = exc.message
        if exc.code == "bad-expression" and values:  # a card expression is fine, these dims are not: say which
            dims = ", ".join(f"{k}={values[k]}" for k in skeleton.dims if k in values)
            message += f" (building {skeleton.id} + {atom.id} at {dims}; change --dim)"
        raise PatternGenError(Problem(exc.code, message, **cat.where(exc.card, exc.path))) from None  # type: ignore[arg-type]
    except ExprError as exc:
        raise PatternGenError(Problem("bad-dim", f"{skeleton.id}: {exc}")) from None


def resolve(cat: Catalogue, req: Request) -> KernelPlan:
    """Resolve a request into a plan; PatternGenError lists every problem found."""
    c = coerce_request(cat, req)
    skeleton, atom = c.skeleton, c.atom
    notes = list(c.notes)
    profile = cat.platform(c.platform)
    env = skeleton_env(atom, c.params, c.platform, c.unroll[0])
    example_t = largest_test_T(c.unroll)
    values = {**c.dims, skeleton.loop.factor: c.unroll[0], skeleton.token_axis: example_t, skeleton.loop.index: 0}
    exp = _expand(cat, c, env, values)
    labels = [s.label for s in exp.prologue + exp.stages]
    unknown = [label for label in req.tiles if label not in labels]
    if unknown:
        raise PatternGenError([Problem("tile-unfit", f"--tile {label}: no stage has that label; stages: {', '.join(labels)}" + did_you_mean(label, labels)) for label in unknown])
    try:
        prologue = [fit_stage(cat, skeleton, s, values, profile, req.tiles.get(s.label)) for s in exp.prologue]
        stages = [fit_stage(cat, skeleton, s, values, profile, req.tiles.get(s.label)) for s in exp.stages]
        _check_paths(cat, skeleton, stages, values, profile, c.unroll)
    except ExprError as exc:
        raise PatternGenError(Problem("bad-dim", f"{skeleton.id}: {exc}")) from None
    used = list(dict.fromkeys(exp.cards_used))
    advice_cards = [skeleton, atom] + [cat.cards[u] for u in used if u not in (skeleton.id, atom.id)]
    options = plan_options(advice_cards, env, c.platform, req.options, exp.stages, exp.roles)
    target = target_spec(c.target)
    refused = version_problems(target.pypto_version, options.runtime, options.pass_)
    if refused:
        raise PatternGenError([Problem("bad-option", f"--target {target.name}: {why}; drop the option, or generate for another target") for why in refused])
    if target.cannot_run(c.platform):
        notes.append(f"target {target.name} on {c.platform}: {target.cannot_run(c.platform)}")
    # An input the expanded flow never reads (e.g. gamma_ckv with kv_norm.has_gamma=false) is not a kernel argument.
    read = {a.name for s in exp.prologue + exp.stages for op in s.ops for a in op.args if isinstance(a, Var)}
    for n in (n for n in exp.inputs if n not in read):
        notes.append(f"input {n} is not used with these settings and is left out of the kernel")
    try:
        inputs = tensor_plans(skeleton.inputs, {k: v for k, v in exp.inputs.items() if k in read}, env, values, skeleton.token_axis)
        outputs = tensor_plans(skeleton.outputs, exp.outputs, env, values, skeleton.token_axis)
    except ExprError as exc:  # a shape fine at the card's defaults and not at these dims
        dims = ", ".join(f"{k}={values[k]}" for k in skeleton.dims if k in values)
        raise PatternGenError(Problem("bad-dim", f"{skeleton.id}: {exc} (at {dims}; change --dim)")) from None
    _check_capacity(inputs, outputs, example_t, c.unroll)
    _check_blocks(inputs, outputs)
    for s in prologue + stages:
        notes += [f"{s.label}: {n}" for n in s.fit_notes]
    notes += options.notes
    return KernelPlan(
        naming=cat.naming,
        skeleton=skeleton.id,
        skeleton_title=skeleton.title,
        atoms_requested=[a.strip().upper() for a in req.atoms if a.strip()] or [next(iter(skeleton.slots.values())).default],
        atom=atom.id,
        slot=next(iter(skeleton.slots)),
        params=c.params,
        param_defaults=c.defaults,
        stage_params=c.stage_params,
        dims=c.dims,
        dim_defaults={k: v.default for k, v in skeleton.dims.items()},
        platform=c.platform,
        target=c.target,
        unroll=c.unroll,
        loop=skeleton.loop.model_dump(),
        inputs=inputs,
        outputs=outputs,
        runtime_options=options.runtime,
        pass_options=options.pass_,
        operation_options=options.operation,
        cache_policy=options.cache_policy,
        prologue=prologue,
        stages=stages,
        notes=notes,
        left_out=list(skeleton.left_out),
        cards_used=[skeleton.id] + list(dict.fromkeys([atom.id] + used)),
        request=req,
        example_T=example_t,
        cycles_per_us=validate_cost_section(cat.platforms[c.platform].raw.get("cost"), c.platform).cycles_per_us,
        option_levels=options.levels,
    )


def _check_paths(cat: Catalogue, skeleton: Any, stages: list, values: dict, profile: Any, unroll: tuple[int, ...]) -> None:
    """Every factor of the unroll list is its own compiled path with the main path's tiles (the
    kernel sets them once): each path's shapes must take them, or the factor is refused by name."""
    factor = skeleton.loop.factor
    for f in unroll[1:]:
        at = {**values, factor: f}
        for s in stages:
            tile = s.cube_tile if s.cube_tile is not None else s.vec_tile
            if tile is None or (s.cube_tile is None and not vec_uses(s.stage, at)):
                continue  # a data-only stage's tile (a copy's) is not fitted
            try:
                fit_stage(cat, skeleton, s.stage, at, profile, tile)
            except PatternGenError as exc:
                raise PatternGenError([Problem(p.code, f"unroll factor {f}: {p.message}; drop {f} from the unroll list") for p in exc.problems]) from None


def _check_blocks(inputs: list, outputs: list) -> None:
    """A paged cache a block table reads must give each of the golden test's sequences (up to 4
    decode sequences, or 2 prefill ones of up to 2 x 4 tokens) at least the blocks its tokens need."""
    for t in inputs:
        if t.role != "block_table":
            continue
        cache = next(x for x in inputs + outputs if x.name == t.index_into)
        blocks = cache.default_shape[0] // t.block_size
        if blocks < 4 or (blocks // 2) * t.block_size < 5:
            raise PatternGenError(Problem(
                "bad-dim",
                f"{cache.name} holds {blocks} blocks of {t.block_size} tokens: the golden test needs 4 sequences of at least one block "
                f"(and 2 sequences of 5 tokens); raise --dim " + " or --dim ".join(sorted(names(parse(cache.shape[0])))),
            ))


def _check_capacity(inputs: list, outputs: list, tokens: int, unroll: tuple[int, ...]) -> None:
    """A cache an index input selects rows of must hold a slot for every token the golden test
    or the verifier writes (``largest_test_T``), or the instance could never pass its own test."""
    for t in inputs:
        cache = next((o for o in outputs if o.name == t.index_into), None) if t.index_into else None
        if cache is not None and cache.default_shape[0] < tokens:
            raise PatternGenError(Problem(
                "bad-dim",
                f"{cache.name} holds {cache.shape[0]} = {cache.default_shape[0]} slots, fewer than the {tokens} tokens "
                f"its tests write (the golden test's T up to {max(test_values(unroll))} with unroll {list(unroll)}, PyPTO's verifier's up to {max(verify_T(unroll))}); raise "
                + " or ".join(f"--dim {d}" for d in sorted(names(parse(cache.shape[0]))))
                + ", or pick a smaller --unroll",
            ))


def _has(profile: Profile, needs: str) -> bool:
    """Whether ``profile`` has the feature or dtype an Unavailable says is missing."""
    return profile.has_feature(needs) or any(needs in (d.short, d.name) for d in profile.dtypes)
