"""The resolver: a request (skeleton + atoms + parameters + dims + platform) -> a KernelPlan.

Composition rules (SPEC §3.4): the skeleton's one user slot is filled by ``--atoms`` — an atom
whose tag the slot accepts, or a set of atoms that is exactly the parts of such a composite
(``AT-03,AT-09`` is AT-10); bare parameters go to the slot, ``STAGE.param=value`` to a fixed stage;
upgrade rules on the atom apply (AT-10 + int8_w8a8 -> AT-11); refusal rules and platform features
are enforced; tiles are fitted to the platform; options follow the cards' advice. Everything is
checked before anything is written, and every problem is reported at once.
"""

from __future__ import annotations

import fnmatch
import math
import re
from typing import Any, Mapping

from ptosim.platform import Profile

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..vocab.errors import PatternGenError, Problem, did_you_mean
from ..vocab.expr import ExprError, evaluate, parse, simplify, substitute
from ..flow import CUBE_OPS, CStage, FlowError, Refused, Unavailable, Var, expand_skeleton, skeleton_env, tensor_decl
from .naming import instance_name
from .options import plan_options
from .kernel_plan import KernelPlan, Request, StagePlan, TensorPlan
from .tiling import default_vec_tile, eval_shape, fit_cube_tile, fit_vec_tile, vec_uses

__all__ = ["resolve", "coerce_param", "DEFAULT_PLATFORM", "NAME_RE"]

DEFAULT_PLATFORM = "a2a3"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=-]*$")
_DEFAULT_CUBE = {"m": [32, 32], "k": [128, 256], "n": [128, 256]}


def coerce_param(owner: str, name: str, spec: m.ParamSpec, value: Any) -> tuple[Any, Problem | None]:
    """A CLI/manifest value as the parameter's type; a Problem naming the valid values if not."""
    def problem(expected: str) -> tuple[Any, Problem]:
        hint = did_you_mean(str(value), [str(c) for c in spec.choices]) if spec.choices else ""
        return value, Problem("bad-param-value", f"{owner}: parameter {name!r} must be {expected}; got {value!r}{hint}")

    if spec.type == "bool":
        if isinstance(value, bool):
            return value, None
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True, None
        if text in ("false", "0", "no", "off"):
            return False, None
        return problem("true or false")
    if spec.type == "float":
        try:
            number = float(value)
        except (TypeError, ValueError):
            return problem("a number")
        if isinstance(value, bool) or not math.isfinite(number):
            return problem("a finite number")
        for bound, ok in (("gt", lambda b: number > b), ("ge", lambda b: number >= b), ("le", lambda b: number <= b)):
            b = getattr(spec, bound)
            if b is not None and not ok(b):
                return problem(f"{'>' if bound == 'gt' else '>=' if bound == 'ge' else '<='} {b}")
        return number, None
    if spec.type == "int":
        try:
            number = int(str(value))
        except ValueError:
            return problem("an integer")
        if spec.choices and number not in spec.choices:
            return problem("one of " + ", ".join(map(str, spec.choices)))
        return number, None
    text = str(value)
    for choice in spec.choices or []:
        if str(choice) == text or str(choice).lower() == text.lower():
            return choice, None
    return problem("one of " + ", ".join(map(str, spec.choices or [])))


