"""Request coercion: CLI/manifest strings -> typed, checked values, every problem at once.

Which skeleton and atom (composition of ``--atoms``), the slot's and fixed stages'
parameters as their declared types, dims within their bounds, the unroll factor among the card's
candidates, the platform and the instance name. ``coerce_request`` returns them as a
``Coerced``; nothing here expands a flow or fits a tile.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ptosim.platform import DEFAULT_PLATFORM

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..vocab.errors import PatternGenError, Problem, did_you_mean
from ..vocab.targets import DEFAULT_TARGET, TARGETS
from ..vocab.text import parse_float, parse_int, quote
from .dim_bounds import bound_problems
from .kernel_plan import Request

from .regime import apply_regime, dim_step_problems, regime_note, regime_params, select_regime
from .unroll import UnrollError, parse_unroll

__all__ = ["Coerced", "coerce_request", "coerce_param", "parse_tile", "DEFAULT_PLATFORM", "NAME_RE", "MAX_DIM", "MAX_NAME"]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.=-]*$")


def coerce_param(owner: str, name: str, spec: m.ParamSpec, value: Any) -> tuple[Any, Problem | None]:
    """A CLI/manifest value as the parameter's type; a Problem naming the valid values if not."""
    def problem(expected: str) -> tuple[Any, Problem]:
        hint = did_you_mean(str(value), [str(c) for c in spec.choices]) if spec.choices else ""
        return value, Problem("bad-param-value", f"{owner}: parameter {name!r} must be {expected}; got {quote(value)}{hint}")

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
            number = parse_float(value)
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
            number = parse_int(value)
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


def pick_atom(cat: Catalogue, skeleton: m.SkeletonCard, atoms: tuple[str, ...]) -> tuple[Any, list[str]]:
    slot_name, slot = next(iter(skeleton.slots.items()))
    accepted = cat.slot_atoms(skeleton)
    valid = ", ".join(a.id for a in accepted)
    ids = [a.strip().upper() for a in atoms if a.strip()]
    if not ids and getattr(slot, "default", None):
        return cat.card(slot.default), [f"--atoms not given: {skeleton.id}'s slot {slot_name!r} takes its default {slot.default}"]
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


def slot_params(cat: Catalogue, skeleton: m.SkeletonCard, atom: Any, given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[Problem]]:
    specs = cat.slot_specs(skeleton, atom.id)
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


def stage_params(cat: Catalogue, skeleton: m.SkeletonCard, given: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[Problem]]:
    fixed = {i.as_: i for i in skeleton.fixed_stages}
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
            elif value != specs[key].default or specs[key].rsqrt_default_of is not None:  # a default setting is no setting: one kernel, one name (a dim's default is compared once dims are known)
                out.setdefault(stage, {})[key] = value
    return out, problems


def _fmt_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(getattr(value, "param", value))


#: No model dim comes near this; a larger value is a typo, and the golden could not allocate its tensors.
MAX_DIM = 1 << 20
#: Instance names are folder names; keep them well under the 255-byte file name limit.
MAX_NAME = 160


def coerce_dims(skeleton: m.SkeletonCard, given: Mapping[str, Any]) -> tuple[dict[str, int], list[Problem]]:
    dims = {k: v.default for k, v in skeleton.dims.items()}
    problems = []
    for key, raw in given.items():
        if key not in skeleton.dims:
            problems.append(Problem("bad-dim", f"{skeleton.id} has no dim {key!r}; dims: {', '.join(skeleton.dims)}" + did_you_mean(key, skeleton.dims)))
            continue
        try:
            value = parse_int(raw)
        except ValueError:
            problems.append(Problem("bad-dim", f"dim {key} must be a positive integer; got {quote(raw)}"))
            continue
        spec = skeleton.dims[key]
        if value <= 0:
            problems.append(Problem("bad-dim", f"dim {key} must be a positive integer; got {value}"))
        elif value > MAX_DIM:
            problems.append(Problem("bad-dim", f"dim {key}={value} is larger than {MAX_DIM}; model dims are hidden sizes and head counts"))
        else:  # its multiple_of is checked once the regime is known (dim_step_problems)
            dims[key] = value
    for key, spec in skeleton.dims.items():
        other = spec.multiple_of_dim
        if other in dims and dims[key] % dims[other]:
            problems.append(Problem(
                "bad-dim", f"dim {key}={dims[key]} must be a multiple of {other}={dims[other]} ({spec.doc or 'alignment'}); change --dim {key} or --dim {other}"
            ))
    problems += bound_problems(skeleton, dims)
    return dims, problems



