"""Cross-card checks of a loaded catalogue (``pattern-gen validate``).

Each check returns problems rather than raising, so one run reports everything:
dependencies exist and are declared, no cycles, predicates name real parameters and values,
constraint ids exist, option advice is valid PyPTO, skeleton slots are fillable, and — for every
parameter combination the guards allow, on every platform — the flow expands: names are defined
before use, dtypes are legal for each op, and the declared ``flow`` matches the stages built.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Iterator, Mapping

from ptosim.errors import OptionError
from ptosim.options import validate_pass_options, validate_runtime_options

from . import model as m
from .catalogue import Catalogue
from .errors import Problem, did_you_mean
from .flow import FlowError, Unavailable, expand_atom, expand_skeleton
from .predicates import AllOf, AnyOf, Match, Not, Predicate, same_value

__all__ = ["check_catalogue", "param_combinations", "skeleton_env"]


def param_combinations(specs: Mapping[str, m.ParamSpec], fixed: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every combination of the enumerable parameters (bool, enum, int with choices)."""
    fixed = dict(fixed or {})
    names, choices = [], []
    for name, spec in specs.items():
        if name in fixed:
            continue
        values = [True, False] if spec.type == "bool" else list(spec.choices or [])
        if values:
            # the default first: the first combination is the default one, and a problem is
            # reported with the combination closest to the defaults
            names.append(name)
            choices.append([spec.default] + [v for v in values if v != spec.default])
    defaults = {n: s.default for n, s in specs.items()}
    for combo in itertools.product(*choices):
        env = dict(defaults)
        env.update(fixed)
        env.update(zip(names, combo))
        yield env


def skeleton_env(card: m.SkeletonCard, atom: Any, slot_params: Mapping[str, Any], platform: str, unroll: int) -> dict[str, Any]:
    """The values skeleton predicates read: the slot's parameters (bare), atom, unroll, platform."""
    env = dict(slot_params)
    env.update({"atom": atom.id, "unroll": unroll, "platform": platform})
    return env


