"""Checks of what cards name: dependencies, called cards, constraints, upgrade targets, cycles."""

from __future__ import annotations

from typing import Any, Iterator

from ..cards import model as m
from ..catalogue.catalogue import Catalogue
from ..vocab.errors import Problem, did_you_mean

__all__ = ["reference_problems", "cycle_problems", "dependencies"]


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


def reference_problems(cat: Catalogue, card: Any) -> list[Problem]:
    """Every card and constraint a card names exists, and every card it uses is in ``depends_on``."""
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
    for name, decl in card.inputs.items():
        target = decl.index_into
        if decl.role in ("block_table", "lengths"):
            problems += _paged_problems(cat, card, name, decl)
            continue
        out = card.outputs.get(target) if target is not None else None
        if target is not None and (out is None or out.role != "cache" or decl.role != "index"):
            caches = [n for n, d in card.outputs.items() if d.role == "cache"]
            problems.append(Problem(
                "card-schema",
                f"inputs.{name}: index_into: {target} must name an output with role: cache (this card's: "
                f"{', '.join(caches) or 'none'}), and {name} needs role: index",
                **cat.where(card.id, ("inputs", name, "index_into")),
            ))
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


def _paged_problems(cat: Catalogue, card: Any, name: str, decl: Any) -> list[Problem]:
    """A block table names the 2-D cache it addresses and its block size; a lengths input names
    its block table (the host checks one against the other)."""
    if decl.role == "block_table":
        cache = card.inputs.get(decl.index_into) or card.outputs.get(decl.index_into)
        if cache is None or len(cache.shape) != 2 or decl.block_size is None:
            return [Problem("card-schema", f"inputs.{name}: a block_table needs index_into: <its 2-D paged cache> and block_size: <tokens per block>",
                            **cat.where(card.id, ("inputs", name, "role")))]
        return []
    table = card.inputs.get(decl.index_into) if decl.index_into else None
    if table is None or table.role != "block_table":
        tables = [n for n, d in card.inputs.items() if d.role == "block_table"]
        return [Problem("card-schema", f"inputs.{name}: lengths needs index_into: <its block_table input> (this card's: {', '.join(tables) or 'none'})",
                        **cat.where(card.id, ("inputs", name, "role")))]
    return []


def cycle_problems(cat: Catalogue) -> list[Problem]:
    """One problem per dependency cycle (through ``depends_on``, calls and splices)."""
    problems: list[Problem] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

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


def dependencies(cat: Catalogue, card_id: str) -> set[str]:
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
