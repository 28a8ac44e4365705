"""The flow checks: expand every card for every parameter combination the guards allow, on every
platform, and report what breaks (names, dtypes, units) and whether the declared ``flow`` holds."""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, Mapping

from ptosim.platform import DEFAULT_PLATFORM

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..flow import (
    Expansion,
    FlowError,
    Unavailable,
    expand_atom,
    expand_skeleton,
    skeleton_env,
)
from ..flow.platform_view import PlatformView
from ..vocab.errors import Problem, did_you_mean
from .params import (
    param_combinations,
    param_ref_problems,
    predicate_problems,
    reads_param,
    value_problem,
)

__all__ = ["atom_problems", "skeleton_problems"]

#: False: expand every card on every platform (tests compare the two; see ``_Expansions.on_platforms``)
SHARE_ACROSS_PLATFORMS = True
#: a card stops being expanded once it has this many problems
_ENOUGH = 20
#: names skeleton predicates read besides the slot's parameters (``skeleton_env``)
_SKELETON_NAMES = ("atom", "unroll", "platform")


def _flow_problem(cat: Catalogue, err: FlowError, context: str) -> Problem:
    where = cat.where(err.card, err.path)
    return Problem(err.code, f"{err.message} ({context})", **where)  # type: ignore[arg-type]


class _Expansions:
    """Runs a card's expansions; a flow error is reported once per place and message, with the
    first context (parameters, platform) it was found in."""

    def __init__(self, cat: Catalogue) -> None:
        self.cat = cat
        self.problems: list[Problem] = []
        self._seen: set[str] = set()

    def run(self, context: str, expand: Callable[..., Expansion], *args: Any) -> Expansion | None:
        """``expand(*args)``, or None when the platform cannot build it or it has a flow error."""
        try:
            return expand(*args)
        except Unavailable:
            return None
        except FlowError as err:
            problem = _flow_problem(self.cat, err, context)
            key = problem.where + problem.message.split(" (")[0]
            if key not in self._seen:
                self._seen.add(key)
                self.problems.append(problem)
            return None

    def on_platforms(self, context: Callable[[str], str], expand: Callable[..., Expansion], *args: Any) -> Iterator[tuple[str, Expansion | None]]:
        """``expand(*args, platform)`` on every platform, with ``context(platform)``. A platform that
        answers every question an earlier expansion asked the same way gets that expansion's outcome
        (the same kernel, or the same error: already reported, with the first platform's context)."""
        done: list[tuple[PlatformView, Expansion | None]] = []
        for pname, profile in sorted(self.cat.platforms.items()):
            same = [out for view, out in done if SHARE_ACROSS_PLATFORMS and view.agrees(profile)]
            if same:
                yield pname, same[0]
                continue
            view = PlatformView(profile)
            outcome = self.run(context(pname), expand, *args, view)
            done.append((view, outcome))
            yield pname, outcome

    def check_flow(self, card: Any, exp: Expansion, built_with: str) -> None:
        """The units of the stages built must be the card's declared ``flow`` (numbers dropped)."""
        built = [s.unit for s in exp.stages if s.compute]
        if built != [f[0] for f in card.flow]:
            self.problems.append(
                Problem(
                    "flow-mismatch",
                    f"flow {card.flow} does not match the stages built with {built_with}: {built}",
                    **self.cat.where(card.id, ("flow",)),
                )
            )