def _pick_atom(cat: Catalogue, skeleton: m.SkeletonCard, atoms: tuple[str, ...]) -> tuple[Any, list[str]]:
    slot_name, slot = next(iter(skeleton.slots.items()))
    accepted = cat.slot_atoms(skeleton)
    valid = ", ".join(a.id for a in accepted)
    ids = [a.strip().upper() for a in atoms if a.strip()]
    if not ids:
        raise PatternGenError(Problem("slot-mismatch", f"--atoms is empty; {skeleton.id}'s slot {slot_name!r} takes one of {valid}"))
    unknown = [a for a in ids if a not in cat.cards]
    if unknown:
        raise PatternGenError(
            [Problem("unknown-card", f"unknown atom {a!r}" + did_you_mean(a, cat.cards) + f"; {skeleton.id} takes {valid}") for a in unknown]
        )
    if len(ids) == 1:
        card = cat.cards[ids[0]]
        if card not in accepted:
            raise PatternGenError(
                Problem(
                    "slot-mismatch",
                    f"{card.id} ({', '.join(card.tags)}) cannot fill {skeleton.id}'s slot {slot_name!r}, which takes "
                    f"{', '.join(slot.accepts)} atoms: {valid}",
                )
            )
        return card, []
    wanted = set(ids)
    for card in accepted:
        if set(cat.calls_of(card)) == wanted:
            return card, [f"{' + '.join(ids)} fill the slot as their composite {card.id} ({card.title}): the same kernel"]
    raise PatternGenError(
        Problem(
            "slot-mismatch",
            f"{' + '.join(ids)} do not make up an atom {skeleton.id}'s slot {slot_name!r} accepts; "
            + "; ".join(f"{a.id} = {' + '.join(cat.calls_of(a))}" for a in accepted),
        )
    )


def _slot_params(cat: Catalogue, skeleton: m.SkeletonCard, atom: Any, given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[Problem]]:
    specs = cat.effective_params(atom.id)
    defaults = cat.slot_param_defaults(skeleton, atom.id)
    values = dict(defaults)
    problems = []
    renames = cat.renames.get("params", {})
    for key, raw in given.items():
        if key not in specs:
            if key in renames:
                problems.append(Problem("unknown-param", f"parameter {key!r} was renamed {renames[key]!r}"))
            else:
                problems.append(
                    Problem(
                        "unknown-param",
                        f"{atom.id} has no parameter {key!r}; its parameters: {', '.join(list(specs) + ['unroll', 'platform'])}"
                        + did_you_mean(key, list(specs) + ["unroll", "platform"]),
                    )
                )
            continue
        value, problem = coerce_param(atom.id, key, specs[key], raw)
        if problem:
            problems.append(problem)
        else:
            values[key] = value
    return values, defaults, problems


def _stage_params(cat: Catalogue, skeleton: m.SkeletonCard, given: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[Problem]]:
    fixed = {i.as_: i for i in skeleton.stages if isinstance(i, m.UseItem)}
    out: dict[str, dict[str, Any]] = {}
    problems = []
    for stage, params in given.items():
        if stage not in fixed:
            slot = next(iter(skeleton.slots))
            problems.append(
                Problem(
                    "unknown-param",
                    f"{skeleton.id} has no fixed stage {stage!r}; fixed stages: {', '.join(fixed) or 'none'} (bare parameters go to the slot {slot!r})"
                    + did_you_mean(stage, fixed),
                )
            )
            continue
        callee = fixed[stage].use
        specs = cat.effective_params(callee)
        for key, raw in params.items():
            if key in fixed[stage].params:
                problems.append(
                    Problem(
                        "unknown-param",
                        f"{stage}.{key} is fixed by {skeleton.id} to {_fmt_value(fixed[stage].params[key])} (its inputs are declared for it); "
                        f"settable on {stage}: {', '.join(k for k in specs if k not in fixed[stage].params) or 'nothing'}",
                    )
                )
                continue
            if key not in specs:
                problems.append(Problem("unknown-param", f"stage {stage} ({callee}) has no parameter {key!r}; its parameters: {', '.join(specs)}" + did_you_mean(key, specs)))
                continue
            value, problem = coerce_param(f"stage {stage} ({callee})", key, specs[key], raw)
            if problem:
                problems.append(problem)
            elif value != specs[key].default:  # a default setting is no setting: one kernel, one name
                out.setdefault(stage, {})[key] = value
    return out, problems


def _fmt_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(getattr(value, "param", value))


#: No model dim comes near this; a larger value is a typo, and the golden could not allocate its tensors.
MAX_DIM = 1 << 20
#: Instance names are folder names; keep them well under the 255-byte file name limit.
MAX_NAME = 160