def _yaml_word(value: Any) -> str:
    """A value as a card spells it (``true``, not ``True``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


# --- predicates ------------------------------------------------------------------------------------


def _matches(pred: Predicate) -> Iterator[Match]:
    if isinstance(pred, Match):
        yield pred
    elif isinstance(pred, (AllOf, AnyOf)):
        for p in pred.parts:
            yield from _matches(p)
    elif isinstance(pred, Not):
        yield from _matches(pred.part)


def _walk_whens(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Predicate]]:
    """Every ``when`` predicate inside a card model, with its YAML path."""
    if isinstance(obj, m.Strict):
        for name, info in type(obj).model_fields.items():
            value = getattr(obj, name)
            key = info.alias or name
            if name == "when" and value is not None:
                yield path + ("when",), value
            else:
                yield from _walk_whens(value, path + (key,))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk_whens(v, path + (i,))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_whens(v, path + (k,))


def _predicate_problems(cat: Catalogue, card: Any, known: Mapping[str, m.ParamSpec | None]) -> list[Problem]:
    problems = []
    for path, pred in _walk_whens(card):
        for match in _matches(pred):
            if match.param not in known:
                problems.append(
                    Problem(
                        "bad-predicate",
                        f"predicate reads unknown parameter {match.param!r}" + did_you_mean(match.param, known),
                        **cat.where(card.id, path),
                    )
                )
                continue
            spec = known[match.param]
            if spec is None:
                continue
            valid = [True, False] if spec.type == "bool" else spec.choices
            for value in match.values:
                if valid is not None and not any(same_value(value, v) for v in valid):
                    problems.append(
                        Problem(
                            "bad-predicate",
                            f"predicate compares {match.param!r} with {value!r}; valid values: {', '.join(map(_yaml_word, valid))}"
                            + did_you_mean(_yaml_word(value), [_yaml_word(v) for v in valid]),
                            **cat.where(card.id, path),
                        )
                    )
    return problems


def _walk_param_refs(obj: Any, path: tuple[Any, ...] = (), field: str = "") -> Iterator[tuple[tuple[Any, ...], str, m.ParamRef]]:
    """Every ``{param: NAME}`` inside a card model: (YAML path, the field it sits in, the ref)."""
    if isinstance(obj, m.ParamRef):
        yield path, field, obj
    elif isinstance(obj, m.Strict):
        for name, info in type(obj).model_fields.items():
            key = info.alias or name
            yield from _walk_param_refs(getattr(obj, name), path + (key,), key)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _walk_param_refs(v, path + (i,), field)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk_param_refs(v, path + (k,), field)


_DTYPE_FIELDS = ("to", "out_dtype", "dtype")


def _values_of(spec: m.ParamSpec) -> str:
    if spec.type == "bool":
        return "true/false"
    if spec.choices:
        return ", ".join(map(_yaml_word, spec.choices))
    return f"any {spec.type}"


def _param_ref_problems(cat: Catalogue, card: Any, param_sets: Mapping[str, Mapping[str, m.ParamSpec]]) -> list[Problem]:
    """``{param: NAME}`` must name a parameter every expansion has (``param_sets``: the parameter
    tables the card is expanded with, by the atom that brings them), and a parameter used as a dtype
    must only have dtypes as values."""
    problems = []
    for path, field, ref in _walk_param_refs(card):
        where = cat.where(card.id, path)
        for owner, specs in param_sets.items():
            if ref.param not in specs:
                problems.append(
                    Problem(
                        "unknown-param",
                        f"{{param: {ref.param}}} names a parameter {owner} does not have; parameters: {', '.join(specs) or 'none'}"
                        + did_you_mean(ref.param, specs),
                        **where,
                    )
                )
                break
            spec = specs[ref.param]
            if field in _DTYPE_FIELDS and (spec.type != "enum" or not set(map(str, spec.choices or [])) <= set(m.DTYPES)):
                problems.append(
                    Problem(
                        "bad-param-value",
                        f"{{param: {ref.param}}} is used as a dtype, but {ref.param!r} takes {_values_of(spec)}",
                        **where,
                    )
                )
                break
    return problems


# --- individual checks ---------------------------------------------------------------------------------


def _check_references(cat: Catalogue, card: Any) -> list[Problem]:
    problems = []
    for i, dep in enumerate(card.depends_on):
        if dep not in cat.cards:
            problems.append(
                Problem("unknown-card", f"depends_on names unknown card {dep!r}" + did_you_mean(dep, cat.cards), **cat.where(card.id, ("depends_on", i)))
            )
    reported: set[str] = set()
    for callee, path in _call_sites(card):
        if callee in reported:
            continue
        if callee not in cat.cards:
            reported.add(callee)
            problems.append(Problem("unknown-card", f"calls unknown card {callee!r}" + did_you_mean(callee, cat.cards), **cat.where(card.id, path)))
        elif callee not in card.depends_on:
            reported.add(callee)
            problems.append(
                Problem("unknown-card", f"uses {callee} but does not list it in depends_on", **cat.where(card.id, path))
            )
    for i, cid in enumerate(card.constraints):
        if cid not in cat.constraints:
            problems.append(
                Problem(
                    "unknown-constraint",
                    f"unknown constraint {cid!r}" + did_you_mean(cid, cat.constraints),
                    **cat.where(card.id, ("constraints", i)),
                )
            )
    for i, up in enumerate(getattr(card, "upgrades", [])):
        if up.to not in cat.cards:
            problems.append(Problem("unknown-card", f"upgrade to unknown card {up.to!r}", **cat.where(card.id, ("upgrades", i, "to"))))
    return problems


def _call_sites(card: Any) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Every card a card calls, splices or names as its slot default, with the YAML path."""
    for group in ("prologue", "stages"):
        for i, item in enumerate(getattr(card, group, [])):
            if isinstance(item, m.UseItem):
                yield item.use, (group, i, "use")
            elif isinstance(item, m.Stage):
                for j, op in enumerate(item.ops):
                    if isinstance(op, m.CallOp):
                        yield op.call, (group, i, "ops", j, "call")
    if card.kind == "skeleton":
        for name, spec in card.slots.items():
            yield spec.default, ("slots", name, "default")


def _check_cycles(cat: Catalogue) -> list[Problem]:
    problems: list[Problem] = []
    state: dict[str, int] = {}

    def visit(cid: str, stack: list[str]) -> None:
        state[cid] = 1
        card = cat.cards[cid]
        for dep in dict.fromkeys(list(card.depends_on) + cat.calls_of(card)):
            if dep not in cat.cards:
                continue
            if state.get(dep) == 1:
                cycle = stack[stack.index(dep):] + [dep] if dep in stack else [cid, dep]
                path = ("depends_on", card.depends_on.index(dep)) if dep in card.depends_on else ("depends_on",)
                problems.append(Problem("dependency-cycle", f"dependency cycle: {' -> '.join(cycle)}", **cat.where(cid, path)))
            elif dep not in state:
                visit(dep, stack + [dep])
        state[cid] = 2

    for cid in sorted(cat.cards):
        if cid not in state:
            visit(cid, [cid])
    return problems


