"""The kernel plan: everything resolved, nothing left to decide, ready to render.

A ``KernelPlan`` is built by the resolver from a request and the catalogue, then handed to the
renderer and written as ``instance.json``. Its name is derived from it (``naming``), never typed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Mapping

from ..flow import CStage
from ..vocab.text import yaml_word
from .naming import instance_name

__all__ = ["Request", "TensorPlan", "StagePlan", "KernelPlan"]


@dataclass(frozen=True)
class Request:
    """What the user asked for (CLI flags or a manifest entry), before resolution."""

    skeleton: str
    atoms: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    #: ``SLOT.param=value`` settings for fixed stages, by stage name
    stage_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    dims: dict[str, int] = field(default_factory=dict)
    platform: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    #: the code-generation target (``vocab/targets``); None: the default
    target: str | None = None
    #: ``--tile`` overrides by stage label: ``[rows, cols]`` (vec) or ``{"m": [..], "k": [..], "n": [..]}``
    tiles: dict[str, Any] = field(default_factory=dict)

    def command(self) -> str:
        """The ``pattern-gen new`` command line that makes this request."""
        parts = [f"pattern-gen new --skeleton {self.skeleton}"]
        if self.atoms:
            parts.append(f"--atoms {','.join(self.atoms)}")
        for k, v in self.params.items():
            if k == "unroll" and isinstance(v, (list, tuple)):  # an unroll list is spelled 128,16,1
                parts.append(f"--param unroll={','.join(map(str, v))}")
                continue
            parts.append(f"--param {k}={yaml_word(v)}")
        for stage, ps in self.stage_params.items():
            for k, v in ps.items():
                parts.append(f"--param {stage}.{k}={yaml_word(v)}")
        for k, v in self.dims.items():
            parts.append(f"--dim {k}={v}")
        if self.platform:
            parts.append(f"--platform {self.platform}")
        for k, v in self.options.items():
            parts.append(f"--option '{k}={'' if v is None else yaml_word(v)}'")
        for label, tile in self.tiles.items():
            text = ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in tile.items()) if isinstance(tile, dict) else "x".join(map(str, tile))
            parts.append(f"--tile {label}={text}")
        if self.target:
            parts.append(f"--target {self.target}")
        if self.name:
            parts.append(f"--name {self.name}")
        return " ".join(parts)


@dataclass(frozen=True)
class TensorPlan:
    name: str
    shape: list[str]  #: symbolic, e.g. ["T", "K"]
    default_shape: list[int]  #: with T = the plan's example token count
    dtype: str
    role: str
    token_axis: int | None  #: index of the T axis, if any
    #: (atol, rtol, ratio) overrides from the card, with the card's reason
    tolerance: dict[str, Any] | None = None
    #: an index input: the cache output whose rows it selects (the host checks its values)
    index_into: str | None = None
    #: a block table: the paged cache's tokens per block
    block_size: int | None = None


@dataclass(frozen=True)
class StagePlan:
    label: str
    unit: str
    card: str
    title: str
    hoist: bool
    vec_tile: list[int] | None
    cube_tile: dict[str, list[int]] | None
    fit_notes: list[str]
    stage: CStage  #: the typed ops (not serialised as such)
    #: the cube tile is set with ``enable_split_k=True`` (the card's advice)
    split_k: bool = False

    def tile_text(self) -> str:
        """``vec [8, 4096]`` or ``cube m=[32, 32] k=[…] n=[…]``; empty for a stage without a tile."""
        if self.vec_tile is not None:
            return f"vec {self.vec_tile}"
        if self.cube_tile is not None:
            split = ", split-K" if self.split_k else ""
            return f"cube m={self.cube_tile['m']} k={self.cube_tile['k']} n={self.cube_tile['n']}{split}"
        return ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "unit": self.unit, "card": self.card, "hoist": self.hoist}
        if self.vec_tile is not None:
            out["vec_tile"] = list(self.vec_tile)
        if self.cube_tile is not None:
            out["cube_tile"] = {k: list(v) for k, v in self.cube_tile.items()}
            if self.split_k:
                out["split_k"] = True
        if self.stage.after_loop:
            out["after_loop"] = True
        if self.fit_notes:
            out["fit"] = list(self.fit_notes)
        out["ops"] = [op.op for op in self.stage.ops]
        return out


@dataclass(frozen=True)
class KernelPlan:
    #: the catalogue's naming table (``naming.yaml``): the name is derived from it and the plan
    naming: Mapping[str, Any] = field(repr=False, compare=False)
    skeleton: str
    skeleton_title: str
    atoms_requested: list[str]
    atom: str  #: the atom that fills the slot after composition and upgrades
    slot: str
    params: dict[str, Any]  #: the slot's parameters, resolved
    param_defaults: dict[str, Any]
    stage_params: dict[str, dict[str, Any]]
    dims: dict[str, int]
    dim_defaults: dict[str, int]
    platform: str
    #: the code-generation target the files are rendered for
    target: str
    #: the token loop's unroll_list as PyPTO runs it: largest first, ending with 1
    unroll: tuple[int, ...]
    loop: dict[str, Any]
    inputs: list[TensorPlan]
    outputs: list[TensorPlan]
    runtime_options: dict[str, Any]
    pass_options: dict[str, Any]
    operation_options: dict[str, Any]
    cache_policy: dict[str, str]
    prologue: list[StagePlan]
    stages: list[StagePlan]
    notes: list[str]
    left_out: list[str]
    cards_used: list[str]
    request: Request
    example_T: int
    #: the platform profile's ``cost.cycles_per_us``: PyPTO's SIM timestamps are cycles at this rate
    cycles_per_us: float
    option_levels: dict[str, str] = field(default_factory=dict)

    @cached_property
    def name(self) -> str:
        """The instance name: the request's ``--name``, else derived from the plan (``naming``)."""
        return self.request.name or instance_name(
            self.naming, self.skeleton, self.atom, self.params, self.param_defaults, self.unroll,
            self.platform, self.dims, self.dim_defaults, self.stage_params, self.target, self.request.tiles,
        )

    @property
    def main_factor(self) -> int:
        """The largest factor of the unroll list: the path whose tiles are the largest."""
        return self.unroll[0]

    @property
    def all_stages(self) -> list[StagePlan]:
        return self.prologue + self.stages

    @property
    def plan_notes(self) -> list[str]:
        """The notes about the whole plan: a stage's tile-fitting notes (``LABEL: …``) are shown
        with the stage instead."""
        stage_notes = tuple(s.label + ":" for s in self.all_stages)
        return [n for n in self.notes if not n.startswith(stage_notes)]

    def option_rows(self) -> list[tuple[str, Any, str]]:
        """(option, value, level) of every runtime, pass and operation option, then one row
        ``NAME.set_cache_policy`` per cache policy."""
        rows = [
            (k, v, self.option_levels.get(k, ""))
            for group in (self.runtime_options, self.pass_options, self.operation_options)
            for k, v in group.items()
        ]
        rows += [(f"{name}.set_cache_policy", policy, "") for name, policy in self.cache_policy.items()]
        return rows

    def to_json(self, version: str) -> dict[str, Any]:
        """The ``instance.json`` content (without the content hash)."""

        def tensors(items: list[TensorPlan]) -> list[dict[str, Any]]:
            return [{k: v for k, v in asdict(t).items() if not (k in ("index_into", "block_size") and v is None)} for t in items]

        return {
            "name": self.name,
            "skeleton": self.skeleton,
            "atoms": {"requested": self.atoms_requested, "resolved": self.atom, "slot": self.slot},
            "params": dict(self.params),
            "stage_params": {k: dict(v) for k, v in self.stage_params.items()},
            "dims": dict(self.dims),
            "unroll": list(self.unroll),
            "platform": self.platform,
            "target": self.target,
            "loop": dict(self.loop),
            "inputs": tensors(self.inputs),
            "outputs": tensors(self.outputs),
            "options": {
                "runtime_options": _jsonable(self.runtime_options),
                "pass_options": _jsonable(self.pass_options),
                "operation_options": dict(self.operation_options),
                "cache_policy": dict(self.cache_policy),
                "levels": dict(self.option_levels),
            },
            "stages": [s.to_json() for s in self.all_stages],
            "notes": list(self.notes),
            "left_out": list(self.left_out),
            "cards": list(self.cards_used),
            "command": self.request.command(),
            "request": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self.request).items()},
            "generator_version": version,
        }


def _jsonable(options: dict[str, Any]) -> dict[str, Any]:
    """Option dicts with int keys become JSON objects with string keys."""
    out: dict[str, Any] = {}
    for k, v in options.items():
        out[k] = {str(kk): vv for kk, vv in v.items()} if isinstance(v, dict) else v
    return out