def _dims(skeleton: m.SkeletonCard, given: Mapping[str, Any]) -> tuple[dict[str, int], list[Problem]]:
    dims = {k: v.default for k, v in skeleton.dims.items()}
    problems = []
    for key, raw in given.items():
        if key not in skeleton.dims:
            problems.append(Problem("bad-dim", f"{skeleton.id} has no dim {key!r}; dims: {', '.join(skeleton.dims)}" + did_you_mean(key, skeleton.dims)))
            continue
        try:
            value = int(str(raw))
        except ValueError:
            problems.append(Problem("bad-dim", f"dim {key} must be a positive integer; got {raw!r}"))
            continue
        spec = skeleton.dims[key]
        if value <= 0:
            problems.append(Problem("bad-dim", f"dim {key} must be a positive integer; got {value}"))
        elif value > MAX_DIM:
            problems.append(Problem("bad-dim", f"dim {key}={value} is larger than {MAX_DIM}; model dims are hidden sizes and head counts"))
        elif value % spec.multiple_of:
            problems.append(Problem("bad-dim", f"dim {key}={value} must be a multiple of {spec.multiple_of} ({spec.doc or 'alignment'})"))
        else:
            dims[key] = value
    return dims, problems


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


def _fit_stage(cat: Catalogue, skeleton: m.SkeletonCard, stage: CStage, values: Mapping[str, int], profile: Profile) -> StagePlan:
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


def _tensor_plans(decls: Mapping[str, m.TensorDecl], exp_types: Mapping[str, Any], env: Mapping[str, Any], values: Mapping[str, int], token: str) -> list[TensorPlan]:
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