def _check_options(cat: Catalogue, card: Any) -> list[Problem]:
    problems = []
    perf = card.performance
    for group, validate in (("runtime_options", validate_runtime_options), ("pass_options", None)):
        for i, advice in enumerate(getattr(perf, group)):
            try:
                if validate is not None:
                    validate({advice.key: advice.value})
                else:
                    validate_pass_options({advice.key: advice.value}, source="jit")
            except OptionError as exc:
                field = "key" if getattr(exc, "code", None) == "unknown-option" else "value"
                problems.append(Problem("bad-option", f"{group}: {exc.message}", **cat.where(card.id, ("performance", group, i, field))))
    op_keys = ("combine_axis", "force_combine_axis")
    for i, advice in enumerate(perf.operation_options):
        path = ("performance", "operation_options", i)
        if advice.key not in op_keys:
            problems.append(
                Problem(
                    "bad-option",
                    f"operation_options: unknown key {advice.key!r}; valid keys: {', '.join(op_keys)}" + did_you_mean(advice.key, op_keys),
                    **cat.where(card.id, path + ("key",)),
                )
            )
        elif not isinstance(advice.value, bool):
            problems.append(
                Problem("bad-option", f"operation_options: {advice.key} takes true/false, got {advice.value!r}", **cat.where(card.id, path + ("value",)))
            )
    for i, advice in enumerate(list(perf.runtime_options) + list(perf.pass_options)):
        for p in advice.platforms or []:
            if p not in cat.platforms:
                problems.append(Problem("unknown-platform", f"advice names unknown platform {p!r}", **cat.where(card.id, ("performance",))))
    return problems


def _flow_units(stages: Iterable[Any]) -> list[str]:
    return [s.unit for s in stages if s.compute]


def _declared_units(flow: list[str]) -> list[str]:
    return [f[0] for f in flow]


def _flow_problem(cat: Catalogue, err: FlowError, context: str) -> Problem:
    where = cat.where(err.card, err.path)
    return Problem(err.code, f"{err.message} ({context})", **where)  # type: ignore[arg-type]


def _check_atom(cat: Catalogue, card: m.AtomCard) -> list[Problem]:
    specs = cat.effective_params(card.id)
    problems = _predicate_problems(cat, card, specs) + _param_ref_problems(cat, card, {card.id: specs})
    if problems:
        return problems
    seen: set[str] = set()
    available = False
    default_env = {n: s.default for n, s in specs.items()}
    for env in param_combinations(specs):
        for pname, profile in sorted(cat.platforms.items()):
            context = f"{card.id} with {_fmt_env(env, default_env)} on {pname}"
            try:
                exp = expand_atom(cat, card, env, profile)
            except Unavailable:
                continue
            except FlowError as err:
                problem = _flow_problem(cat, err, context)
                key = problem.where + problem.message.split(" (")[0]
                if key not in seen:
                    seen.add(key)
                    problems.append(problem)
                continue
            available = True
            if env == default_env and pname == "a2a3":
                built = _flow_units(exp.stages)
                if built != _declared_units(card.flow):
                    problems.append(
                        Problem(
                            "flow-mismatch",
                            f"flow {card.flow} does not match the stages built with default parameters: {built}",
                            **cat.where(card.id, ("flow",)),
                        )
                    )
        if len(problems) > 20:
            break
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


def _fmt_env(env: Mapping[str, Any], defaults: Mapping[str, Any]) -> str:
    changed = {k: v for k, v in env.items() if defaults.get(k) != v}
    return ", ".join(f"{k}={v}" for k, v in sorted(changed.items())) or "default parameters"


