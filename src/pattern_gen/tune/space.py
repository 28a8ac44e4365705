"""The tuning space of a request: the axes a designer would try by hand, from the plan's own data.

* ``unroll`` — every unroll list the skeleton's loop candidates make (each subset, largest first,
  1 appended as PyPTO does: 32 lists for SK-03's six candidates), unless the request fixes it.
* one axis per tile dimension of each stage: a vec stage's leading (row) extent, a cube stage's
  ``m``, ``k`` and ``n`` pairs, each halved and doubled from the fitted default (the search moves
  on from the new point, so four times is two steps). Hoisted stages (run once, before the loop)
  are no lever. Whether a value
  fits is the resolver's business (``--tile`` is checked, never shrunk): an alternative that does
  not fit is pruned there, with its reason.
* one axis per ``recommended`` or ``conditional`` option of the plan: the card's value or unset.
  ``must`` options are not tuned (the card says the kernel needs them).

A configuration is one choice per axis (index 0 = the card default), turned back into a
``Request`` so every candidate goes through exactly what ``pattern-gen new`` does.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

from ..plan.kernel_plan import KernelPlan, Request
from ..plan.unroll import chain_break, unroll_token

__all__ = ["Axis", "Config", "Space", "tuning_space", "unroll_lists"]

#: tile multipliers tried around a default: halving and doubling
_SCALES = (0.5, 2)
_TUNED_LEVELS = ("recommended", "conditional")


@dataclass(frozen=True)
class Axis:
    """One tunable choice. ``choices[0]`` is the card default (``None``: no override)."""

    name: str  #: ``unroll``, ``tile:LABEL:DIM`` or ``option:KEY``
    choices: tuple[Any, ...]
    labels: tuple[str, ...]  #: how each choice prints

    @property
    def kind(self) -> str:
        return self.name.split(":", 1)[0]


@dataclass(frozen=True)
class Config:
    """One choice index per axis of a space."""

    picks: tuple[int, ...]

    def with_pick(self, axis: int, choice: int) -> "Config":
        picks = list(self.picks)
        picks[axis] = choice
        return Config(tuple(picks))


@dataclass(frozen=True)
class Space:
    base: Request
    axes: tuple[Axis, ...]
    #: the default plan's fitted tiles by stage label (vec list or cube dict)
    default_tiles: dict[str, Any] = field(default_factory=dict)

    @property
    def default(self) -> Config:
        """The card defaults — except the unroll the request itself names (``--param unroll=``)."""
        return Config(tuple(0 for _ in self.axes))

    def size(self) -> int:
        n = 1
        for a in self.axes:
            n *= len(a.choices)
        return n

    def all_configs(self) -> Iterator[Config]:
        for picks in itertools.product(*(range(len(a.choices)) for a in self.axes)):
            yield Config(tuple(picks))

    def axis_index(self, name: str) -> int:
        return next(i for i, a in enumerate(self.axes) if a.name == name)

    def unroll(self, config: Config) -> tuple[int, ...]:
        """The configuration's unroll list (ending with 1)."""
        return tuple(self.axes[0].choices[config.picks[0]])

    def request(self, config: Config) -> Request:
        """The request of a configuration (the base request with its changes)."""
        params = dict(self.base.params)
        params["unroll"] = list(self.unroll(config))
        tiles: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else list(v)) for k, v in self.base.tiles.items()}
        options = dict(self.base.options)
        for axis, pick in zip(self.axes[1:], config.picks[1:]):
            value = axis.choices[pick]
            if pick == 0:
                continue
            if axis.kind == "tile":
                _, label, dim = axis.name.split(":", 2)
                tile = tiles.setdefault(label, _copy(self.default_tiles[label]))
                if dim == "rows":
                    tile[0] = value
                else:
                    tile[dim] = list(value)
            else:
                options[axis.name.split(":", 1)[1]] = value
        return replace(self.base, params=params, tiles=tiles, options=options, name=None)

    def changes(self, config: Config) -> list[str]:
        """What a configuration changes from the card defaults, one phrase per axis."""
        return [f"{_short(a.name)}={a.labels[p]}" for a, p in zip(self.axes, config.picks) if p != 0 or a.name == "unroll"]

    def describe(self, config: Config) -> str:
        return " ".join(self.changes(config))