@dataclass(frozen=True)
class Coerced:
    """A request with every value checked and typed (the resolver's input)."""

    skeleton: m.SkeletonCard
    atom: Any  #: the card that fills the slot, after composition and upgrades
    notes: list[str]
    params: dict[str, Any]
    defaults: dict[str, Any]
    stage_params: dict[str, dict[str, Any]]
    dims: dict[str, int]
    platform: str
    unroll: tuple[int, ...]  #: the unroll_list as PyPTO runs it: largest first, ending with 1
    target: str
    #: fixed stages' defaults that follow a dim (a softmax scale at this head dim): passed to the
    #: flow, not part of the name (a default is no setting)
    stage_defaults: dict[str, dict[str, Any]] = field(default_factory=dict)


def _spelled(raw: Any) -> str:
    return ",".join(map(str, raw)) if isinstance(raw, (list, tuple)) else str(raw)


def _skeleton(cat: Catalogue, req: Request) -> m.SkeletonCard:
    skeleton = cat.cards.get(req.skeleton.upper())
    if skeleton is None or skeleton.kind != "skeleton":
        names = [c.id for c in cat.skeletons()]
        raise PatternGenError(Problem("unknown-card", f"unknown skeleton {req.skeleton!r}; skeletons: {', '.join(names)}" + did_you_mean(req.skeleton.upper(), names)))
    return skeleton


def _name_problems(name: str | None) -> list[Problem]:
    if name is None:
        return []
    if not NAME_RE.match(name) or "/" in name or "\\" in name or name in (".", ".."):
        return [Problem("bad-name", f"--name {name!r} must be a plain folder name (letters, digits, _ . = -), no path separators")]
    if len(name) > MAX_NAME:
        return [Problem("bad-name", f"--name is {len(name)} characters; use at most {MAX_NAME}")]
    return []


def coerce_request(cat: Catalogue, req: Request) -> Coerced:
    """Check and type every value of ``req``; PatternGenError lists every problem found."""
    skeleton = _skeleton(cat, req)
    problems: list[Problem] = []
    try:
        atom, notes = pick_atom(cat, skeleton, req.atoms)
    except PatternGenError as exc:  # keep going: report the atoms' problems with all the others
        atom, notes = None, []
        problems += exc.problems
    given = dict(req.params)
    unroll_raw = given.pop("unroll", None)
    param_platform = given.pop("platform", None)
    if param_platform is not None and req.platform is not None and str(param_platform) != str(req.platform):
        problems.append(Problem("bad-param-value", f"--param platform={param_platform} contradicts --platform {req.platform}; give the platform once"))
    if req.platform is not None and not str(req.platform).strip():
        problems.append(Problem("unknown-platform", f"--platform is empty; platforms: {', '.join(sorted(cat.platforms))}"))
    platform = str(param_platform or req.platform or DEFAULT_PLATFORM)
    if platform not in cat.platforms:
        problems.append(Problem("unknown-platform", f"unknown platform {platform!r}; platforms: {', '.join(sorted(cat.platforms))}" + did_you_mean(platform, cat.platforms)))
    params, defaults, ps = slot_params(cat, skeleton, atom, given) if atom is not None else ({}, {}, [])
    problems += ps
    for up in atom.upgrades if atom is not None else []:
        if not ps and up.when.holds(params):
            target = cat.card(up.to)
            notes.append(f"{atom.id} with {up.when.describe()} becomes {target.id} ({target.title}): {' '.join(up.reason.split())}")
            atom = target
            params, defaults, more = slot_params(cat, skeleton, atom, {k: v for k, v in params.items() if k in cat.slot_specs(skeleton, atom.id)})
            problems += more
            break
    stages, sp = stage_params(cat, skeleton, req.stage_params)
    problems += sp
    dims, dp = coerce_dims(skeleton, req.dims)
    problems += dp
    if not (dp or ps or sp) and atom is not None:
        derived, problems_d = dim_defaults(cat, skeleton, atom, dims)
        problems += problems_d
        defaults.update(derived.get("", {}))
        params.update({k: v for k, v in derived.get("", {}).items() if k not in given})
        stated = [(k, params[k], v) for k, v in derived.get("", {}).items() if k in given and params.get(k) != v]
        stated += [(f"{st}.{k}", stages[st][k], v) for st, vals in derived.items() if st for k, v in vals.items() if k in stages.get(st, {}) and stages[st][k] != v]
        notes += [f"{name}={value!r} as given; the head dim's default would be {default!r} (1/sqrt of the dim): "
                  "right for a model that scales otherwise (YaRN mscale), wrong otherwise" for name, value, default in stated]
        stage_defaults = {k: v for k, v in derived.items() if k}
        for stage, values in stage_defaults.items():  # a stated value equal to the derived default is no setting
            for key, value in values.items():
                if stages.get(stage, {}).get(key) == value:
                    del stages[stage][key]
        stages = {k: v for k, v in stages.items() if v}
    else:
        stage_defaults = {}
    regime = select_regime(skeleton, dims, params) if not dp else None
    problems += dim_step_problems(skeleton, regime, dims)
    regime = regime if not ps else None
    if regime is not None:
        problems += regime_params(regime, params, defaults, given, skeleton.id)
        skeleton = apply_regime(skeleton, regime)
        notes.append(regime_note(skeleton.id, regime))
    unroll = skeleton.loop.default_list()
    if unroll_raw is not None:
        try:
            unroll = parse_unroll(unroll_raw, skeleton.loop.candidates)
        except UnrollError as exc:
            where = f" in its {regime.name} regime" if regime is not None else ""
            problems.append(Problem(
                "bad-param-value",
                f"{skeleton.id}: unroll={quote(_spelled(unroll_raw))}: {exc}{where} (a factor or a list, largest first: "
                f"unroll={','.join(map(str, skeleton.loop.candidates))})",
            ))
    problems += _name_problems(req.name)
    target = req.target or DEFAULT_TARGET
    if target not in TARGETS:
        problems.append(Problem("unknown-target", f"unknown target {target!r}; targets: {', '.join(TARGETS)}" + did_you_mean(target, TARGETS)))
    if problems:
        raise PatternGenError(problems)
    return Coerced(skeleton, atom, notes, params, defaults, stages, dims, platform, unroll, target, stage_defaults)