def _check_skeleton(cat: Catalogue, card: m.SkeletonCard, broken: set[str] | frozenset[str] = frozenset()) -> list[Problem]:
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
    known: dict[str, m.ParamSpec | None] = {"atom": None, "unroll": None, "platform": None}
    for atom in atoms:
        for name, spec in cat.effective_params(atom.id).items():
            prev = known.get(name)
            if prev is not None and prev.choices and spec.choices:
                merged = list(dict.fromkeys(list(prev.choices) + list(spec.choices)))
                spec = spec.model_copy(update={"choices": merged})
            known[name] = spec
    for key, value in card.slot_defaults.items():
        where = cat.where(card.id, ("slot_defaults", key))
        spec = known.get(key)
        if key not in known or key in ("atom", "unroll", "platform"):
            if card.id in cat.located:  # at the key, where the misspelling is
                where["line"], where["col"] = cat.located[card.id].key_where(("slot_defaults", key))
            names = sorted(k for k in known if k not in ("atom", "unroll", "platform"))
            problems.append(
                Problem("unknown-param", f"slot_defaults sets {key!r}, which no atom of the slot has; parameters: {', '.join(names)}" + did_you_mean(key, names), **where)
            )
        elif spec is not None:
            valid = [True, False] if spec.type == "bool" else spec.choices
            if valid is not None and not any(same_value(value, v) for v in valid):
                problems.append(
                    Problem("bad-param-value", f"slot_defaults sets {key}={value!r}; valid values: {', '.join(map(_yaml_word, valid))}" + did_you_mean(_yaml_word(value), [_yaml_word(v) for v in valid]), **where)
                )
    problems += _predicate_problems(cat, card, known)
    usable = [a for a in atoms if a.id not in broken]
    problems += _param_ref_problems(cat, card, {a.id: cat.effective_params(a.id) for a in usable})
    if problems:
        return problems
    seen: set[str] = set()
    unroll = card.loop.candidates[0]
    for atom in usable:
        specs = cat.effective_params(atom.id)
        defaults = {n: s.default for n, s in specs.items()}
        defaults.update({k: v for k, v in card.slot_defaults.items() if k in specs})
        for env in param_combinations(specs, None):
            params = {**defaults, **{k: v for k, v in env.items() if specs[k].type in ("bool", "enum", "int")}}
            if any(up.when.holds(params) for up in atom.upgrades):
                continue  # the resolver builds the upgraded card instead
            for pname, profile in sorted(cat.platforms.items()):
                senv = skeleton_env(card, atom, params, pname, unroll)
                context = f"{card.id} with {atom.id}, {_fmt_env(params, defaults)} on {pname}"
                try:
                    exp = expand_skeleton(cat, card, senv, atom, params, {}, profile)
                except Unavailable:
                    continue
                except FlowError as err:
                    problem = _flow_problem(cat, err, context)
                    key = problem.where + problem.message.split(" (")[0]
                    if key not in seen:
                        seen.add(key)
                        problems.append(problem)
                    continue
                if atom.id == slot.default and params == defaults and pname == "a2a3":
                    built = _flow_units(exp.stages)
                    if built != _declared_units(card.flow):
                        problems.append(
                            Problem(
                                "flow-mismatch",
                                f"flow {card.flow} does not match the stages built with {atom.id} and default parameters: {built}",
                                **cat.where(card.id, ("flow",)),
                            )
                        )
            if len(problems) > 20:
                return problems
    return problems


def _dependencies(cat: Catalogue, card_id: str) -> set[str]:
    """Every card ``card_id`` builds on, directly or not (cycles were ruled out before)."""
    seen: set[str] = set()
    todo = [card_id]
    while todo:
        card = cat.cards.get(todo.pop())
        if card is None:
            continue
        for dep in list(card.depends_on) + cat.calls_of(card):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def _dedupe(problems: Iterable[Problem]) -> list[Problem]:
    """One problem per place and message: the same broken op seen from several cards, parameter
    combinations and platforms is reported once (with the first context it was found in)."""
    out: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    for p in problems:
        key = (p.code, p.file, p.line, p.col, p.message.rsplit(" (", 1)[0] if p.message.endswith(")") else p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def check_catalogue(cat: Catalogue) -> list[Problem]:
    """All cross-card problems of a loaded catalogue (empty list = valid)."""
    problems: list[Problem] = []
    for card in cat.sorted_cards():
        problems += _check_references(cat, card)
        problems += _check_options(cat, card)
    problems += _check_cycles(cat)
    if problems:
        return _dedupe(problems)
    broken: set[str] = set()
    deps = {cid: _dependencies(cat, cid) for cid in cat.cards}
    # atoms before skeletons (a skeleton's slot takes any atom with the right tag), and a card
    # after every card it builds on (a card has more dependencies than each of its own)
    for card in sorted(cat.sorted_cards(), key=lambda c: (c.kind == "skeleton", len(deps[c.id]))):
        if deps[card.id] & broken:
            broken.add(card.id)  # its own flow is checked once the cards it builds on are fixed
            continue
        found = _check_atom(cat, card) if card.kind == "atom" else _check_skeleton(cat, card, broken)
        if found:
            broken.add(card.id)
        problems += found
    return _dedupe(problems)