def resolve(cat: Catalogue, req: Request) -> KernelPlan:
    """Resolve a request into a plan; PatternGenError lists every problem found."""
    skeleton = cat.cards.get(req.skeleton.upper())
    if skeleton is None or skeleton.kind != "skeleton":
        names = [c.id for c in cat.skeletons()]
        raise PatternGenError(Problem("unknown-card", f"unknown skeleton {req.skeleton!r}; skeletons: {', '.join(names)}" + did_you_mean(req.skeleton.upper(), names)))
    problems: list[Problem] = []
    try:
        atom, notes = _pick_atom(cat, skeleton, req.atoms)
    except PatternGenError as exc:  # keep going: report the atoms' problems with all the others
        atom, notes = None, []
        problems += exc.problems
    given = dict(req.params)
    unroll_raw = given.pop("unroll", None)
    param_platform = given.pop("platform", None)
    if param_platform is not None and req.platform is not None and str(param_platform) != str(req.platform):
        problems.append(Problem("bad-param-value", f"--param platform={param_platform} contradicts --platform {req.platform}; give the platform once"))
    platform = str(param_platform or req.platform or DEFAULT_PLATFORM)
    if platform not in cat.platforms:
        problems.append(Problem("unknown-platform", f"unknown platform {platform!r}; platforms: {', '.join(sorted(cat.platforms))}" + did_you_mean(platform, cat.platforms)))
    params, defaults, ps = _slot_params(cat, skeleton, atom, given) if atom is not None else ({}, {}, [])
    problems += ps
    for up in atom.upgrades if atom is not None else []:
        if not ps and up.when.holds(params):
            target = cat.card(up.to)
            notes.append(f"{atom.id} with {up.when.describe()} becomes {target.id} ({target.title}): {' '.join(up.reason.split())}")
            atom = target
            params, defaults, more = _slot_params(cat, skeleton, atom, {k: v for k, v in params.items() if k in cat.effective_params(atom.id)})
            problems += more
            break
    unroll = skeleton.loop.candidates[0]
    if unroll_raw is not None:
        try:
            unroll = int(str(unroll_raw))
        except ValueError:
            unroll = -1
        if unroll not in skeleton.loop.candidates:
            problems.append(Problem("bad-param-value", f"{skeleton.id}: unroll must be one of {', '.join(map(str, skeleton.loop.candidates))}; got {unroll_raw!r}"))
    stage_params, sp = _stage_params(cat, skeleton, req.stage_params)
    problems += sp
    dims, dp = _dims(skeleton, req.dims)
    problems += dp
    if req.name is not None and (not NAME_RE.match(req.name) or "/" in req.name or "\\" in req.name or req.name in (".", "..")):
        problems.append(Problem("bad-name", f"--name {req.name!r} must be a plain folder name (letters, digits, _ . = -), no path separators"))
    elif req.name is not None and len(req.name) > MAX_NAME:
        problems.append(Problem("bad-name", f"--name is {len(req.name)} characters; use at most {MAX_NAME}"))
    if problems:
        raise PatternGenError(problems)
    profile = cat.platform(platform)
    env = skeleton_env(atom, params, platform, unroll)
    example_t = 2 * unroll
    values = {**dims, skeleton.loop.factor: unroll, skeleton.token_axis: example_t, skeleton.loop.index: 0}
    try:
        exp = expand_skeleton(cat, skeleton, env, atom, params, stage_params, profile, values)
    except Refused as exc:
        raise PatternGenError(Problem("composition-refused", f"{skeleton.id} + {atom.id} refused — {exc.reason}")) from None
    except Unavailable as exc:
        have = [p for p, prof in sorted(cat.platforms.items()) if p != platform and _has(prof, exc.needs)]
        hint = f"; use --platform {have[0]}" if have else ""
        changed = ", ".join(f"{k}={v}" for k, v in params.items() if defaults.get(k) != v)
        what = f"{skeleton.id} + {atom.id}" + (f" with {changed}" if changed else "")
        raise PatternGenError(Problem("composition-refused", f"{what} cannot run on {platform}: {exc.reason}{hint}")) from None
    except FlowError as exc:
        raise PatternGenError(Problem(exc.code, exc.message, **cat.where(exc.card, exc.path))) from None  # type: ignore[arg-type]
    except ExprError as exc:
        raise PatternGenError(Problem("bad-dim", f"{skeleton.id}: {exc}")) from None
    try:
        prologue = [_fit_stage(cat, skeleton, s, values, profile) for s in exp.prologue]
        stages = [_fit_stage(cat, skeleton, s, values, profile) for s in exp.stages]
    except ExprError as exc:
        raise PatternGenError(Problem("bad-dim", f"{skeleton.id}: {exc}")) from None
    used = list(dict.fromkeys(exp.cards_used))
    advice_cards = [skeleton, atom] + [cat.cards[c] for c in used if c not in (skeleton.id, atom.id)]
    options = plan_options(advice_cards, env, platform, req.options, exp.stages, exp.roles)
    # An input the expanded flow never reads (e.g. gamma_ckv with kv_norm.has_gamma=false) is not a kernel argument.
    read = {a.name for s in exp.prologue + exp.stages for op in s.ops for a in op.args if isinstance(a, Var)}
    unused = [n for n in exp.inputs if n not in read]
    for n in unused:
        notes.append(f"input {n} is not used with these settings and is left out of the kernel")
    inputs = _tensor_plans(skeleton.inputs, {k: v for k, v in exp.inputs.items() if k in read}, env, values, skeleton.token_axis)
    outputs = _tensor_plans(skeleton.outputs, exp.outputs, env, values, skeleton.token_axis)
    name = req.name or instance_name(
        cat.naming, skeleton.id, atom.id, params, defaults, unroll, platform, dims, {k: v.default for k, v in skeleton.dims.items()}, stage_params
    )
    for s in prologue + stages:
        notes += [f"{s.label}: {n}" for n in s.fit_notes]
    notes += options.notes
    return KernelPlan(
        name=name,
        skeleton=skeleton.id,
        skeleton_title=skeleton.title,
        atoms_requested=[a.strip().upper() for a in req.atoms],
        atom=atom.id,
        slot=next(iter(skeleton.slots)),
        params=params,
        param_defaults=defaults,
        stage_params=stage_params,
        dims=dims,
        dim_defaults={k: v.default for k, v in skeleton.dims.items()},
        platform=platform,
        unroll=unroll,
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
        option_levels=options.levels,
    )


def _has(profile: Profile, needs: str) -> bool:
    """Whether ``profile`` has the feature or dtype an Unavailable says is missing."""
    return profile.has_feature(needs) or any(needs in (d.short, d.name) for d in profile.dtypes)