def _copy(tile: Any) -> Any:
    return {k: list(v) for k, v in tile.items()} if isinstance(tile, dict) else list(tile)


def _short(name: str) -> str:
    kind, _, rest = name.partition(":")
    return rest.replace(":", ".") if kind == "tile" else ("-" + rest if kind == "option" else name)


def _scaled(values: Sequence[int], scale: float) -> list[int]:
    return [max(1, int(v * scale)) for v in values]


def _text(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, (list, tuple)):
        return "x".join(map(str, value))
    return json.dumps(value, sort_keys=True, separators=(",", ":")) if isinstance(value, dict) else str(value)


def unroll_lists(candidates: Sequence[int]) -> list[tuple[int, ...]]:
    """Every unroll list the card's candidates make: each subset of the factors above 1, largest
    first, with the 1 PyPTO appends (``[1]`` alone included) — the lists in candidate order."""
    factors = sorted({c for c in candidates if c > 1}, reverse=True)
    lists = [tuple(f for f, keep in zip(factors, mask) if keep) + (1,) for mask in itertools.product((1, 0), repeat=len(factors))]
    return [u for u in lists if chain_break(u) is None]  # PyPTO overruns T with the others


def tuning_space(plan: KernelPlan, candidates: Sequence[int], *, all_unrolls: bool = False) -> Space:
    """The space around ``plan`` (the card defaults for its request): unroll first, then tiles, then
    options. What the request sets itself stays fixed: an unroll given as ``--param unroll=``, the
    stages it gives a ``--tile`` for, the options it gives. The unroll axis holds every list the
    card's candidates make (``unroll_lists``); ``all_unrolls``: the plan's list and each candidate
    alone instead (the docs' curves compare the single factors with the chosen list)."""
    fixed_unroll = "unroll" in plan.request.params and not all_unrolls
    if fixed_unroll:
        others: list[tuple[int, ...]] = []
    elif all_unrolls:
        others = [(c, 1) if c > 1 else (1,) for c in candidates]
    else:
        others = unroll_lists(candidates)
    unrolls = list(dict.fromkeys([tuple(plan.unroll), *others]))
    axes = [Axis("unroll", tuple(unrolls), tuple(unroll_token(u) for u in unrolls))]
    tiles: dict[str, Any] = {}
    overridden = set(plan.request.tiles)
    for stage in plan.stages:  # the prologue runs once, outside the token loop: no lever there
        if stage.label in overridden:
            continue  # the user fixed it with --tile
        if stage.cube_tile is not None:
            tiles[stage.label] = {k: list(v) for k, v in stage.cube_tile.items()}
            for dim in ("m", "k", "n"):
                base = list(stage.cube_tile[dim])
                alts = [_scaled(base, s) for s in _SCALES]
                alts = [a for a in dict.fromkeys(map(tuple, alts)) if list(a) != base]
                if alts:
                    choices = (None, *alts)
                    axes.append(Axis(f"tile:{stage.label}:{dim}", choices, ("card", *(_text(a) for a in alts))))
        elif stage.vec_tile is not None:
            tiles[stage.label] = list(stage.vec_tile)
            rows = int(stage.vec_tile[0])
            alts = sorted({max(1, int(rows * s)) for s in _SCALES} - {rows})
            if alts and len(stage.vec_tile) > 1:
                axes.append(Axis(f"tile:{stage.label}:rows", (None, *alts), ("card", *map(str, alts))))
    for key in sorted(plan.option_levels):
        level = plan.option_levels[key]
        if not level.startswith(_TUNED_LEVELS):
            continue
        value = {**plan.runtime_options, **plan.pass_options, **plan.operation_options}.get(key)
        if value is None:
            continue
        axes.append(Axis(f"option:{key}", (value, None), (_text(value), "unset")))
    return Space(plan.request, tuple(axes), tiles)