def dim_defaults(cat: Catalogue, skeleton: m.SkeletonCard, atom: Any, dims: Mapping[str, int]) -> tuple[dict[str, dict[str, float]], list[Problem]]:
    """Defaults that follow a dim (``rsqrt_default_of``) at these dims: the slot's under key ``""``,
    each fixed stage's under its name (a value the skeleton fixes is not a default)."""
    out: dict[str, dict[str, float]] = {}
    problems: list[Problem] = []

    def derive(where: str, specs: Mapping[str, m.ParamSpec], unset: Any) -> None:
        for name, spec in specs.items():
            dim = spec.rsqrt_default_of
            if dim is None or not unset(name):
                continue
            if dim not in dims:
                problems.append(Problem("undefined-name", f"{skeleton.id}: {where or 'the slot'} parameter {name!r} follows dim {dim!r}, which {skeleton.id} does not have; "
                                        f"dims: {', '.join(dims)}"))
                continue
            out.setdefault(where, {})[name] = 1.0 / math.sqrt(dims[dim])

    derive("", cat.slot_specs(skeleton, atom.id), lambda n: True)
    for item in skeleton.fixed_stages:
        derive(item.as_, cat.effective_params(item.use), lambda n, item=item: n not in item.params)
    return out, problems


_TILE_HELP = "--tile LABEL=RxC for a vec tile, or LABEL=m:AxB,k:CxD[xE],n:FxG for a cube tile"


def parse_tile(text: str) -> tuple[str, Any]:
    """``LABEL=8x4096`` -> ``(LABEL, [8, 4096])``; ``LABEL=m:32x32,k:128x256,n:128x256`` ->
    ``(LABEL, {"m": [32, 32], "k": [128, 256], "n": [128, 256]})``."""
    label, sep, spec = text.partition("=")
    label, spec = label.strip(), spec.strip().replace(" ", "")

    def bad(why: str) -> PatternGenError:
        return PatternGenError(Problem("bad-param-value", f"--tile {text[:80]!r}: {why}; {_TILE_HELP}"))

    def ints(part: str) -> list[int]:
        try:
            values = [parse_int(v) for v in part.split("x")]
        except ValueError:
            raise bad(f"{part!r} is not numbers joined by x") from None
        if not values or any(v <= 0 or v > MAX_DIM for v in values):
            raise bad(f"tile sizes must be between 1 and {MAX_DIM}")
        return values

    if not sep or not label or not spec:
        raise bad("expected LABEL=SHAPE")
    if ":" not in spec:
        return label, ints(spec)
    cube: dict[str, list[int]] = {}
    for part in spec.split(","):
        axis, _, values = part.partition(":")
        if axis not in ("m", "k", "n") or axis in cube:
            raise bad(f"axis {axis!r}: give each of m, k, n once")
        cube[axis] = ints(values)
    if set(cube) != {"m", "k", "n"}:
        raise bad("a cube tile needs m, k and n")
    if len(cube["m"]) != 2 or len(cube["n"]) != 2 or len(cube["k"]) not in (2, 3):
        raise bad("m and n take L0xL1, k takes L0xL1 or L0xL1AxL1B")
    return label, {"m": cube["m"], "k": cube["k"], "n": cube["n"]}