def _fmt_env(env: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    changed = {k: v for k, v in env.items() if defaults.get(k) != v}
    return ", ".join(f"{k}={v}" for k, v in sorted(changed.items())) or "default parameters"


def atom_problems(cat: Catalogue, card: m.AtomCard) -> list[Problem]:
    specs = cat.effective_params(card.id)
    problems = predicate_problems(cat, card, specs) + param_ref_problems(cat, card, {card.id: specs})
    if problems:
        return problems
    runs = _Expansions(cat)
    available = False
    default_env = cat.param_defaults(card.id)
    for env in param_combinations(specs):
        context = functools.partial("{} with {} on {}".format, card.id, _fmt_env(env, default_env))
        for pname, exp in runs.on_platforms(context, expand_atom, cat, card, env):
            if exp is None:
                continue
            available = True
            if env == default_env and pname == DEFAULT_PLATFORM:
                runs.check_flow(card, exp, "default parameters")
        if len(runs.problems) > _ENOUGH:
            break
    problems = runs.problems
    # the other dtypes an input accepts, with everything else at its default
    for name, decl in card.inputs.items():
        dtypes = decl.dtype if isinstance(decl.dtype, list) else None
        for dt in (dtypes or [])[1:]:
            for pname, profile in sorted(cat.platforms.items()):
                try:
                    expand_atom(cat, card, default_env, profile, {name: dt})
                except (Unavailable, FlowError) as err:
                    if isinstance(err, FlowError) and err.code == "dtype-illegal":
                        problems.append(_flow_problem(cat, err, f"{card.id} with input {name} as {dt} on {pname}"))
    if not available and not problems:
        problems.append(Problem("dtype-illegal", f"{card.id} cannot be built on any platform", **cat.where(card.id, ("stages",))))
    return problems


def _slot_params_known(cat: Catalogue, atoms: list[Any], skeleton_params: Mapping[str, m.ParamSpec] | None = None) -> dict[str, m.ParamSpec | None]:
    """The names a skeleton's predicates may read: every slot atom's parameters (choices merged),
    and the ``skeleton_env`` names (any value)."""
    known: dict[str, m.ParamSpec | None] = {name: None for name in _SKELETON_NAMES}
    known.update(skeleton_params or {})
    for atom in atoms:
        for name, spec in cat.effective_params(atom.id).items():
            prev = known.get(name)
            if prev is not None and prev.choices and spec.choices:
                merged = list(dict.fromkeys(list(prev.choices) + list(spec.choices)))
                spec = spec.model_copy(update={"choices": merged})
            known[name] = spec
    return known


def _slot_default_problems(cat: Catalogue, card: m.SkeletonCard, known: Mapping[str, m.ParamSpec | None]) -> list[Problem]:
    """The skeleton's slot_defaults, and each regime's params and slot_defaults: slot parameters
    with valid values."""
    sets = [(("slot_defaults",), "slot_defaults", card.slot_defaults)]
    for i, r in enumerate(card.regimes):
        sets += [(("regimes", i, field), f"regime {r.name}'s {field}", getattr(r, field)) for field in ("params", "slot_defaults")]
    problems = []
    for path, what, values in sets:
        for key, value in values.items():
            where = cat.where(card.id, (*path, key))
            spec = known.get(key)
            if key not in known or key in _SKELETON_NAMES:
                if card.id in cat.located:  # at the key, where the misspelling is
                    where["line"], where["col"] = cat.located[card.id].key_where((*path, key))
                names = sorted(k for k in known if k not in _SKELETON_NAMES)
                problems.append(
                    Problem("unknown-param", f"{what} sets {key!r}, which no atom of the slot has; parameters: {', '.join(names)}" + did_you_mean(key, names), **where)
                )
            elif spec is not None:
                invalid = value_problem(spec, value)
                if invalid:
                    problems.append(Problem("bad-param-value", f"{what} sets {key}={value!r}{invalid}", **where))
    return problems


def _expand_skeleton_on(cat: Catalogue, card: m.SkeletonCard, atom: Any, params: Mapping[str, Any], unroll: int,
                        platform_free: bool, platform: PlatformView) -> Expansion:
    """``expand_skeleton`` on ``platform``. The skeleton's predicates may read the platform's name
    (``skeleton_env``): unless the card never does, the name is asked (so no other platform agrees)."""
    name = platform.profile.name if platform_free else platform.name
    return expand_skeleton(cat, card, skeleton_env(atom, params, name, unroll), atom, params, {}, platform)


def skeleton_problems(cat: Catalogue, card: m.SkeletonCard, broken: set[str] | frozenset[str] = frozenset()) -> list[Problem]:
    """``broken``: atoms with problems of their own, left out of the slot's expansions."""
    problems: list[Problem] = []
    slot_name, slot = next(iter(card.slots.items()))
    if slot.default not in cat.cards:
        return [Problem("unknown-card", f"slot {slot_name!r} default {slot.default!r} is not a card", **cat.where(card.id, ("slots", slot_name, "default")))]
    atoms = cat.slot_atoms(card)
    if cat.cards[slot.default] not in atoms:
        problems.append(
            Problem("slot-mismatch", f"slot default {slot.default} has none of the tags {slot.accepts}", **cat.where(card.id, ("slots", slot_name)))
        )
    for i, item in enumerate(card.stages):
        if isinstance(item, m.UseItem) and item.use in cat.cards and cat.cards[item.use].kind != "atom":
            problems.append(Problem("slot-mismatch", f"fixed stage {item.as_!r} uses {item.use}, which is not an atom", **cat.where(card.id, ("stages", i, "use"))))
    known = _slot_params_known(cat, atoms, card.params)
    problems += _slot_default_problems(cat, card, known)
    problems += predicate_problems(cat, card, known)
    usable = [a for a in atoms if a.id not in broken]
    problems += param_ref_problems(cat, card, {a.id: cat.slot_specs(card, a.id) for a in usable})
    if problems:
        return problems
    runs = _Expansions(cat)
    unroll = card.loop.default_list()[0]
    platform_free = not reads_param(card, "platform")
    for atom in usable:
        specs = cat.slot_specs(card, atom.id)
        defaults = cat.slot_param_defaults(card, atom.id)
        for env in param_combinations(specs, None):
            params = {**defaults, **{k: v for k, v in env.items() if specs[k].type in ("bool", "enum", "int")}}
            if any(up.when.holds(params) for up in atom.upgrades):
                continue  # the resolver builds the upgraded card instead
            context = functools.partial("{} with {}, {} on {}".format, card.id, atom.id, _fmt_env(params, defaults))
            for pname, exp in runs.on_platforms(context, _expand_skeleton_on, cat, card, atom, params, unroll, platform_free):
                if exp is not None and atom.id == slot.default and params == defaults and pname == DEFAULT_PLATFORM:
                    runs.check_flow(card, exp, f"{atom.id} and default parameters")
            if len(runs.problems) > _ENOUGH:
                return runs.problems
    return runs.problems
